"""Settings that lower safety: held back until the person confirms them (docs/trust-model.md).

An agent runs as the person's user and can write ``config.toml`` as well as the person can,
so a value there that lowers safety (``config.SAFETY_LOWERING``: a permission mode that
skips prompts, permission notifications off) is not in force until the person confirms it
through ``config.confirm``, a method only the person may call (``access.py``).  The
confirmation is a ``settings-confirmed`` event in the log, which only the daemon writes; a
confirmation whose value the file no longer asks for lapses (the daemon records that too:
it only ever raises safety), so asking for it again needs the person again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from ...config import (
    Config,
    Unconfirmed,
    in_force,
    load_config,
    lowering_values,
    still_confirmed,
    with_lowering_from,
)
from ...core.events import SettingsConfirmed
from ...ipc.server import Connection
from ..clock import Clock
from ..errors import Refused
from ..params import NoParameters, Parameters
from ..service import Service

log = logging.getLogger(__name__)


class ConfirmParams(Parameters, frozen=True, kw_only=True):
    """``config.confirm``: the settings the person was shown (key -> value), if any."""

    settings: dict[str, Any] | None = None


class HeldSetting(TypedDict):
    """A value ``config.toml`` asks for that waits for the person (values as TOML)."""

    key: str
    value: str
    standing: str
    why: str


class UnconfirmedView(TypedDict):
    """``config.unconfirmed``: what lowers safety, what the person confirmed, what waits."""

    asked: dict[str, str]
    confirmed: dict[str, str]
    unconfirmed: list[HeldSetting]
    messages: list[str]


class Confirmed(TypedDict):
    """``config.confirm``: the settings confirmed (key -> value as TOML)."""

    confirmed: dict[str, str]


class SafetySettings:
    """What of ``config.toml`` that lowers safety is in force, and the person's confirmation."""

    def __init__(self, service: Service, path: Path, clock: Clock) -> None:
        self._service = service
        self._path = path
        self._clock = clock
        self.unconfirmed: list[Unconfirmed] = []
        self.config = Config()
        # Told the settings in force after a confirmation (the daemon's runners read them).
        self._listeners: list[Callable[[Config], None]] = []

    def listen(self, fn: Callable[[Config], None]) -> None:
        """Call ``fn`` with the settings in force after each confirmation."""
        self._listeners.append(fn)

    async def at_start(self, asked: Config) -> Config:
        """The settings to run with, from the file's: unconfirmed lowering values held back."""
        confirmed = self._service.current().confirmed_settings
        kept = still_confirmed(asked, confirmed)
        if kept != confirmed:
            lapsed = ", ".join(sorted(confirmed.keys() - kept.keys())) or "changed values"
            log.info("config: the confirmation of %s lapsed (config.toml changed)", lapsed)
            await self._service.commit([SettingsConfirmed(at=self._clock.now(), settings=kept)])
        config, self.unconfirmed = in_force(asked, kept)
        self.config = config
        for held in self.unconfirmed:
            log.warning("config: %s", held.message)
        return config

    @property
    def messages(self) -> list[str]:
        """Why each held value is not in force, in words (status, the tray)."""
        return [held.message for held in self.unconfirmed]

    async def api_unconfirmed(self, _conn: Connection, _params: NoParameters) -> UnconfirmedView:
        """What ``config.toml`` asks for that lowers safety, and what of it waits."""
        loaded = load_config(self._path)
        confirmed = self._service.current().confirmed_settings
        _, held = in_force(loaded.config, confirmed)
        return {
            "asked": lowering_values(loaded.config),
            "confirmed": dict(confirmed),
            "unconfirmed": [
                {"key": h.key, "value": h.value, "standing": h.standing, "why": h.why} for h in held
            ],
            "messages": [h.message for h in held],
        }

    async def api_confirm(self, _conn: Connection, params: ConfirmParams) -> Confirmed:
        """The person confirms what ``config.toml`` asks for now (``settings``: what they were
        shown, key -> value as TOML; refused when the file changed since)."""
        loaded = load_config(self._path)
        asked = lowering_values(loaded.config)
        seen = params.settings
        if seen is not None and seen != asked:
            now = ", ".join(f"{k} = {v}" for k, v in asked.items()) or "nothing"
            raise Refused(
                f"config.toml changed since you looked: it now asks for {now}; nothing was "
                "confirmed, run `volee config confirm` again"
            )
        await self._service.commit([SettingsConfirmed(at=self._clock.now(), settings=asked)])
        log.warning("config: the person confirmed %s", asked or "no setting that lowers safety")
        self.unconfirmed = []
        self.config = with_lowering_from(self.config, loaded.config)
        for listener in self._listeners:
            listener(self.config)
        return {"confirmed": asked}

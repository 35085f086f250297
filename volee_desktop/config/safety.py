"""Settings that lower safety (``SAFETY_LOWERING``): in force only once the person confirmed
them (``in_force``); until then the default stands."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from .model import Config
from .rules import _toml_repr


@dataclass(frozen=True)
class Lowering:
    """A setting whose value can lower safety: such a value is in force only once the person
    confirmed it (``volee config confirm``, or the app); until then the default stands."""

    key: str
    lowers: Callable[[object], bool]
    why: str


#: Every setting that lowers safety, in one place (docs/trust-model.md lists the same).  An
#: agent can write ``config.toml`` as well as the person can, so a value here that lowers
#: safety waits for the person's confirmation, which only the daemon records (in its log).
SAFETY_LOWERING: tuple[Lowering, ...] = (
    Lowering(
        "claude.permission_mode",
        lambda value: value == "bypassPermissions",
        "Claude Code agents would run every tool without asking",
    ),
    Lowering(
        "notifications.needs_input",
        lambda value: value is False,
        "no notification would say that an agent asks for permission",
    ),
    Lowering(
        "agents.desktop",
        lambda value: bool(value),
        "agents of these harnesses would get your display and session bus",
    ),
)


@dataclass(frozen=True)
class Unconfirmed:
    """A value of ``config.toml`` that lowers safety and waits for the person."""

    key: str
    value: str  # as TOML, e.g. '"bypassPermissions"'
    standing: str  # the value in force meanwhile, as TOML
    why: str

    @property
    def message(self) -> str:
        return (
            f"config.toml asks for {self.key} = {self.value}: not in force until you confirm: "
            f"`volee config confirm` ({self.why}; {self.key} = {self.standing} meanwhile)"
        )


def _value(config: Config, key: str) -> object:
    section, _, leaf = key.partition(".")
    return getattr(getattr(config, section), leaf)


def _with(config: Config, key: str, value: object) -> Config:
    section, _, leaf = key.partition(".")
    table = replace(getattr(config, section), **{leaf: value})
    return replace(config, **{section: table})


def lowering_values(config: Config) -> dict[str, str]:
    """The settings of ``config`` that lower safety, each with its value as TOML."""
    return {
        rule.key: _toml_repr(_value(config, rule.key))
        for rule in SAFETY_LOWERING
        if rule.lowers(_value(config, rule.key))
    }


def in_force(config: Config, confirmed: Mapping[str, str]) -> tuple[Config, list[Unconfirmed]]:
    """The settings to use: each value that lowers safety and that the person did not confirm
    (``confirmed``: key -> value as TOML) is held back at its default; and what was held."""
    held: list[Unconfirmed] = []
    for key, value in lowering_values(config).items():
        if confirmed.get(key) == value:
            continue
        standing = _value(Config(), key)
        config = _with(config, key, standing)
        rule = next(r for r in SAFETY_LOWERING if r.key == key)
        held.append(Unconfirmed(key, value, _toml_repr(standing), rule.why))
    return config, held


def still_confirmed(config: Config, confirmed: Mapping[str, str]) -> dict[str, str]:
    """The confirmations that still match ``config``: one whose value the file no longer asks
    for lapses, so asking for it again needs the person again."""
    asked = lowering_values(config)
    return {key: value for key, value in confirmed.items() if asked.get(key) == value}


def with_lowering_from(config: Config, source: Config) -> Config:
    """``config`` with ``source``'s value of each setting that can lower safety."""
    for rule in SAFETY_LOWERING:
        config = _with(config, rule.key, _value(source, rule.key))
    return config

"""``agents.harnesses``: which harnesses can start here, with the program a launch would run,
its version and the permission modes it accepts, or why not (the words a spawn would be
refused with).  Probes run in a thread; one not done within ``PROBE_WAIT`` goes on in the
background and the answer says ``probing``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

from ...config import Config
from ...harness.base import Error as HarnessError
from ...harness.base import ModeCheck, Profile
from ...harness.choices import permission_modes
from ...harness.versions import Prober, show
from .results import HarnessChoice

#: How long ``agents.harnesses`` waits for a harness's probe before saying ``probing``.
PROBE_WAIT = 0.25


class HarnessProbes:
    """Answers ``agents.harnesses`` with the agents runner's profiles, binaries and prober."""

    def __init__(
        self,
        profiles: Mapping[str, Profile],
        profile: Callable[[str], Profile],
        config: Callable[[], Config],
        binaries: Mapping[str, str],
        prober: Prober,
    ) -> None:
        self.profiles = profiles
        self.profile = profile  # the profile of a harness name, refusing an unknown one
        self.config = config  # the settings in force (they change when the person confirms)
        self.binaries = binaries
        self.prober = prober
        self._probes: dict[str, asyncio.Future[HarnessChoice]] = {}

    async def choices(self, only: str | None = None) -> list[HarnessChoice]:
        """``agents.harnesses``: each harness (or ``only`` that one) with the program a launch
        would run, its version and the permission modes it accepts, or why it cannot start
        (the words a spawn would be refused with)."""

        def one(harness: str) -> HarnessChoice:
            profile = self.profiles.get(harness)
            default = self.config().claude.permission_mode if harness == "claude" else None
            out: HarnessChoice = {
                "harness": harness,
                "path": None,
                "version": None,
                "problem": None,
                "modes": list(permission_modes(harness)),
                "default_mode": default,
            }
            if profile is None or profile.min_version is None:
                return out
            binary = self.binaries.get(harness) or harness
            try:
                found = self.prober.require(harness, binary, profile.min_version, os.environ)
            except HarnessError as exc:
                out["problem"] = str(exc)
                return out
            out["path"] = found.path
            out["version"] = show(found.version) if found.version else None
            if isinstance(profile, ModeCheck):
                help_text = self.prober.help(found.path, os.environ)
                out["modes"] = list(permission_modes(harness, help_text))
            return out

        names = [h for h in ("claude", "codex", "pi", "generic") if h in self.profiles]
        if only is not None:
            names = [self.profile(only).name]
        # A probe not done within PROBE_WAIT goes on in the background and the answer says
        # ``probing`` (pi answers --version in seconds): a caller's connection, which serves
        # its requests in order, never waits on it.
        for h in names:
            if h not in self._probes:
                self._probes[h] = asyncio.ensure_future(asyncio.to_thread(one, h))
        await asyncio.wait([self._probes[h] for h in names], timeout=PROBE_WAIT)
        out: list[HarnessChoice] = []
        for h in names:
            task = self._probes[h]
            if not task.done():
                out.append({"harness": h, "probing": True})
                continue
            del self._probes[h]  # the next question probes again (cached by binary file)
            out.append(task.result())
        return out

    def close(self) -> None:
        for probe in self._probes.values():
            probe.cancel()

"""A fake session lister for discovery's loop on a fake clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from tests.fakes.clock import FakeClock
from volee_desktop.core.reconcile import Listing
from volee_desktop.daemon.discovery.listers import Observation


@dataclass
class FakeLister:
    """Answers each listing from ``script`` (the last one repeats); can hold a listing open."""

    clock: FakeClock
    script: list[Listing | Exception] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)
    gate: asyncio.Event | None = None

    async def __call__(self, now: float) -> Observation:
        self.calls.append(now)
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if self.gate is not None:
            await self.gate.wait()
        if isinstance(item, Exception):
            raise item
        return Observation(item, set())

"""A clock that stands still until told to move (after trio's ``MockClock``).

It implements ``volee_desktop.daemon.clock.Clock``: ``advance(seconds)`` moves time on,
runs the timers (``call_at``) that fall due, in order, and ends the waits (``wait``) whose
timeout is over.  Negative tests ("nothing happens before the delay") advance it instead of
sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

#: Due times within this of ``now`` count as due (sums of float delays are not exact).
EPSILON = 1e-9


@dataclass(order=True)
class FakeTimer:
    when: float
    seq: int
    fn: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class _Sleeper:
    due: float
    future: asyncio.Future[None]
    serial: int


class FakeClock:
    """Time moves only with ``advance``; timers and waits fall due as it does."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start
        self._timers: list[FakeTimer] = []
        self._seq = itertools.count()
        self._sleepers: list[_Sleeper] = []
        self.serial = 0  # how many waits have begun

    # --- the Clock protocol ---------------------------------------------------------------

    def now(self) -> float:
        return self.t

    def call_at(self, when: float, fn: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(when, next(self._seq), fn)
        heapq.heappush(self._timers, timer)
        return timer

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        self.serial += 1
        sleeper = _Sleeper(
            self.t + timeout, asyncio.get_running_loop().create_future(), self.serial
        )
        self._sleepers.append(sleeper)
        waiter = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({sleeper.future, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            self._sleepers.remove(sleeper)

    # --- for the tests ----------------------------------------------------------------------

    def pending(self) -> list[float]:
        """Due times of the timers not yet run nor cancelled."""
        return sorted(t.when for t in self._timers if not t.cancelled)

    def sleeping(self, after: int = 0) -> list[float]:
        """How long each pending wait (begun after wait number ``after``) still has to go."""
        return [s.due - self.t for s in self._sleepers if s.serial > after]

    def advance(self, seconds: float) -> int:
        """Move time on, running every timer due by then; returns how many timers ran."""
        target = self.t + seconds
        ran = 0
        while self._timers and self._timers[0].when <= target + EPSILON:
            timer = heapq.heappop(self._timers)
            self.t = max(self.t, timer.when)
            if not timer.cancelled:
                timer.fn()
                ran += 1
        self.t = target
        for sleeper in self._sleepers:
            if sleeper.due <= self.t + EPSILON and not sleeper.future.done():
                sleeper.future.set_result(None)
        return ran

"""The daemon's one clock: wall-clock time, timers, and waiting with a timeout.

Recovery (restart timers), discovery (its cadence), the hosts runner and hook intake
(event times) read time through a ``Clock``, so tests run them on a fake one
(``tests/fakes/clock.py``) that moves only when told.  A leaf: it imports nothing of volee.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A scheduled call that can be called off."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Wall-clock time and timers (the real loop, or a fake one in tests)."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        """Call ``fn`` once ``now()`` reaches ``when``."""
        ...

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        """Return when ``event`` is set or ``timeout`` seconds have passed."""
        ...


class LoopClock:
    """``time.time`` and the running asyncio loop's timers."""

    def now(self) -> float:
        return time.time()

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.time()), fn)

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        # Not ``wait_for``: on Python 3.11 a cancel that lands as the event is set is swallowed
        # (it returns the result), and a loop around this wait then never ends at close.
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            pass

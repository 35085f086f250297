"""Hand the allocator's free memory back to the system a while after work (issue 22's soak).

The soak bench (``bench/soak.py``) showed the daemon's and the app's RSS growing by about
16 MiB an hour of churn while what Python holds (tracemalloc's total) and what glibc's main
arena has in use stayed flat: the heap grows at each burst (agents started, a log replayed,
a list filled, a daemon's sixty hosts taken back) and glibc keeps the pages freed in its
middle, for ``free`` only gives back the top of the heap.  ``malloc_trim(0)`` gives back
every free page of every arena (``madvise``), which nothing else does.

It costs milliseconds to a few hundred (it walks every free chunk), so it runs in a worker
thread, at most once per ``AFTER`` seconds and only after something happened (``poke``):
at rest nothing wakes up.  Where the C library is not glibc (macOS, musl) it does nothing.

The daemon's trimmer also runs a full garbage collection first (``collect``), on the loop's
thread.  The soak of 2026-12-03 showed the daemon's bytes in use growing by about 11 MiB an
hour of churn (pymalloc's own count; the same with ``PYTHONMALLOC=malloc``), and a full
collection every 30 s kept them flat: each 30 s of work left about a thousand objects in
reference cycles, and Python collects its oldest generation only when the objects that
reached it since the last time exceed a quarter of all the long-lived ones: in a daemon
holding a registry, rarely (the soak's run of 22 minutes saw one).  Most were the agents'
screens (pyte's, freed at once since: ``daemon/agents/emulator.py``); what is left is
asyncio's own (every socket transport keeps a bound method of itself, so each connection
closed waits for a collection: 10-30 a 30 s sample of the soak) and a few closures of
``json``'s pure-Python encoder.  The collection's time is logged at debug; at rest there is
none.  In the app the embedded daemon's trimmer collects on the GUI thread, the loop's,
as ``app/gcguard.py`` requires; the app's own trimmer does not collect.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: Seconds from the first poke after a trim to the next trim.
AFTER = 60.0

#: glibc's ``mallopt`` parameter for the most arenas (``M_ARENA_MAX`` in ``malloc.h``).
M_ARENA_MAX = -8


def one_arena() -> bool:
    """Make every thread allocate from glibc's main arena; False where it cannot.

    glibc gives each new thread that allocates its own arena (up to eight per core), a heap of
    64 MiB reserved whose freed middle it keeps.  The daemon's worker threads (``to_thread``:
    git runs, screen reads, fsync, trims) come and go, and each arena they touched kept its
    pages: the soak showed the daemon's RSS growing with the count of arenas while the main
    arena and Python's own total stayed flat.  One arena costs a lock shared by threads that
    allocate little; the loop's thread does nearly all the work.  Called before any thread
    starts (arenas made already stay); ``MALLOC_ARENA_MAX`` in the environment does the same
    for a process started by someone else.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, 1))


@functools.cache
def _glibc_trim() -> Callable[[], Any] | None:
    """glibc's ``malloc_trim``, or None where there is none: looked up among the symbols the
    process has loaded already (no ``ctypes.util.find_library``, which runs ``ldconfig``),
    once, on the first trim (in its worker thread, never at start-up)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


def malloc_trim() -> bool:
    """Give the free pages of every arena back; False where the C library cannot."""
    trim = _glibc_trim()
    if trim is None:
        return False
    began = time.perf_counter()
    trim()
    log.debug("malloc_trim took %.0f ms", 1000 * (time.perf_counter() - began))
    return True


class Trimmer:
    """A trim ``after`` seconds after the first ``poke`` since the last one (the daemon pokes
    at each committed event, the app at each one it receives)."""

    def __init__(
        self,
        after: float = AFTER,
        trim: Callable[[], bool] = malloc_trim,
        collect: Callable[[], int] | None = None,
    ) -> None:
        self.after = after
        self.trim = trim
        #: A full garbage collection run on the loop before each trim (the daemon's gc.collect).
        self.collect = collect
        self.trims = 0
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[bool] | None = None

    def poke(self) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a widget test): nothing runs, nothing to trim
            return
        self._timer = loop.call_later(self.after, self._run)

    def _run(self) -> None:
        self._timer = None
        if self.collect is not None:
            # On the loop's thread: what it frees may have finalizers that touch the loop (and
            # in the app, Qt objects must be freed on the GUI thread: app/gcguard.py).
            began = time.perf_counter()
            found = self.collect()
            log.debug(
                "gc found %d unreachable in %.0f ms", found, 1000 * (time.perf_counter() - began)
            )
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(asyncio.to_thread(self.trim))
            self.trims += 1

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

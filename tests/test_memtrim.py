"""The allocator's free pages given back after work, never at rest (volee_desktop/memtrim.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from tests.polling import until
from volee_desktop.memtrim import Trimmer


async def test_pokes_make_one_trim_after_the_delay_and_none_at_rest() -> None:
    trims: list[int] = []
    trimmer = Trimmer(after=0.05, trim=lambda: trims.append(1) is None)
    for _ in range(20):  # a burst of events
        trimmer.poke()
    await until(lambda: trimmer.trims == 1 and len(trims) == 1, what="the trim after the burst")
    await asyncio.sleep(0.2)  # at rest: no poke, so no trim (a negative needs time to pass)
    assert len(trims) == 1
    trimmer.poke()
    await until(lambda: len(trims) == 2, what="the trim after the next event")
    trimmer.poke()
    trimmer.close()
    await asyncio.sleep(0.2)
    assert len(trims) == 2  # closed: the scheduled trim is called off


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("collect", [True, False], ids=["the daemon's", "without collect"])
async def test_cyclic_garbage_left_by_work_is_collected_with_the_trim(collect: bool) -> None:
    import gc
    import weakref

    trimmer = Trimmer(after=0.05, trim=lambda: True, collect=gc.collect if collect else None)
    gc.disable()  # only the trimmer collects: Python's own thresholds rarely reach the oldest
    try:
        cycle = _Cycle()
        alive = weakref.ref(cycle)
        del cycle
        assert alive() is not None  # garbage, held by its cycle
        trimmer.poke()
        await until(lambda: trimmer.trims == 1, what="the trim after the event")
        assert (alive() is None) is collect
    finally:
        gc.enable()
        trimmer.close()


def test_a_poke_without_a_running_loop_does_nothing() -> None:
    trimmer = Trimmer(after=0.0, trim=lambda: True)
    trimmer.poke()
    assert trimmer.trims == 0


#: Run alone (mallopt's settings would stay for every later test of the process).
HEAP = """
import ctypes, sys
from volee_desktop import memtrim

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

if memtrim._glibc_trim() is None:
    sys.exit(3)
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: free alone gives nothing back
libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: every block on the heap
blocks = [libc.malloc(64 * 1024) for _ in range(800)]  # 50 MiB
for b in blocks:
    ctypes.memset(b, 1, 64 * 1024)
for b in blocks[:-1]:  # the last one pins the top: the rest is free in the middle
    libc.free(b)
before = rss()
assert memtrim.malloc_trim()
print(before - rss())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_malloc_trim_gives_back_the_pages_freed_in_the_middle_of_the_heap() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HEAP], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode == 3:
        pytest.skip("not glibc")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 30 * 1024 * 1024

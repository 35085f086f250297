"""One malloc arena for the daemon and the app (issue 22's soak: RSS grew with the arenas)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Threads that allocate buffers too big for pymalloc (malloc's own), then the arenas glibc
# reports on stderr (malloc_stats: one "Arena N:" block each).
PROGRAM = """
import ctypes, sys, threading
from volee_desktop.memtrim import one_arena
if sys.argv[1] == "one":
    assert one_arena()
def work():
    kept = [bytes(4096) for _ in range(200)]
    del kept
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
ctypes.CDLL(None).malloc_stats()
"""


def arenas(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True
    )
    return sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))


def glibc() -> bool:
    import ctypes

    try:
        ctypes.CDLL(None).malloc_stats  # noqa: B018
    except AttributeError:
        return False
    return True


@pytest.mark.skipif(not glibc(), reason="glibc's arenas only")
def test_threads_of_the_daemon_and_app_allocate_from_one_arena() -> None:
    assert arenas("default") > 1  # what the soak saw: each thread its own arena
    assert arenas("one") == 1


def test_the_daemon_and_the_app_ask_for_one_arena_before_any_thread() -> None:
    from pathlib import Path

    import volee_desktop

    root = Path(volee_desktop.__file__).parent
    daemon = (root / "cli" / "daemon.py").read_text()
    app = (root / "app" / "main.py").read_text()
    assert daemon.index("one_arena()") < daemon.index("asyncio.run(run_foreground")
    assert app.index("one_arena()") < app.index("_run(argv")

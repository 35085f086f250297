"""Cyclic garbage freed on the GUI thread only (volee_desktop/app/gcguard.py)."""

from __future__ import annotations

import gc
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.app.gcguard import GuiCollector, collect_due

ROOT = Path(__file__).resolve().parents[2]

# A widget kept alive only by a cycle, with a running timer, becomes garbage; a worker
# thread then allocates enough to run the collector. Then the GUI thread spins for a while.
SCRIPT = r"""
import gc, os, sys, threading, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget
from volee_desktop.app.gcguard import GuiCollector

app = QApplication([])
guard = GuiCollector(interval_ms=50)
if sys.argv[1] == "guarded":
    guard.start()
gc.collect()

class Row(QWidget):
    def __init__(self):
        super().__init__()
        self.me = self  # the cycle: only the collector frees it
        self.tick = QTimer(self)
        self.tick.setInterval(20)
        self.tick.start()

Row()
kept = []
worker = threading.Thread(target=lambda: kept.extend([[] for _ in range(20_000)]))
worker.start()
worker.join()
end = time.monotonic() + 0.5
while time.monotonic() < end:
    app.processEvents()
    time.sleep(0.005)
print("alive", flush=True)
"""


def no_core_dump() -> None:
    """The unguarded run crashes on purpose: no core file of it."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(how: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, how],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=no_core_dump,
    )


def test_a_widget_freed_by_a_worker_threads_collection_is_freed_on_the_gui_thread_instead() -> None:
    guarded = run("guarded")
    assert guarded.returncode == 0, guarded.stderr
    assert "alive" in guarded.stdout
    assert "another thread" not in guarded.stderr
    # The same script with Python's automatic collection: the worker thread frees the
    # widget, Qt leaves its timer registered, and the GUI thread crashes on it.
    unguarded = run("automatic")
    assert "Timers cannot be stopped from another thread" in unguarded.stderr
    assert unguarded.returncode != 0


@pytest.fixture
def small_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(50, 3, 3)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def test_the_gui_threads_collection_follows_the_collectors_own_thresholds(
    small_thresholds: None,
) -> None:
    gc.disable()
    gc.collect()
    assert collect_due() is None  # nothing allocated since: nothing due
    kept: list[Any] = [[] for _ in range(60)]  # past generation 0's threshold of 50
    assert collect_due() == 0
    for _ in range(4):  # four young collections: past generation 1's threshold of 3
        gc.collect(0)
    assert collect_due() == 1
    for _ in range(4):
        gc.collect(1)
    assert collect_due() == 2
    assert kept


def test_the_guard_turns_automatic_collection_off_and_gives_it_back(qapp: Any) -> None:
    gc.enable()
    guard = GuiCollector()
    guard.start()
    assert not gc.isenabled()
    assert guard.timer.isActive()
    guard.stop()
    assert gc.isenabled()
    assert not guard.timer.isActive()

"""Starting the daemon while another one is still letting go of its lock (e.g. stopping)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from volee_desktop.cli import common
from volee_desktop.daemon.errors import AlreadyRunning
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs
from volee_desktop.pidlock import PidLock


# The daemon is detached on purpose: its Popen object is dropped while it runs.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_start_that_met_a_stopping_daemon_starts_one_once_the_lock_is_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(common, "START_TIMEOUT", 15.0)
    folders = dirs()
    # Plays a daemon that is closing: it still holds the lock but no longer serves.
    lock = PidLock(folders.daemon_lock, AlreadyRunning).acquire()
    outcome: list[BaseException | None] = []

    def start() -> None:
        try:
            common.start_daemon(folders)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=start)
    thread.start()
    log_path: Path = folders.logs / "daemon.log"
    deadline = time.monotonic() + 10
    while "already running" not in (log_path.read_text() if log_path.exists() else ""):
        assert time.monotonic() < deadline, "the started daemon never met the held lock"
        time.sleep(0.02)
    lock.release()  # the old daemon is gone now
    try:
        thread.join(12)  # without the fix the start waits for a daemon nobody starts
        assert outcome == [None]
    finally:
        thread.join()
        with Client.connect(folders.socket, timeout=5.0) as client:
            pid = client.call("daemon.status")["pid"]
            client.call("daemon.stop")
        os.waitpid(pid, 0)  # the daemon is this process's child here: reap it

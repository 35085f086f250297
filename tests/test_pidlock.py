"""The one lock of the daemon and the tray app: exclusive, naming its holder, never stale."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from volee_desktop.app.errors import AlreadyRunning as AppAlreadyRunning
from volee_desktop.daemon.errors import AlreadyRunning as DaemonAlreadyRunning
from volee_desktop.pidlock import PidLock, holder, is_held


def test_the_holder_writes_its_pid_and_a_second_taker_is_told_who(tmp_path: Path) -> None:
    path = tmp_path / "state" / "daemon.lock"
    with PidLock(path, DaemonAlreadyRunning):
        assert holder(path) == os.getpid()
        assert is_held(path)
        with pytest.raises(DaemonAlreadyRunning, match=f"pid {os.getpid()}"):
            PidLock(path, DaemonAlreadyRunning).acquire()
        with pytest.raises(AppAlreadyRunning, match="already runs for this user"):
            PidLock(path, AppAlreadyRunning).acquire()
    assert not is_held(path)
    assert holder(path) is None  # released: the file stays, empty
    PidLock(path, DaemonAlreadyRunning).acquire().release()


def test_a_lock_whose_holder_died_is_free(tmp_path: Path) -> None:
    path = tmp_path / "app.lock"
    code = (
        "import sys, os; from pathlib import Path; from volee_desktop.pidlock import PidLock; "
        "PidLock(Path(sys.argv[1])).acquire(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=30)
    assert holder(path) is not None  # it died holding it: its pid is still written
    assert not is_held(path)
    lock = PidLock(path, AppAlreadyRunning).acquire()
    assert holder(path) == os.getpid()
    lock.release()


def test_nothing_is_held_where_there_is_no_file(tmp_path: Path) -> None:
    assert not is_held(tmp_path / "nothing.lock")
    assert holder(tmp_path / "nothing.lock") is None


def test_a_lock_held_in_passing_by_no_named_process_is_waited_for(tmp_path: Path) -> None:
    """``is_held`` looking (or a holder's child not yet exec'd) must not refuse a start."""
    import fcntl
    import threading

    path = tmp_path / "daemon.lock"
    path.write_text("")
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    let_go = threading.Timer(0.1, os.close, (fd,))
    let_go.start()
    try:
        PidLock(path, DaemonAlreadyRunning).acquire().release()
    finally:
        let_go.join()

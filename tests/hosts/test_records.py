"""Host records: reading, atomic writing, and liveness without psutil."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from volee_desktop.hosts import recordio
from volee_desktop.hosts.errors import RecordError
from volee_desktop.hosts.records import (
    ExitStatus,
    HostRecord,
    host_alive,
    program_alive,
    read_record,
    write_record_atomic,
)


def _record(pid: int, create_time: float | None) -> HostRecord:
    return HostRecord(
        agent="ag_1",
        host_pid=pid,
        host_create_time=create_time,
        program_pid=pid,
        program_create_time=create_time,
        boot_time=recordio.boot_time(),
        started_at=time.time(),
        argv=("claude",),
        cwd="/tmp",
    )


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_start_and_boot_time_match_psutil() -> None:
    assert recordio.start_time(os.getpid()) == pytest.approx(
        psutil.Process().create_time(), abs=0.01
    )
    assert recordio.boot_time() == pytest.approx(psutil.boot_time(), abs=1.0)


def test_a_live_process_with_its_start_time_is_alive() -> None:
    record = _record(os.getpid(), recordio.start_time(os.getpid()))
    assert host_alive(record)
    assert program_alive(record)


def test_a_dead_pid_is_not_alive() -> None:
    record = _record(_dead_pid(), time.time())
    assert not host_alive(record)
    assert not program_alive(record)


def test_a_reused_pid_is_not_alive() -> None:
    started = recordio.start_time(os.getpid())
    assert started is not None
    record = _record(os.getpid(), started - 100)
    assert not host_alive(record)
    assert not program_alive(record)


def test_a_pid_from_another_boot_is_not_alive() -> None:
    record = replace(_record(os.getpid(), None), boot_time=12345.0)
    assert not host_alive(record)


def test_a_zombie_is_not_alive() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # Not reaped yet: the pid exists, but as a zombie.
        deadline = time.monotonic() + 10
        while not recordio.is_zombie(proc.pid):
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        assert not host_alive(_record(proc.pid, recordio.start_time(proc.pid)))
    finally:
        proc.wait()


def test_a_program_that_ended_is_not_alive_whatever_its_pid() -> None:
    record = replace(
        _record(os.getpid(), recordio.start_time(os.getpid())),
        exit=ExitStatus(code=0, signal=None, signal_name=None, ended_at=time.time()),
    )
    assert not program_alive(record)
    assert host_alive(record)


def test_record_round_trips(tmp_path: Path) -> None:
    record = replace(
        _record(123, 1.5),
        exit=ExitStatus(code=None, signal=9, signal_name="SIGKILL", ended_at=2.0),
    )
    path = tmp_path / "ag_1.json"
    write_record_atomic(path, record)
    assert read_record(path) == record
    assert not list(tmp_path.glob("*.tmp*"))


def test_exit_status_success_needs_code_zero_and_no_signal() -> None:
    assert ExitStatus(0, None, None, 1.0).success
    assert not ExitStatus(1, None, None, 1.0).success
    assert not ExitStatus(None, 15, "SIGTERM", 1.0).success


def test_exit_fields_decode_wait_statuses() -> None:
    code = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    _, status = os.waitpid(code.pid, 0)
    code.returncode = 7  # reaped here; tell Popen so it does not wait again
    assert recordio.exit_fields(status)["code"] == 7

    killed = subprocess.Popen([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    _, status = os.waitpid(killed.pid, 0)
    killed.returncode = -9
    fields = recordio.exit_fields(status)
    assert (fields["code"], fields["signal"], fields["signal_name"]) == (None, 9, "SIGKILL")


def test_a_death_by_an_unnamed_signal_is_named_and_never_an_exit() -> None:
    # Real-time signals have no name in Python's signal.Signals: read as an ordinary exit, a
    # program killed by SIGRTMIN+6 was "stopped · exited", with no restart and no failure.
    number = signal.SIGRTMIN + 6
    killed = subprocess.Popen([sys.executable, "-c", f"import os; os.kill(os.getpid(), {number})"])
    _, status = os.waitpid(killed.pid, 0)
    killed.returncode = -number
    fields = recordio.exit_fields(status)
    assert (fields["code"], fields["signal"], fields["signal_name"]) == (
        None,
        number,
        "SIGRTMIN+6",
    )
    # A record written before (signal without a name) still says it was killed.
    old = ExitStatus(code=None, signal=number, signal_name=None, ended_at=1.0)
    assert old.killed_by == "SIGRTMIN+6"
    assert not old.success
    assert ExitStatus(code=None, signal=77, signal_name=None, ended_at=1.0).killed_by in (
        "signal 77",
        f"SIGRTMIN+{77 - signal.SIGRTMIN}",
    )
    assert ExitStatus(code=3, signal=None, signal_name=None, ended_at=1.0).killed_by is None


def test_a_missing_record_is_none(tmp_path: Path) -> None:
    assert read_record(tmp_path / "nope.json") is None


@pytest.mark.parametrize("text", ["not json", "[]", '{"agent": "x"}', '{"v": 99}'])
def test_an_unreadable_record_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ag_1.json"
    path.write_text(text)
    with pytest.raises(RecordError, match=f"host record {path} is not a valid record"):
        read_record(path)


def test_signals_are_named_as_python_names_them() -> None:
    # recordio reads the names from _signal (signal imports enum: a MiB of every host).
    for number in range(1, 129):
        try:
            expected = signal.Signals(number).name
        except ValueError:
            continue
        assert recordio.signal_words(number) == expected
    assert recordio.signal_words(signal.SIGABRT) == "SIGABRT"  # not its alias SIGIOT
    assert recordio.signal_words(signal.SIGCHLD) == "SIGCHLD"

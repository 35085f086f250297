"""The host process: detached, records the program's life, serves attach/send/resize/screen/stop."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import Rig, host_argv

from tests.polling import wait_until
from volee_desktop.hosts import wire
from volee_desktop.hosts.errors import HostError
from volee_desktop.hosts.records import host_alive, program_alive, read_record

PROMPT = "❯ ".encode()


def _ppid(pid: int) -> int:
    return psutil.Process(pid).ppid()


def test_host_is_detached_in_its_own_session(rig: Rig) -> None:
    record = rig.launch_fake()

    assert os.getsid(record.host_pid) != os.getsid(0)
    # Reparented away from the launcher (init or a subreaper), so it outlives it.
    assert _ppid(record.host_pid) != os.getpid()
    # The program leads its own session, with the PTY as its terminal.
    assert record.program_pid is not None
    assert os.getsid(record.program_pid) == record.program_pid
    assert psutil.Process(record.program_pid).terminal() is not None


def test_the_spawning_lock_is_held_until_the_new_hosts_command_line_is_there(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Popen returns once exec has closed the close-on-exec fds, before the kernel has set up
    # the new image's arguments: for that moment /proc/PID/cmdline is empty. The daemon's search
    # for a gone host's leftovers (which waits for SPAWNING) then could not tell the new host
    # from a leftover and killed it: a resume right after a stop failed with "the host ...
    # exited before starting" (seen with the native host in loaded runs). Here the first looks
    # find no command line, as in that moment: the lock stays held until it is there.
    from volee_desktop.hosts import launcher, recordio

    real = recordio.command_line
    looks: list[bool] = []

    def just_exec_d(pid: int) -> list[str] | None:
        looks.append(launcher.SPAWNING.locked())
        return [] if len(looks) <= 3 else real(pid)

    monkeypatch.setattr(recordio, "command_line", just_exec_d)
    record = rig.launch(["sleep", "30"])

    assert looks, "the launcher let go of SPAWNING without looking at the new host"
    assert all(looks), "looked after letting go of SPAWNING"
    assert host_alive(record)


def test_record_holds_pids_times_and_argv(rig: Rig) -> None:
    before = time.time()
    argv = rig.fake_argv()
    record = rig.launch(argv, agent="ag_rec")

    on_disk = read_record(rig.record_path("ag_rec"))
    assert on_disk == record
    assert record.agent == "ag_rec"
    assert record.program_pid is not None
    # Same numbers psutil gives, so the daemon can compare them.
    assert record.program_create_time == pytest.approx(
        psutil.Process(record.program_pid).create_time(), abs=0.01
    )
    assert record.host_create_time == pytest.approx(
        psutil.Process(record.host_pid).create_time(), abs=0.01
    )
    assert record.boot_time == pytest.approx(psutil.boot_time(), abs=1.0)
    assert before <= record.started_at <= time.time()
    assert list(record.argv) == argv
    assert record.cwd == str(rig.project)
    assert record.exit is None
    assert record.error is None
    assert host_alive(record)
    assert program_alive(record)


def test_socket_is_private(rig: Rig) -> None:
    rig.launch_fake()
    sock = rig.socket_path("ag_1")
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(rig.record_path("ag_1").stat().st_mode) == 0o600


def test_exit_code_is_recorded(rig: Rig) -> None:
    rig.launch_fake("CRASH")

    record = rig.wait_exit()

    assert record.exit is not None
    assert record.exit.code == 3
    assert record.exit.signal is None
    assert not record.exit.success
    assert not record.exit.stop_requested


def test_clean_exit_is_success_and_fires_session_end(rig: Rig) -> None:
    rig.launch_fake("/exit")

    record = rig.wait_exit()

    assert record.exit is not None
    assert record.exit.success
    assert record.exit.code == 0
    rig.wait_hook("SessionEnd", reason="prompt_input_exit")


def test_death_by_sigkill_is_a_signal_never_success(rig: Rig) -> None:
    rig.launch_fake("KILLME")

    record = rig.wait_exit()

    assert record.exit is not None
    assert record.exit.code is None
    assert record.exit.signal == signal.SIGKILL
    assert record.exit.signal_name == "SIGKILL"
    assert not record.exit.success
    assert not any(h["hook_event_name"] == "SessionEnd" for h in rig.hooks())


def test_host_exits_after_its_linger(rig: Rig) -> None:
    record = rig.launch_fake("/exit", linger=0.2)
    rig.wait_exit()
    wait_until(lambda: not host_alive(record), 5, "the host to exit after its linger")
    assert not rig.socket_path("ag_1").exists()


def test_host_survives_its_launcher_exiting(rig: Rig) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys
        from volee_desktop.hosts.launcher import launch_host
        rec = launch_host("ag_x", {rig.fake_argv()!r}, {str(rig.project)!r},
                          {rig.env()!r}, {str(rig.record_path("ag_x"))!r},
                          {str(rig.socket_path("ag_x"))!r})
        import os
        print(os.getpid())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    launcher_pid = int(done.stdout.strip())
    record = read_record(rig.record_path("ag_x"))
    assert record is not None
    rig.launched.append(record)

    assert _ppid(record.host_pid) != launcher_pid
    assert host_alive(record)
    assert program_alive(record)
    status = rig.client("ag_x").status()
    assert status.running
    assert status.record.host_pid == record.host_pid


def test_two_attached_clients_both_see_output_after_a_replay(rig: Rig) -> None:
    rig.launch_fake("hello")
    client = rig.client()
    first = rig.stream()
    assert b"ok: hello" in first.read_until(PROMPT, 10)
    second = rig.stream()
    # The late client is first replayed what was printed before it came.
    assert b"ok: hello" in second.read_until(PROMPT, 10)
    assert client.status().attached == 2

    client.send_text("both of you")

    for stream in (first, second):
        assert b"ok: both of you" in stream.read_until(b"ok: both of you", 10)
    first.close()
    second.close()


def test_send_is_one_paste_then_enter(rig: Rig) -> None:
    rig.launch_fake()
    client = rig.client()
    stream = rig.stream()
    stream.read_until(PROMPT, 10)
    assert client.status().bracketed_paste

    client.send_text("first line\nsecond line")

    out = stream.read_until(b"second line\r\n", 10)
    assert b'PROMPT 1 paste=1: "first line\\nsecond line"' in out
    rig.wait_hook("UserPromptSubmit", prompt="first line\nsecond line")


def test_send_without_bracketed_paste_is_raw_text(rig: Rig) -> None:
    rig.launch(["sh", "-c", 'echo ready; read line; echo "GOT:$line"; sleep 5'])
    client = rig.client()
    stream = rig.stream()
    stream.read_until(b"ready", 10)
    assert not client.status().bracketed_paste

    client.send_text("plain words")

    stream.read_until(b"GOT:plain words\r\n", 10)


def test_keys_typed_into_an_attached_stream_reach_the_program(rig: Rig) -> None:
    rig.launch_fake()
    stream = rig.stream()
    stream.read_until(PROMPT, 10)

    stream.write(b"typed\r")

    stream.read_until(b'PROMPT 1 paste=0: "typed"', 10)


def test_resize_reaches_the_program(rig: Rig) -> None:
    rig.launch_fake()
    client = rig.client()
    stream = rig.stream()
    stream.read_until(PROMPT, 10)
    client.send_text("SIZE")
    stream.read_until(b"SIZE rows=40 cols=120", 10)

    client.resize(30, 90)

    stream.read_until(b"WINCH rows=30 cols=90", 10)
    client.send_text("SIZE")
    stream.read_until(b"SIZE rows=30 cols=90", 10)
    assert client.status().rows == 30


def test_screen_is_recent_plain_text(rig: Rig) -> None:
    rig.launch_fake("hello")
    client = rig.client()
    rig.stream().read_until(PROMPT, 10)
    client.send_text("again")
    wait_until(lambda: client.screen(50).endswith("ok: again\n❯"), 10, "the reply and a new prompt")

    text = client.screen(3)

    assert "\x1b" not in text
    assert len(text.splitlines()) == 3
    assert text.splitlines()[-1].startswith("❯")
    assert "ok: hello" not in text


def test_stop_ends_the_program_and_records_it(rig: Rig) -> None:
    record = rig.launch_fake()
    client = rig.client()
    rig.stream().read_until(PROMPT, 10)
    rig.wait_hook("SessionStart", source="startup")

    status = client.stop(grace=5)

    assert status.signal_name == "SIGTERM"
    assert status.stop_requested
    assert not status.success
    rig.wait_hook("SessionEnd", reason="other")
    on_disk = rig.wait_exit()
    assert on_disk.exit == status
    wait_until(lambda: not host_alive(record), 5, "the host to exit")


def test_stop_kills_a_program_that_ignores_sigterm(rig: Rig) -> None:
    rig.launch(["sh", "-c", "trap '' TERM; echo ready; while :; do read x; done"])
    client = rig.client()
    rig.stream().read_until(b"ready", 10)

    status = client.stop(grace=0.3)

    assert status.signal_name == "SIGKILL"
    assert status.stop_requested


def test_host_sigterm_hangs_up_the_program_and_says_so(rig: Rig) -> None:
    record = rig.launch_fake()
    rig.stream().read_until(PROMPT, 10)

    os.kill(record.host_pid, signal.SIGTERM)

    on_disk = rig.wait_exit()
    assert on_disk.exit is not None
    assert on_disk.exit.host_signal == "SIGTERM"
    assert on_disk.exit.signal_name == "SIGHUP"
    rig.wait_hook("SessionEnd", reason="other")
    wait_until(lambda: not host_alive(record), 5, "the host to exit")


def test_attach_after_the_end_replays_and_reports_the_exit(rig: Rig) -> None:
    rig.launch_fake("CRASH", linger=5)
    rig.wait_exit()

    stream = rig.stream()
    out = stream.read_until(b"crashing", 5)
    wait_until(lambda: stream.read(0.05) or stream.exit, 5, "the exit event")

    assert b"crashing" in out
    assert stream.exit is not None
    assert stream.exit.code == 3
    rig.client().close()


def test_send_after_the_end_is_refused(rig: Rig) -> None:
    rig.launch_fake("/exit", linger=5)
    rig.wait_exit()

    with pytest.raises(HostError, match="the program has ended"):
        rig.client().send_text("anyone?")


def test_a_signal_that_is_none_is_a_bad_request_not_a_host_crash(rig: Rig) -> None:
    rig.launch_fake(linger=5)
    client = rig.client()

    for bad in ("NOPE", "Signals", "getsignal", "SIGTERMX", 9999, -1):
        with pytest.raises(
            HostError, match=re.escape(f"bad signal request: unknown signal {bad!r}")
        ):
            client.request("signal", signal=bad)

    assert client.status().running
    assert client.signal("SIGWINCH")
    assert client.signal(signal.SIGWINCH)


def test_a_number_that_is_none_is_a_bad_request_saying_so(rig: Rig) -> None:
    rig.launch_fake(linger=5)
    client = rig.client()

    for op, params in (
        ("resize", {"rows": [24], "cols": 80}),
        ("resize", {"rows": 24, "cols": None}),
        ("screen", {"lines": {"n": 5}}),
        ("stop", {"grace": [1]}),
        ("signal", {"signal": None}),
    ):
        (key, value), *_ = ((k, v) for k, v in params.items() if not isinstance(v, int))
        said = f"bad {op} request: {key!r} must be a number, not {type(value).__name__}"
        with pytest.raises(HostError, match=re.escape(said)):
            client.request(op, **params)

    assert client.status().running
    assert client.request("screen", lines="3")["ok"]  # a numeral, as int() reads it


def test_missing_binary_is_a_clear_error(rig: Rig) -> None:
    with pytest.raises(HostError, match=r"cannot start 'no-such-agent-bin': not found on PATH"):
        rig.launch(["no-such-agent-bin", "--x"])


def test_missing_cwd_is_a_clear_error(rig: Rig) -> None:
    gone = rig.root / "gone"
    with pytest.raises(HostError, match=f"directory {gone} does not exist"):
        rig.launch(rig.fake_argv(), cwd=gone)


def test_a_live_host_is_never_started_twice(rig: Rig) -> None:
    rig.launch_fake()
    with pytest.raises(HostError, match="a host already runs for agent ag_1"):
        rig.launch_fake()


@pytest.mark.parametrize(
    ("argv", "cwd_name", "message"),
    [
        (["no-such-agent-bin"], "proj", "cannot start 'no-such-agent-bin': not found on PATH"),
        (["true"], "missing", "directory {root}/missing does not exist"),
    ],
)
def test_the_host_itself_records_a_failed_start(
    rig: Rig, host_kind: str, argv: list[str], cwd_name: str, message: str
) -> None:
    rig.project  # noqa: B018 - creates the folder
    record_path = rig.record_path("ag_f")
    record_path.parent.mkdir(parents=True)
    read_fd, write_fd = os.pipe()
    cmd = [
        *host_argv(host_kind),
        "--agent",
        "ag_f",
        "--record",
        str(record_path),
        "--socket",
        str(rig.socket_path("ag_f")),
        "--cwd",
        str(rig.root / cwd_name),
        "--ready-fd",
        str(write_fd),
        "--foreground",
        "--",
        *argv,
    ]
    done = subprocess.run(cmd, pass_fds=(write_fd,), timeout=30, check=False)
    os.close(write_fd)
    with os.fdopen(read_fd) as ready:
        report = json.loads(ready.readline())

    expected = message.format(root=rig.root)
    assert done.returncode == 1
    assert report["ok"] is False
    assert report["error"] == expected
    record = read_record(record_path)
    assert record is not None
    assert record.error == expected
    assert record.program_pid is None
    assert not record.running


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER")
def test_a_process_that_daemonizes_away_from_the_program_is_adopted_by_its_host(
    rig: Rig,
) -> None:
    # setsid and a double fork, as a daemon does: without a subreaper it would go to init, and
    # the daemon could no longer tell which agent it belongs to (docs/trust-model.md).
    pidfile = rig.root / "orphan.pid"
    script = f"setsid sh -c '( sh -c \"echo \\$\\$ > {pidfile}; exec sleep 30\" ) &'; sleep 60"
    record = rig.launch(["sh", "-c", script])
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 10, "the orphan's pid")
    orphan = int(pidfile.read_text())
    assert os.getsid(orphan) != record.program_pid  # it left the program's session
    wait_until(lambda: _ppid(orphan) == record.host_pid, 10, "the orphan re-parented to the host")
    # When it ends, the host reaps it: no zombie is left behind.
    os.kill(orphan, signal.SIGKILL)
    wait_until(lambda: not psutil.pid_exists(orphan), 10, "the orphan reaped")
    current = read_record(rig.record_path("ag_1"))
    assert current is not None
    assert program_alive(current)


def _exchange(path: Path, payload: bytes) -> dict[str, Any]:
    """One JSON frame out, the first JSON frame back."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(path))
    try:
        sock.sendall(b"J" + len(payload).to_bytes(4, "big") + payload)
        reader = wire.FrameReader()
        while True:
            data = sock.recv(65536)
            assert data, "the host hung up without a reply"
            for kind, body in reader.feed(data):
                if kind == wire.JSON:
                    reply: dict[str, Any] = json.loads(body)
                    return reply
    finally:
        sock.close()


def test_what_once_ended_the_host_is_a_bad_request(rig: Rig) -> None:
    # Each of these ended the Python host (SystemError, RecursionError, OverflowError), and
    # the agent's PTY with it.
    rig.launch(["sleep", "30"], linger=5)
    path = rig.socket_path("ag_1")
    for payload, said in (
        (b'{"op" "status"}', "bad JSON frame: Expecting ':' delimiter: line 1 column 7 (char 6)"),
        (b'{"op": "x\\q"}', "bad JSON frame: Invalid \\escape: line 1 column 10 (char 9)"),
        (b'["\\u12"]', "bad JSON frame: Invalid \\uXXXX escape: line 1 column 4 (char 3)"),
        (b'{"op": "x\x01"}', "bad JSON frame: Invalid control character at: line 1 column 10"),
        (
            b"[" * 100_000 + b"]" * 100_000,
            "bad JSON frame: maximum recursion depth exceeded while decoding a JSON array",
        ),
        (
            b'{"op": "resize", "rows": Infinity, "cols": 5}',
            "bad resize request: cannot convert float infinity to integer",
        ),
        (b'{"op": "screen", "lines": -1e999}', "bad screen request: cannot convert float"),
        (b'{"op": "signal", "signal": 1e400}', "bad signal request: cannot convert float"),
        (b'{"op": "stop", "grace": 1' + b"0" * 400 + b"}", "bad stop request: int too large"),
    ):
        reply = _exchange(path, payload)
        assert reply["ok"] is False
        assert reply["error"].startswith(said), reply
    assert rig.client().status().running
    # A stop whose grace never comes: the program takes its SIGTERM all the same.
    reply = _exchange(path, b'{"op": "stop", "grace": NaN}')
    assert reply["exit"]["signal_name"] == "SIGTERM"

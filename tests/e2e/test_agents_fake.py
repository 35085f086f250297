"""The whole path with the fake Claude Code: real daemon process, real CLI, real hosts.

``volee attach`` runs in a real pseudo-terminal: raw mode, the detach key Ctrl-], a resize,
and two attaches at once.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.agents_rig import Volee

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"


class Terminal:
    """``volee attach`` on a pseudo-terminal of its own, as a person would run it."""

    def __init__(self, volee: Volee, agent: str, rows: int = 30, cols: int = 100) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "volee_desktop.cli", "attach", agent],
            env=volee.env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.master = master
        self.seen = b""

    def read_until(self, needle: bytes, timeout: float = 10) -> bytes:
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"{needle!r} not seen; got {self.seen[-1500:]!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:  # the attach process ended
                    pytest.fail(f"{needle!r} not seen before the end; got {self.seen[-1500:]!r}")
        return self.seen

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def resize(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        os.close(self.master)


@pytest.fixture
def volee() -> Iterator[Volee]:
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    (root / "p").mkdir()
    env = {**os.environ, "VOLEE_CLAUDE_BIN": str(FAKE_CLAUDE), "FAKE_HARNESS_HOME": str(root)}
    rig = Volee(root / "vh", env)
    rig.start()
    yield rig
    rig.close()
    shutil.rmtree(root, ignore_errors=True)


def test_cli_spawn_ask_allow_stop_send_forget(volee: Volee) -> None:
    project = volee.home.parent / "p"
    agent_id = volee.cli(
        "spawn", "--cwd", str(project), "--name", "f1", "--", "ASK: echo ok > ok.txt"
    ).stdout.strip()
    assert agent_id.startswith("ag_")

    asking = volee.wait_state("f1", "needs-input", detail="permission for Bash")
    assert asking["request"]["summary"] == "Bash: echo ok > ok.txt"
    # A message would answer the dialog (Enter is "Yes"): refused, saying what to use.
    refused = volee.cli("send", "f1", "y", check=False)
    assert refused.returncode == 1
    assert "waits for an approval (Bash: echo ok > ok.txt): use `volee allow f1`" in (
        refused.stderr
    )
    assert "f1: allow (Bash: echo ok > ok.txt)" in volee.cli("allow", "f1").stdout
    volee.wait_state("f1", "done")
    assert (project / "ok.txt").read_text() == "ok\n"

    volee.cli("stop", "f1")
    stopped = volee.wait_state("f1", "stopped")
    assert stopped["held"] == "stopped by you"

    sent = volee.cli("send", "f1", "hello again")
    assert "resumed with your message" in sent.stderr
    resumed = volee.wait(
        "f1", lambda a: a["state"] == "done" and a["held"] is None, "resumed, hold lifted"
    )
    assert resumed["session_id"] == stopped["session_id"]

    assert "forgot f1" in volee.cli("forget", "f1").stdout
    assert volee.agents() == []
    gone = volee.cli("send", "f1", "hello?", check=False)
    assert gone.returncode != 0
    assert "forgotten" in gone.stderr or "no agent" in gone.stderr


def test_bad_spawns_say_what_to_do(volee: Volee) -> None:
    missing = volee.cli("spawn", "--cwd", "/nonexistent/q", "--", "x", check=False)
    assert missing.returncode == 1
    assert "directory /nonexistent/q does not exist; create it or pass another --cwd" in (
        missing.stderr
    )

    volee.stop()
    volee.env["VOLEE_CLAUDE_BIN"] = "/nonexistent/claude"
    volee.start()
    nobin = volee.cli("spawn", "--cwd", str(volee.home.parent / "p"), "--", "x", check=False)
    assert nobin.returncode == 1
    assert "/nonexistent/claude does not exist or cannot run" in nobin.stderr
    assert "VOLEE_CLAUDE_BIN" in nobin.stderr


def test_two_attaches_at_once_type_resize_and_detach(volee: Volee) -> None:
    project = volee.home.parent / "p"
    volee.cli("spawn", "--cwd", str(project), "--name", "f2", "--", "first")
    volee.wait_state("f2", "done")

    one = Terminal(volee, "f2")
    two = Terminal(volee, "f2", rows=20, cols=70)
    try:
        one.read_until(b"Ctrl-] detaches")
        two.read_until(b"Ctrl-] detaches")
        # The replay: both see what the agent printed before they came.
        one.read_until(b'PROMPT 1 paste=0: "first"')
        two.read_until(b'PROMPT 1 paste=0: "first"')
        # Looking at the agent clears done.
        volee.wait_state("f2", "idle")

        one.type(b"typed here\r")  # raw mode: keys go through one by one, Enter included
        one.read_until(b'PROMPT 2 paste=0: "typed here"')
        two.read_until(b'PROMPT 2 paste=0: "typed here"')

        two.resize(33, 77)
        two.read_until(b"WINCH rows=33 cols=77")

        one.type(b"\x1d")  # Ctrl-]
        one.read_until(b"detached from f2")
        assert one.proc.wait(timeout=10) == 0
        # The other attach and the agent go on.
        volee.cli("send", "f2", "after detach")
        two.read_until(b'"after detach"')
        two.type(b"\x1d")
        assert two.proc.wait(timeout=10) == 0
    finally:
        one.close()
        two.close()
    assert volee.agent("f2")["live"]


def test_a_program_that_exits_with_a_usage_error_at_once_failed_to_launch_and_is_not_restarted(
    tmp_path: Path,
) -> None:
    # A codex that answers --version and --help like 0.171.0 but refuses its arguments.
    samples = Path(__file__).resolve().parents[1] / "harness" / "samples"
    codex = tmp_path / "codex"
    codex.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  --version) echo "codex-cli 0.171.0";;\n'
        f'  --help) cat "{samples / "codex-0.171.0-help.txt"}";;\n'
        "  *) echo \"error: unexpected argument '--frobnicate' found\" >&2\n"
        "     echo \"For more information, try '--help'.\" >&2; exit 2;;\n"
        "esac\n"
    )
    codex.chmod(0o755)
    (tmp_path / "p").mkdir()
    env = {**os.environ, "VOLEE_CODEX_BIN": str(codex), "VOLEE_CLAUDE_BIN": str(FAKE_CLAUDE)}
    rig = Volee(tmp_path / "vh", env)
    rig.start()
    try:
        rig.cli(
            "spawn", "--harness", "codex", "--cwd", str(tmp_path / "p"), "--name", "cx", "--", "hi"
        )

        failed = rig.wait_state("cx", "failed", timeout=20)
        assert failed["detail"] == (
            "could not start: exited with code 2: error: unexpected argument '--frobnicate' found"
        )
        timeline = rig.cli("timeline", "cx").stdout
        assert "automatic restart" not in timeline
    finally:
        rig.close()

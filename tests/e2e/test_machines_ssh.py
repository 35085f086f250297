"""Another machine over a real OpenSSH server on 127.0.0.1: a second Unix user ("devbox")
with its own HOME, VOLEE_HOME and daemon; this machine's daemon links to it with the real
``ssh`` and ``volee bridge``.  And ``--via`` with a plain local command, without ssh.

Listed with its machine, Allow sent over the link to a real dialog there, the sshd child
killed mid-subscription (catch-up with no gap and no duplicate), the daemon there stopped
(unreachable, then back), another volee version refused naming both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents_rig import Volee
from tests.e2e.machines_rig import ServerUser, SshServer, make_root, skip_unless_possible
from tests.polling import wait_until
from volee_desktop import __version__

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"
FAKE_HARNESS = Path(__file__).resolve().parents[1] / "fakes" / "fake_harness.py"


@dataclass
class Machines:
    """This machine (``here``) and devbox: its user, its sshd."""

    here: Volee
    there: ServerUser
    sshd: SshServer
    root: Path

    def machine(self, name: str = "devbox") -> dict[str, Any]:
        listed = json.loads(self.here.cli("machine", "ls", "--json").stdout)
        return next(m for m in listed if m["name"] == name)

    def remote_agents(self) -> list[dict[str, Any]]:
        return [a for a in self.here.agents() if a["machine"] == "devbox"]


@pytest.fixture
def m() -> Iterator[Machines]:
    skip_unless_possible()
    root = make_root()
    there = ServerUser(root)
    sshd: SshServer | None = None
    here: Volee | None = None
    try:
        # The fake Claude Code there, readable by that user.
        fakes = root / "fakes"
        fakes.mkdir()
        for source in (FAKE_CLAUDE, FAKE_HARNESS):
            shutil.copy(source, fakes / source.name)
        (fakes / "fh").mkdir()
        os.chown(fakes / "fh", there.uid, there.gid)
        there.start_daemon(
            {
                "VOLEE_CLAUDE_BIN": str(fakes / "fake-claude"),
                "FAKE_HARNESS_HOME": str(fakes / "fh"),
                "FAKE_PYTHON": "/usr/bin/python3",
            }
        )
        sshd = SshServer(root, there)
        env = {**os.environ, "PATH": f"{sshd.bin}:{os.environ['PATH']}"}
        here = Volee(root / "here", env)
        here.start()
        yield Machines(here, there, sshd, root)
    finally:
        if here is not None:
            here.close()
        if sshd is not None:
            sshd.close()
        there.remove()
        shutil.rmtree(root, ignore_errors=True)


def add_devbox(m: Machines) -> dict[str, Any]:
    added = m.here.cli(
        "machine", "add", "devbox", "--ssh", "devbox", "--volee", str(m.there.volee), "--json"
    )
    view: dict[str, Any] = json.loads(added.stdout)
    assert view["reachable"], f"{view}\nsshd: {m.sshd.log.read_text()[-2000:]}"
    return view


def test_a_remote_agent_is_listed_with_its_machine_and_allow_runs_there(m: Machines) -> None:
    view = add_devbox(m)
    assert view["version"] == __version__
    assert view["host"]
    project = m.there.home / "project"
    spawned = m.here.cli(
        "spawn",
        "--machine",
        "devbox",
        "--cwd",
        str(project),
        "--name",
        "asker",
        "--",
        "ASK: echo ok > ok.txt",
    )
    agent_id = spawned.stdout.strip()
    assert agent_id.startswith("ag_")
    # The agent runs there, as that user; here it is listed with its machine.
    [there] = m.there.agents()
    assert there["id"] == agent_id
    asking = m.here.wait(
        "asker",
        lambda a: a["state"] == "needs-input" and a["request"] is not None,
        "the permission request, seen here",
    )
    assert asking["machine"] == "devbox"
    assert asking["reachable"] is True
    assert asking["request"]["summary"] == "Bash: echo ok > ok.txt"
    text = m.here.cli("ls").stdout
    assert "devbox:asker" in text
    allowed = m.here.cli("allow", "devbox:asker")
    assert "asker: allow (Bash: echo ok > ok.txt)" in allowed.stdout
    m.here.wait_state("asker", "done")
    assert (project / "ok.txt").read_text() == "ok\n"
    assert os.stat(project / "ok.txt").st_uid == m.there.uid
    m.here.cli("stop", "asker", "--machine", "devbox")
    m.here.wait_state("asker", "stopped")


def test_the_recommended_key_runs_only_the_bridge(m: Machines) -> None:
    # Whatever the client asks for, the key runs the bridge: here a shell command is not run.
    done = subprocess.run(
        [str(m.sshd.bin / "ssh"), "-T", "-o", "BatchMode=yes", "devbox-restricted", "--", "id"],
        input=b"",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"uid=" not in done.stdout
    added = json.loads(
        m.here.cli("machine", "add", "devbox", "--ssh", "devbox-restricted", "--json").stdout
    )
    assert added["reachable"], added
    assert added["version"] == __version__


def test_what_ssh_refuses_is_said_in_its_words_and_never_prompts(m: Machines) -> None:
    unknown = json.loads(
        m.here.cli("machine", "add", "new", "--ssh", "devbox-unknown", "--json").stdout
    )
    assert unknown["reachable"] is False
    assert "Host key verification failed" in unknown["problem"]
    missing = json.loads(
        m.here.cli(
            "machine", "add", "bare", "--ssh", "devbox", "--volee", "/nowhere/volee", "--json"
        ).stdout
    )
    assert missing["reachable"] is False
    assert "/nowhere/volee" in missing["problem"]
    assert "not found" in missing["problem"]
    text = m.here.cli("machine", "ls").stdout
    assert "Host key verification failed" in text


def test_a_killed_ssh_connection_catches_up_with_no_gap_and_no_duplicate(m: Machines) -> None:
    add_devbox(m)
    m.there.run(
        "spawn", "--harness", "generic", "--cwd", "/tmp", "--name", "w1", "--", "sleep", "300"
    )
    wait_until(lambda: m.remote_agents(), what="devbox's agent here")
    before = m.machine()
    assert before["replays"] == 0
    assert m.sshd.cut() >= 2  # sshd's session processes killed: the network pulled
    wait_until(
        lambda: not m.machine()["reachable"] or m.machine()["replays"] > 0,
        what="the link to notice",
    )
    # Meanwhile, there: a second agent, and the first one stopped.
    m.there.run(
        "spawn", "--harness", "generic", "--cwd", "/tmp", "--name", "w2", "--", "sleep", "300"
    )
    m.there.run("stop", "w1")
    remote_seq = json.loads(m.there.run("daemon", "status", "--json").stdout)["seq"]

    def caught_up() -> dict[str, Any] | None:
        machine = m.machine()
        return machine if machine["reachable"] and machine["seq"] == remote_seq else None

    back = wait_until(caught_up, timeout=30, what="the link to come back and catch up")
    assert back["snapshots"] == 1  # resumed from its last seq: no new snapshot was needed
    assert back["replays"] == 1
    here = {a["name"]: a for a in m.remote_agents()}
    there = {a["name"]: a for a in m.there.agents()}
    assert set(here) == set(there) == {"w1", "w2"}
    for name in here:
        assert here[name]["state"] == there[name]["state"]
        assert here[name]["id"] == there[name]["id"]
    m.there.run("stop", "w2")


def test_a_stopped_daemon_there_is_unreachable_then_back(m: Machines) -> None:
    add_devbox(m)
    m.there.run(
        "spawn", "--harness", "generic", "--cwd", "/tmp", "--name", "w1", "--", "sleep", "300"
    )
    wait_until(lambda: m.remote_agents(), what="devbox's agent here")
    m.there.stop_daemon()

    def not_running() -> dict[str, Any] | None:
        machine = m.machine()
        # First "closed the connection (stopped?)", then, trying again, why.
        if machine["reachable"] or "volee is not running on" not in machine["problem"]:
            return None
        return machine

    down = wait_until(not_running, what="devbox unreachable, saying why")
    assert "volee daemon install" in down["problem"]
    [kept] = m.remote_agents()
    assert kept["reachable"] is False
    assert "[devbox unreachable since " in m.here.cli("ls").stdout
    assert kept["state"] == "working"  # never lost, stopped or done
    refused = m.here.cli("send", "devbox:w1", "hello", check=False)
    assert refused.returncode != 0
    assert "devbox is unreachable since" in refused.stderr
    assert "not sent" in refused.stderr
    m.there.start_daemon()
    wait_until(lambda: m.machine()["reachable"], timeout=90, what="devbox back")
    [again] = m.remote_agents()
    assert again["reachable"] is True
    m.there.run("stop", "w1")


def test_another_volee_version_there_is_refused_naming_both(m: Machines) -> None:
    old = m.root / "old-volee"
    old.write_text(
        "#!/usr/bin/python3\nimport json, sys\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        '    hello = {"version": "0.0.1", "protocol": 1, "machine_id": "mc_old", "host": "old"}\n'
        '    print(json.dumps({"v": 1, "id": r["id"], "result": hello}), flush=True)\n'
    )
    old.chmod(0o755)
    added = json.loads(
        m.here.cli("machine", "add", "old", "--ssh", "devbox", "--volee", str(old), "--json").stdout
    )
    assert added["reachable"] is False
    assert "0.0.1" in added["problem"]
    assert __version__ in added["problem"]
    assert "install the same version on both" in added["problem"]


def test_via_a_plain_command_reaches_a_daemon_without_ssh() -> None:
    root = Path(tempfile.mkdtemp(prefix="vv", dir="/tmp"))
    here = Volee(root / "a", dict(os.environ))
    there = Volee(root / "b", dict(os.environ))
    volee = Path(sys.executable).with_name("volee")
    try:
        there.start()
        here.start()
        there.cli(
            "spawn", "--harness", "generic", "--cwd", "/tmp", "--name", "far", "--", "sleep", "300"
        )
        added = json.loads(
            here.cli(
                "machine",
                "add",
                "wsl",
                "--via",
                f"env VOLEE_HOME={there.home}",
                "--volee",
                str(volee),
                "--json",
            ).stdout
        )
        assert added["reachable"], added
        [far] = [a for a in here.agents() if a["machine"] == "wsl"]
        assert far["name"] == "far"
        here.cli("stop", "wsl:far")
        there.wait_state("far", "stopped")
        here.wait("far", lambda a: a["state"] == "stopped", "stopped, seen here")
        removed = json.loads(here.cli("machine", "rm", "wsl", "--json").stdout)
        assert removed["removed"] == "wsl"
        assert [a for a in here.agents() if a["machine"] == "wsl"] == []
        assert "no other machines" in here.cli("machine", "ls").stdout
    finally:
        here.close()
        there.close()
        shutil.rmtree(root, ignore_errors=True)

"""Issue 22, finding 1: a connection whose peer is gone is never the person (the race, for real).

A real daemon process and two generic agents: a victim that sleeps, and an attacker whose
program runs the attack from the issue a few hundred times.  Each try forks a child that
connects to the daemon's socket, forks a grandchild that keeps the connection, and exits
(reaped at once, so its pid is gone); the grandchild then asks for ``agents.stop`` of the
victim or ``daemon.stop``.  Every other try the attacker also pauses the daemon
(``SIGSTOP``) from before the connect until the child is reaped, which won 10/10 before:
the daemon reads the peer's pid only once the process is gone.  Not one try may succeed,
and every refusal is in the daemon's log (those the daemon could tie to the attacker in
its timeline, the others counted in ``daemon status``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.agents_rig import Volee
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TRIES = 300

ATTACK = """
import json, os, signal, socket, sys

sock_path, victim, daemon_pid, out, tries = sys.argv[1:6]
daemon_pid, tries = int(daemon_pid), int(tries)

def attempt(i):
    method = "agents.stop" if i % 2 == 0 else "daemon.stop"
    params = {"agent": victim} if method == "agents.stop" else {}
    paused = i % 4 >= 2
    read_end, write_end = os.pipe()
    if paused:
        os.kill(daemon_pid, signal.SIGSTOP)
    child = os.fork()
    if child == 0:
        os.close(read_end)
        try:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(sock_path)
        except OSError as exc:
            os.write(write_end, json.dumps({"failed": str(exc)}).encode() + b"\\n")
            os._exit(0)
        me = os.getpid()
        if os.fork() == 0:
            # The grandchild keeps the connection and speaks once its parent, who connected,
            # has exited (it is re-parented at once).
            while os.getppid() == me:
                pass
            request = {"v": 1, "id": i, "method": method, "params": params}
            try:
                conn.sendall(json.dumps(request).encode() + b"\\n")
                reply = b""
                while not reply.endswith(b"\\n"):
                    data = conn.recv(65536)
                    if not data:
                        break
                    reply += data
                answer = json.loads(reply) if reply else {"closed": True}
            except OSError as exc:
                answer = {"failed": str(exc)}
            os.write(write_end, json.dumps(answer).encode() + b"\\n")
            os._exit(0)
        os._exit(0)
    os.close(write_end)
    os.waitpid(child, 0)  # reaped: its pid is gone before the daemon looks at it
    if paused:
        os.kill(daemon_pid, signal.SIGCONT)
    with os.fdopen(read_end, "rb") as answers:
        line = answers.readline()
    answer = json.loads(line) if line else {"closed": True}
    return {"try": i, "method": method, "paused": paused, **answer}

with open(out + ".part", "w") as f:
    for i in range(tries):
        f.write(json.dumps(attempt(i)) + "\\n")
        f.flush()
os.rename(out + ".part", out)
signal.pause()
"""


@pytest.fixture
def volee() -> Iterator[Volee]:
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "VOLEE_AGENT"}
    rig = Volee(root / "vh", env)
    rig.start()
    yield rig
    rig.close()
    shutil.rmtree(root, ignore_errors=True)


def _spawn(volee: Volee, name: str, *argv: str) -> str:
    return volee.cli("spawn", "--harness", "generic", "--name", name, "--", *argv).stdout.strip()


def test_peer_gone_is_never_the_person_in_a_few_hundred_races(volee: Volee) -> None:
    root = volee.home.parent
    victim = _spawn(volee, "victim", "sleep", "600")
    volee.wait_state(victim, "working")
    script = root / "attack.py"
    script.write_text(textwrap.dedent(ATTACK))
    out = root / "attack.jsonl"
    assert volee.daemon is not None
    attacker = _spawn(
        volee,
        "attacker",
        sys.executable,
        str(script),
        str(volee.dirs.socket),
        victim,
        str(volee.daemon.pid),
        str(out),
        str(TRIES),
    )
    wait_until(out.exists, timeout=240, what="the attacker's tries")
    tries = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(tries) == TRIES
    won = [t for t in tries if "result" in t]
    assert not won, f"{len(won)} tries acted as the person: {won[:3]}\n{volee.daemon_log()}"
    odd = [t for t in tries if t.get("error", {}).get("code") != "forbidden"]
    assert not odd, f"{len(odd)} tries were not refused: {odd[:3]}\n{volee.daemon_log()}"
    # The paused tries are the ones the daemon could not identify: gone, never the person.
    unknown = [t for t in tries if "cannot tell who is calling" in t["error"]["message"]]
    assert unknown, "no try reached the daemon with its peer gone: the race was not run"
    assert all("never taken for the person" in t["error"]["message"] for t in unknown)
    # Nothing happened: the victim works, the daemon serves.
    assert volee.agent(victim)["state"] == "working"
    assert volee.daemon.poll() is None
    # Every refusal is recorded: each in the daemon's log, with whom it was refused to ...
    log = (volee.home / "daemon-test.log").read_text(errors="replace")
    refusals = [line for line in log.splitlines() if " refused agents.stop to " in line]
    refusals += [line for line in log.splitlines() if " refused daemon.stop to " in line]
    assert len(refusals) == TRIES, log[-3000:]
    # ... those tied to the attacker in its timeline (once per 30 s), the others counted.
    status = json.loads(volee.cli("daemon", "status", "--json").stdout)
    assert status["extra"]["unidentified"]["refused"] == len(unknown)
    timeline = json.loads(volee.cli("timeline", attacker, "--json").stdout)
    if len(unknown) < TRIES:
        assert any("refused" in item["text"] for item in timeline), timeline[-5:]

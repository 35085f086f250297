"""Leftovers become the person when their host ends (issue 22, finding 3), with real processes.

A real daemon (``volee daemon run``) and a generic agent playing the attacker: it leaves a
waiter behind (``setsid``, a double fork, ``VOLEE_AGENT`` cleared, deaf to SIGTERM and SIGHUP),
then kills its own host with SIGKILL.  The waiter would be re-parented to init and, a moment
later, stop another agent as the person.  The daemon, the subreaper of its hosts, ends it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.e2e.agents_rig import Volee
from tests.polling import wait_until
from volee_desktop.hosts.records import host_alive, read_record

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreapers are Linux's"),
]

# $PPID of the program is its host.  The waiter acts a second after its host is gone.
ATTACKER = """\
#!/bin/sh
cd "{out}"
# Once: volee starts the agent again after its host vanished (restart on crash).
[ -e once ] && exec sleep 600
touch once
cat > waiter.sh <<EOF
trap '' TERM HUP
echo \\$\\$ > waiter.pid
while kill -0 $PPID 2>/dev/null; do sleep 0.05; done
sleep 1
"{python}" -m volee_desktop.cli stop victim > stop.out 2>&1
echo "rc=\\$?" >> stop.out
exec sleep 600
EOF
env -u VOLEE_AGENT setsid sh -c "(sh waiter.sh) &"
until [ -e go ]; do sleep 0.05; done
kill -9 $PPID
exec sleep 600
"""


@pytest.fixture
def volee() -> Iterator[Volee]:
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    (root / "p").mkdir()
    env = {**os.environ, "FAKE_HARNESS_HOME": str(root)}
    env.pop("VOLEE_AGENT", None)
    rig = Volee(root / "vh", env)
    rig.start()
    yield rig
    rig.close()
    shutil.rmtree(root, ignore_errors=True)


def test_a_setsid_waiter_is_ended_when_its_host_is_killed(volee: Volee) -> None:
    root = volee.home.parent
    project, out = root / "p", root / "out"
    out.mkdir()
    script = out / "attack.sh"
    script.write_text(ATTACKER.format(out=out, python=sys.executable))
    script.chmod(0o755)
    victim = volee.cli(
        "spawn", "--harness", "generic", "--name", "victim", "--cwd", str(project),
        "--", "sleep", "600",
    ).stdout.strip()  # fmt: skip
    attacker = volee.cli(
        "spawn", "--harness", "generic", "--name", "attacker", "--cwd", str(project),
        "--", str(script),
    ).stdout.strip()  # fmt: skip
    pidfile = out / "waiter.pid"
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 30, "the waiter")
    waiter = psutil.Process(int(pidfile.read_text()))
    try:
        assert waiter.environ().get("VOLEE_AGENT") is None
        record = read_record(volee.dirs.hosts / f"{attacker}.json")
        assert record is not None
        assert os.getsid(waiter.pid) != record.program_pid  # it left the program's session
        (out / "go").touch()
        wait_until(lambda: not host_alive(record), 30, "the attacker's host killed")

        wait_until(
            lambda: not waiter.is_running() or waiter.status() == psutil.STATUS_ZOMBIE,
            15,
            f"the waiter ended (it is {waiter.pid}, child of "
            f"{waiter.ppid() if waiter.is_running() else '-'})",
        )
    finally:
        if waiter.is_running():
            waiter.kill()

    assert not (out / "stop.out").exists(), (out / "stop.out").read_text()
    assert volee.agent(victim)["state"] != "stopped"
    timeline = [i["text"] for i in json.loads(volee.cli("timeline", victim, "--json").stdout)]
    assert not [t for t in timeline if "stopped" in t], timeline
    assert "left behind by the host of" in volee.daemon_log()


# A waiter that kept the agent's environment, left behind while no daemon ran.
KEEPER = """\
#!/bin/sh
cd "{out}"
[ -e once ] && exec sleep 600
touch once
printf "trap '' TERM HUP\\necho \\$\\$ > waiter.pid\\nexec sleep 600\\n" > waiter.sh
setsid sh -c "(sh waiter.sh) &"
exec sleep 600
"""


def test_a_waiter_left_while_no_daemon_ran_is_ended_when_the_daemon_starts(volee: Volee) -> None:
    root = volee.home.parent
    project, out = root / "p", root / "out"
    out.mkdir()
    script = out / "keeper.sh"
    script.write_text(KEEPER.format(out=out))
    script.chmod(0o755)
    agent = volee.cli(
        "spawn", "--harness", "generic", "--name", "keeper", "--cwd", str(project),
        "--", str(script),
    ).stdout.strip()  # fmt: skip
    pidfile = out / "waiter.pid"
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 30, "the waiter")
    waiter = psutil.Process(int(pidfile.read_text()))
    try:
        assert waiter.environ().get("VOLEE_AGENT") == agent
        record = read_record(volee.dirs.hosts / f"{agent}.json")
        assert record is not None
        volee.stop()  # hosts live on without the daemon
        os.kill(record.host_pid, signal.SIGKILL)
        wait_until(lambda: waiter.ppid() != record.host_pid, 15, "the waiter re-parented")
        assert waiter.is_running()

        volee.start()

        wait_until(
            lambda: not waiter.is_running() or waiter.status() == psutil.STATUS_ZOMBIE,
            15,
            "the waiter ended by the new daemon",
        )
    finally:
        if waiter.is_running():
            waiter.kill()

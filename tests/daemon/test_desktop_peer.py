"""Finding 22.2 (a), the daemon's half: a D-Bus peer's pid is identified like a socket peer,
and an agent's is recorded as refused in its timeline (``desktop.peer``, the person's alone).

A real daemon and a real host running a generic agent; the pids are real processes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.polling import until
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.paths import dirs

pytestmark = pytest.mark.e2e


async def _program_pid(record: Path) -> int:
    def recorded() -> int:
        return int((record.exists() and json.loads(record.read_text()).get("program_pid")) or 0)

    return await until(recorded, what="the agent's host to record its program", timeout=20)


async def test_an_agents_dbus_peer_is_refused_and_recorded_the_persons_is_not(
    tmp_path: Path,
) -> None:
    folders = dirs()
    daemon = await Daemon.start(folders)
    client = await AsyncClient.connect(folders.socket)
    person = subprocess.Popen(["sleep", "60"])
    try:
        view: dict[str, Any] = await client.call(
            "agents.spawn",
            {
                "harness": "generic",
                "name": "intruder",
                "argv": ["sleep", "60"],
                "cwd": str(tmp_path),
            },
            timeout=30,
        )
        agent = view["id"]
        pid = await _program_pid(folders.hosts / f"{agent}.json")
        attempt = "answer agent victim's request (allow) through a desktop notification"
        who = await client.call("desktop.peer", {"pid": pid, "attempt": attempt})
        assert (who["kind"], who["agent"], who["name"]) == ("agent", agent, "intruder")
        timeline = await client.call("agents.timeline", {"agent": agent})
        said = json.dumps(timeline)
        assert f"tried to {attempt} (on the desktop's D-Bus, pid {pid})" in said, said
        # A process of the person's (a child of this test, outside every agent) is the person.
        mine = await client.call("desktop.peer", {"pid": person.pid, "attempt": attempt})
        assert mine["kind"] == "person"
        with pytest.raises(IpcError):
            await client.call("desktop.peer", {"attempt": attempt})  # no pid: a clear error
    finally:
        person.kill()
        person.wait()
        await client.close()
        await daemon.close()

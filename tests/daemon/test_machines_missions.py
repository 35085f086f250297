"""A mission on another machine, reviewed and approved from this one: listed with its machine,
its workers' changes read there, the approval merging there (daemon/machines/missions.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import close_stopping_agents
from tests.daemon.test_machines import Pair, write_machines
from tests.daemon.test_missions import COMMIT, call, spawn, start_mission, status
from tests.fakes.machines import SocketDialer
from tests.polling import until
from volee_desktop.core.model import MissionStatus
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.paths import dirs

from .gitrepos import git, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
async def pair(volee_home: Path, fake_claude: Path) -> AsyncIterator[Pair]:
    remote = await Daemon.start(dirs({"VOLEE_HOME": str(volee_home / "remote")}))
    write_machines(volee_home, "devbox")
    dialer = SocketDialer({"devbox": remote.dirs.socket})
    local = await Daemon.start(dirs(), dial=dialer)
    client = await AsyncClient.connect(local.dirs.socket)
    try:
        yield Pair(local, remote, dialer, client)
    finally:
        await client.close()
        await local.close()
        await close_stopping_agents(remote)


async def awaiting(p: Pair, repo: Path) -> tuple[str, str]:
    """A mission on devbox whose worker delivered, its report waiting for the person."""
    mission, coordinator = await start_mission(p.remote, repo)
    worker = await spawn(p.remote, coordinator, COMMIT.format(n="one"))
    await until(
        lambda: status(p.remote, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    await call(p.remote, "missions.request_approval", agent=coordinator, body="done")
    link = p.machines.links["devbox"]
    await until(lambda: link.seq == p.remote.service.registry.seq, what="devbox's copy", timeout=10)
    return mission, worker


async def test_a_mission_on_devbox_is_reviewed_and_approved_from_here(
    pair: Pair, fake_claude: Path
) -> None:
    repo = make_repo(fake_claude, remote=False)
    mission, worker = await awaiting(pair, repo)
    listed: list[dict[str, Any]] = await pair.client.call("missions.list", {})
    assert [(m["id"], m["machine"]) for m in listed] == [(mission, "devbox")]
    shown = await pair.client.call("missions.show", {"mission": f"devbox:{mission}"})
    assert (shown["status"], shown["machine"]) == ("awaiting-approval", "devbox")
    # The review's diff is read on devbox, where the worker's branch is.
    changes = await pair.client.call("agents.changes", {"agent": worker, "diff": True})
    assert changes["machine"] == "devbox"
    assert "+one" in changes["diff"]
    # Approving it (a plain id, found on devbox only) merges there.
    answered = await pair.client.call("missions.answer", {"mission": mission, "option": "approve"})
    assert answered["machine"] == "devbox"
    await until(
        lambda: status(pair.remote, mission) is MissionStatus.CLOSED, what="closed", timeout=20
    )
    assert (repo / "one.txt").exists()
    assert "Merge volee/" in git(repo, "log", "--oneline", "main")
    assert mission not in pair.local.service.registry.missions  # nothing of it here


async def test_an_answer_while_devbox_is_unreachable_is_refused(
    pair: Pair, fake_claude: Path
) -> None:
    repo = make_repo(fake_claude, remote=False)
    mission, _worker = await awaiting(pair, repo)
    pair.dialer.down = "ssh: connect to host devbox port 22: Connection refused"
    pair.dialer.drop()
    link = pair.machines.links["devbox"]
    await until(lambda: not link.state.reachable, what="devbox unreachable", timeout=10)
    with pytest.raises(IpcError, match=r"devbox is unreachable since .*not sent"):
        await pair.client.call("missions.answer", {"mission": mission, "option": "approve"})
    assert status(pair.remote, mission) is MissionStatus.AWAITING_APPROVAL


async def test_a_mission_is_checked_there_by_its_id_or_its_agent(
    pair: Pair, fake_claude: Path
) -> None:
    repo = make_repo(fake_claude, remote=False)
    mission, worker = await awaiting(pair, repo)
    by_mission = await pair.client.call("missions.workers", {"mission": f"devbox:{mission}"})
    by_agent = await pair.client.call("missions.workers", {"agent": worker})
    assert [w["id"] for w in by_mission] == [w["id"] for w in by_agent] == [worker]

"""End to end (issue 24): two real daemons, "wsl" reached with the ``--via`` command form (a
second daemon under another VOLEE_HOME, docs/machines.md); the app, attached to this
machine's daemon only, shows the other machine's agent asking in its list, with its machine,
and Allow from the app runs on that machine."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.agents_rig import Volee
from volee_desktop.app.agent_model import MachineRole
from volee_desktop.core.states import AgentState

if TYPE_CHECKING:
    from volee_desktop.app.controller import AppController

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]

FAKES = Path(__file__).resolve().parents[1] / "fakes"


@dataclass
class Two:
    here: Volee
    there: Volee
    project: Path


@pytest.fixture
def two() -> Iterator[Two]:
    root = Path(tempfile.mkdtemp(prefix="vm", dir="/tmp"))
    (root / "fh").mkdir()
    project = root / "project"
    project.mkdir()
    there_env = {
        **os.environ,
        "VOLEE_CLAUDE_BIN": str(FAKES / "fake-claude"),
        "FAKE_HARNESS_HOME": str(root / "fh"),
        "FAKE_PYTHON": sys.executable,
    }
    here = Volee(root / "a", dict(os.environ))
    there = Volee(root / "b", there_env)
    try:
        there.start()
        here.start()
        yield Two(here, there, project)
    finally:
        here.close()
        there.close()
        shutil.rmtree(root, ignore_errors=True)


def attached(
    two: Two, qtbot: Any, qloop: asyncio.AbstractEventLoop, volee_home: Path
) -> AppController:
    """``wsl`` added on this machine, and the app attached to this machine's daemon only."""
    from volee_desktop.app.controller import AppController, AppOptions
    from volee_desktop.app.link import IpcDaemonLink

    volee = Path(sys.executable).with_name("volee")
    added = json.loads(
        two.here.cli(
            "machine",
            "add",
            "wsl",
            "--via",
            f"env VOLEE_HOME={two.there.home}",
            "--volee",
            str(volee),
            "--json",
        ).stdout
    )
    assert added["reachable"], added
    ctl = AppController(
        AppOptions(config_path=volee_home / "config" / "config.toml", sinks=[], use_tray=False)
    )
    qtbot.addWidget(ctl.panel)

    async def attach() -> None:
        await ctl.attach(await IpcDaemonLink.connect(two.here.dirs.socket))

    task = qloop.create_task(attach())
    qtbot.waitUntil(task.done, timeout=10000)
    task.result()
    return ctl


def shown(ctl: AppController) -> dict[str, tuple[str, AgentState, str]]:
    """Each row of the list: agent name → (id, state, what it says of its machine)."""
    model = ctl.model
    rows = {}
    for r in range(model.rowCount()):
        agent = model.agent_at(r)
        rows[agent.name] = (agent.id, agent.state, model.data(model.index(r), MachineRole))
    return rows


def test_a_remote_agents_request_shows_in_the_apps_list_and_is_answered_from_it(
    two: Two, qtbot: Any, qloop: asyncio.AbstractEventLoop, volee_home: Path
) -> None:
    ctl = attached(two, qtbot, qloop, volee_home)
    try:
        spawned = two.here.cli(
            "spawn",
            "--machine",
            "wsl",
            "--cwd",
            str(two.project),
            "--name",
            "asker",
            "--",
            "ASK: echo ok > ok.txt",
        )
        agent_id = spawned.stdout.strip()
        model = ctl.model

        def row() -> tuple[Any, str] | None:
            for r in range(model.rowCount()):
                agent = model.agent_at(r)
                if agent.id == agent_id:
                    return agent, model.data(model.index(r), MachineRole)
            return None

        def asking() -> bool:
            found = row()
            return (
                found is not None
                and found[0].state is AgentState.NEEDS_INPUT
                and found[0].request is not None
            )

        qtbot.waitUntil(asking, timeout=60000)
        agent, machine = row()  # type: ignore[misc]
        assert machine == "wsl"
        assert agent.request.summary == "Bash: echo ok > ok.txt"
        assert [a.id for a in ctl.needing_agents()] == [agent_id]  # the tray's menu
        # Allow, as the list's action does: sent to this daemon, which forwards it to wsl's.
        assert ctl.actions.answer_agent(agent_id, "allow")
        qtbot.waitUntil(lambda: (two.project / "ok.txt").exists(), timeout=60000)
        assert (two.project / "ok.txt").read_text() == "ok\n"
        qtbot.waitUntil(
            lambda: (found := row()) is not None and found[0].state is AgentState.DONE,
            timeout=60000,
        )
        assert two.there.wait_state("asker", "done")["id"] == agent_id
        two.here.cli("stop", "wsl:asker")
    finally:
        ctl.tasks.cancel_all()
        ctl.close()


def test_while_the_link_is_cut_the_rows_are_greyed_then_back_with_nothing_lost(
    two: Two, qtbot: Any, qloop: asyncio.AbstractEventLoop, volee_home: Path
) -> None:
    ctl = attached(two, qtbot, qloop, volee_home)
    try:
        for name in ("w1", "w2"):
            two.there.cli(
                "spawn", "--harness", "generic", "--cwd", "/tmp", "--name", name, "--",
                "sleep", "300",
            )  # fmt: skip
        qtbot.waitUntil(
            lambda: (
                {n: r[1:] for n, r in shown(ctl).items()}
                == {n: (AgentState.WORKING, "wsl") for n in ("w1", "w2")}
            ),
            timeout=30000,
        )
        before = shown(ctl)
        two.there.stop()  # the bridge's far end is gone: the link is cut, mid-subscription
        qtbot.waitUntil(
            lambda: all(r[2].startswith("wsl unreachable since ") for r in shown(ctl).values()),
            timeout=30000,
        )
        # Greyed, never lost, stopped or done.
        assert {n: r[:2] for n, r in shown(ctl).items()} == {n: r[:2] for n, r in before.items()}
        assert ctl.live.counts[AgentState.WORKING] == 2
        two.there.start()
        two.here.cli("machine", "ls")  # tries the unreachable ones at once
        qtbot.waitUntil(lambda: all(r[2] == "wsl" for r in shown(ctl).values()), timeout=60000)
        assert shown(ctl) == before
        # And the feed is live again: what happens there now shows here.
        two.there.cli("stop", "w1")
        qtbot.waitUntil(lambda: shown(ctl)["w1"][1] is AgentState.STOPPED, timeout=30000)
        two.here.cli("stop", "wsl:w2")
    finally:
        ctl.tasks.cancel_all()
        ctl.close()

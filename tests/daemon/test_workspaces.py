"""workspace-updated: the repository and branch of an agent's folder, learned from git."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import close_stopping_agents
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core.model import Agent, Harness
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.agents.runner import SendParams
from volee_desktop.daemon.agents.workspaces import learned
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.params import SpawnParams, decode
from volee_desktop.paths import dirs

from .gitrepos import git, make_repo

pytestmark = pytest.mark.timeout(60)


def agent(**fields: Any) -> Agent:
    return Agent(id="ag_1", name="a", harness=Harness.CLAUDE, cwd="/p", **fields)


def test_what_git_says_is_recorded_only_when_it_says_more() -> None:
    found = learned(agent(), "/p", "main")
    assert found is not None
    assert (found.repo, found.branch) == ("/p", "main")
    assert learned(agent(repo="/p", branch="main"), "/p", "main") is None
    moved = learned(agent(repo="/p", branch="main"), "/p", "fix/flaky")
    assert moved is not None
    assert (moved.repo, moved.branch) == (None, "fix/flaky")
    assert learned(agent(), None, None) is None  # not a repository: nothing to say


def test_a_worktree_agent_keeps_the_repository_volee_made_it_in() -> None:
    # A worktree's own top folder is the worktree: the repo volee recorded is the main one.
    found = learned(agent(repo="/r", worktree="/r/.claude/worktrees/a", branch="a"), "/w", "b")
    assert found is not None
    assert (found.repo, found.branch) == (None, "b")


@pytest.fixture
async def daemon(fake_claude: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await close_stopping_agents(d)


def updates(d: Daemon, agent_id: str) -> list[ev.WorkspaceUpdated]:
    return [
        e
        for _, e in d.service.events_after(0)
        if isinstance(e, ev.WorkspaceUpdated) and e.agent == agent_id
    ]


async def test_an_agent_spawned_in_a_repository_learns_it_and_follows_its_branch(
    fake_claude: Path, daemon: Daemon
) -> None:
    repo = make_repo(fake_claude, remote=False)
    view = await daemon.agents.api_spawn(
        None,  # type: ignore[arg-type]
        decode(SpawnParams, {"prompt": "say hello", "cwd": str(repo), "env": dict(os.environ)}),
    )
    a = view["id"]

    await until(lambda: updates(daemon, a), what="the repository learned", timeout=20)
    known = daemon.service.registry.agents[a]
    assert (known.repo, known.branch) == (str(repo), "main")

    await until(
        lambda: daemon.service.registry.agents[a].state is AgentState.DONE, what="done", timeout=20
    )
    git(repo, "checkout", "-q", "-b", "fix/flaky")
    await daemon.agents.api_send(None, decode(SendParams, {"agent": a, "text": "say hello again"}))  # type: ignore[arg-type]
    await until(
        lambda: daemon.service.registry.agents[a].branch == "fix/flaky",
        what="the new branch learned",
        timeout=20,
    )
    assert [e.branch for e in updates(daemon, a)] == ["main", "fix/flaky"]

"""workspace-updated: the repository and branch of an agent's folder, learned from git."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import close_stopping_agents
from volee_desktop.core import events as ev
from volee_desktop.core.model import Agent, Harness
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.workspaces import learned
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


async def until(what: str, cond: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)
    return value


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
        {"prompt": "say hello", "cwd": str(repo), "env": dict(os.environ)},
    )
    a = view["id"]

    await until("the repository learned", lambda: updates(daemon, a))
    known = daemon.service.registry.agents[a]
    assert (known.repo, known.branch) == (str(repo), "main")

    await until("done", lambda: daemon.service.registry.agents[a].state is AgentState.DONE)
    git(repo, "checkout", "-q", "-b", "fix/flaky")
    await daemon.agents.api_send(None, {"agent": a, "text": "say hello again"})  # type: ignore[arg-type]
    await until(
        "the new branch learned", lambda: daemon.service.registry.agents[a].branch == "fix/flaky"
    )
    assert [e.branch for e in updates(daemon, a)] == ["main", "fix/flaky"]

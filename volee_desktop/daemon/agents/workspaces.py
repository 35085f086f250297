"""Where an agent works: its repository and branch, learned from git (``workspace-updated``).

volee knows an agent's folder from the start; the repository holding it and the branch
checked out there it learns from git: when the agent is registered (spawned, or found by
discovery), when it asks something (the request names its project), and again when a turn
ends (the agent, or the person, may have switched branches or made the folder a repository).
Only what changed is committed, so a turn that changes nothing commits nothing. Two ``git``
runs per check (about 5 ms of CPU each), in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ...core import events as ev
from ...core.model import Agent
from ...core.states import AgentState
from .. import git
from ..clock import Clock
from ..context import Tasks
from ..service import Service

log = logging.getLogger(__name__)


def learned(
    agent: Agent, repo: str | None, branch: str | None, at: float = 0.0
) -> ev.WorkspaceUpdated | None:
    """The event that records what git says of the agent's folder, when it says more (pure)."""
    new_repo = repo if repo and repo != agent.repo and not agent.worktree else None
    new_branch = branch if branch and branch != agent.branch else None
    if new_repo is None and new_branch is None:
        return None
    return ev.WorkspaceUpdated(at=at, agent=agent.id, repo=new_repo, branch=new_branch)


def read_git(folder: str) -> tuple[str | None, str | None]:
    """The repository's top folder and the branch checked out in ``folder`` (blocking)."""
    if not folder or not Path(folder).is_dir():
        return None, None
    top = git.toplevel(folder)
    if top is None:
        return None, None
    return top, git.current_branch(folder)


class Workspaces:
    """Learns an agent's repository and branch when it registers and when a turn ends."""

    def __init__(self, service: Service, tasks: Tasks, clock: Clock) -> None:
        self.service = service
        self.tasks = tasks
        self.clock = clock
        self._checking: set[str] = set()
        service.listen(self._on_event)

    def _on_event(self, _seq: int, event: ev.Event) -> None:
        match event:
            case ev.AgentRegistered():
                self.check(event.agent)
            case ev.StateChanged(state=AgentState.DONE | AgentState.STOPPED):
                self.check(event.agent)
            case ev.StateChanged(request=request) if request is not None:
                self.check(event.agent)  # a request names the project it asks from
            case _:
                pass

    def check(self, agent_id: str) -> None:
        """Ask git about the agent's folder soon (one check at a time per agent)."""
        if agent_id in self._checking:
            return
        self._checking.add(agent_id)
        self.tasks.spawn(self._check(agent_id), f"workspace of {agent_id}")

    async def _check(self, agent_id: str) -> None:
        try:
            agent = self.service.current().agents.get(agent_id)
            if agent is None:
                return
            folder = agent.worktree or agent.cwd
            repo, branch = await asyncio.to_thread(read_git, folder)
            agent = self.service.current().agents.get(agent_id)
            if agent is None:
                return
            found = learned(agent, repo, branch, self.clock.now())
            if found is not None:
                await self.service.commit([found])
        finally:
            self._checking.discard(agent_id)

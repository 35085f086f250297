"""When and how a worker's delivery evidence is read from git (and GitHub) and recorded.

A change worker's evidence is read when it stops (idle, done, stopped), at
daemon start for a worker of an open mission never read, before ``tidy``
decides on stale evidence, after merges, and on request (``missions.check``).
Checks of one agent never overlap: a request during a check runs one more
after it, so evidence is always read after the last reason to read it.
``checked_at`` is when the check began, which tells the supervisor whether
the evidence is fresh.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from ...core import events as ev
from ...core.model import Agent, Delivery, Mission, MissionKind, PushState, Role
from ...core.registry import Registry
from ...core.states import AgentState
from ...core.supervisor import workers_of
from .. import git
from ..context import Context
from ..forge import Forge, github_slug

STOPPED_STATES = (AgentState.IDLE, AgentState.DONE, AgentState.STOPPED)


def reads_evidence(mission: Mission, agent: Agent) -> bool:
    """Whether the agent is a worker whose delivery is judged from git."""
    return (
        mission.kind is MissionKind.CHANGE
        and agent.role is not Role.COORDINATOR
        and agent.id != mission.coordinator
    )


class Evidence:
    """Reads and records delivery evidence in the background or on request."""

    def __init__(self, ctx: Context) -> None:
        self.service = ctx.service
        self.tasks = ctx.tasks
        self.clock = ctx.clock
        self.forge_factory = Forge.from_environment
        self._checking: set[str] = set()
        self._check_again: set[str] = set()
        self.github_token = "not read yet"  # what the last check found (volee daemon status)

    def on_event(self, registry: Registry, event: ev.Event) -> None:
        """A change worker that stops gets its evidence read."""
        if not isinstance(event, ev.StateChanged) or event.state not in STOPPED_STATES:
            return
        agent = registry.agents.get(event.agent)
        mission = registry.missions.get(agent.mission) if agent and agent.mission else None
        if agent is not None and mission is not None and reads_evidence(mission, agent):
            self.schedule(agent.id)

    def catch_up(self, registry: Registry, mission: Mission) -> None:
        """At start: read the evidence of the mission's stopped workers never read."""
        if mission.kind is not MissionKind.CHANGE:
            return
        for worker in workers_of(registry, mission):
            if worker.delivery is None and worker.state not in (
                AgentState.LAUNCHING,
                AgentState.WORKING,
            ):
                self.schedule(worker.id)

    def schedule(self, agent_id: str) -> None:
        """Read the agent's delivery evidence soon (once more if a check is running)."""
        if agent_id in self._checking:
            self._check_again.add(agent_id)
            return
        self._checking.add(agent_id)

        async def loop() -> None:
            try:
                while True:
                    self._check_again.discard(agent_id)
                    await self.check(agent_id)
                    if agent_id not in self._check_again:
                        return
            finally:
                self._checking.discard(agent_id)

        self.tasks.spawn(loop(), f"git check {agent_id}")

    def forge(self) -> Forge:
        """A forge client with the keyring's token as it is now (this blocks: call in a thread)."""
        forge = self.forge_factory()
        self.github_token = forge.token_note or ("found" if forge.token else "none")
        return forge

    async def check(self, agent_id: str) -> Delivery | None:
        """Read and record the agent's evidence; ``checked_at`` is when the check began."""
        began = self.clock.now()
        registry = self.service.current()
        agent = registry.agents.get(agent_id)
        if agent is None:
            return None
        tree = agent.worktree or agent.cwd
        if not tree:
            return None
        mission = registry.missions.get(agent.mission) if agent.mission else None
        previous = agent.delivery
        target = git.Target(
            worktree=tree,
            branch=agent.branch,
            base=(mission.base_branch if mission else None)
            or (previous.base if previous else None),
            unmerged_tip=previous.unmerged_tip if previous else None,
        )

        def read() -> Delivery:
            found = git.read_delivery(target, began)
            if found.pushed in (PushState.NO_REMOTE,) or not found.branch:
                return found
            remote = git.remote_url_of(tree, found.branch)
            if github_slug(remote) is None:
                return found  # no forge to ask: the keyring is never touched
            forge = self.forge()  # here: the keyring may block, and this runs in a thread
            known, pr = forge.pull_request(remote, found.branch)
            return replace(found, pull_request=pr, pull_request_known=known)

        delivery = await asyncio.to_thread(read)
        if agent_id not in self.service.current().agents:
            return None
        await self.service.commit(
            [ev.DeliveryUpdated(at=self.clock.now(), agent=agent_id, delivery=delivery)]
        )
        return delivery

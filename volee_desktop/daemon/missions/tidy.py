"""``volee tidy``: remove the worktrees whose work is delivered; branches are always kept.

The rule is ``core.delivery.tidy_check``; this module reads stale evidence
first (evidence older than the agent's last change proves nothing), then
removes what the rule allows, unless asked for a dry run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ...core.delivery import tidy_check
from ...core.model import Agent
from ...core.supervisor import reported
from ...hosts.records import host_alive
from ...ipc.methods import Method
from ...ipc.server import Connection, MethodTable
from .. import git
from ..agents.host_io import read_quietly
from ..agents.runner import AgentsRunner
from ..params import decoder
from ..service import Service
from .evidence import Evidence
from .params import TidyParams
from .results import Tidied


def stale(agent: Agent) -> bool:
    """Whether the agent's evidence was read before its last change (or never)."""
    d = agent.delivery
    last = max(agent.state_since, agent.activity_at or 0.0)
    return d is None or d.checked_at < last


class Tidy:
    """The ``tidy`` IPC method."""

    def __init__(
        self, service: Service, evidence: Evidence, methods: MethodTable, agents: AgentsRunner
    ) -> None:
        self.service = service
        self.evidence = evidence
        self.agents = agents  # a tidied agent's program is ended and its host record goes
        methods.add(Method.TIDY, self.api_tidy, decoder(TidyParams))

    async def api_tidy(self, _conn: Connection, params: TidyParams) -> list[Tidied]:
        dry_run = params.dry_run
        registry = self.service.current()
        candidates = [a for a in registry.agents.values() if a.worktree]
        for candidate in candidates:
            if stale(candidate) and Path(candidate.worktree or "").is_dir():
                await self.evidence.check(candidate.id)
        registry = self.service.current()
        out: list[Tidied] = []
        for old in candidates:
            agent = registry.agents.get(old.id)
            if agent is None or not agent.worktree:
                continue
            gone = not Path(agent.worktree).is_dir()
            mission = registry.missions.get(agent.mission) if agent.mission else None
            was_reported = mission is not None and reported(registry, mission, agent.id) is not None
            verdict = tidy_check(agent, was_reported)
            entry: Tidied = {
                "agent": agent.id,
                "name": agent.name,
                "worktree": agent.worktree,
                "branch": agent.branch,
                "removable": verdict.removable and not gone,
                "missing": ["the worktree is already gone"] if gone else list(verdict.missing),
                "removed": False,
            }
            if entry["removable"] and not dry_run:
                try:
                    # Delivered and not busy, maybe still at its prompt: a program left running
                    # in a removed folder helps nobody, and its host record would stay for ever.
                    if agent.state.live:
                        await self.agents.stop(agent, reason="tidied: its work is delivered")
                    await asyncio.to_thread(
                        git.remove_worktree, agent.repo or agent.worktree, agent.worktree
                    )
                    entry["removed"] = True
                    await asyncio.to_thread(self._drop_record, agent.id)
                except git.GitError as exc:
                    entry["missing"] = [str(exc)]
            out.append(entry)
        return out

    def _drop_record(self, agent_id: str) -> None:
        """Remove the record and log of a host whose program ended (seed: the daemon removes
        the records of agents that are forgotten or tidied); a record whose program still runs
        stays (the host needs it). A host that only lingers for late attachers needs it no
        more."""
        record = read_quietly(self.agents.record_of(agent_id))
        if record is not None and record.exit is None and host_alive(record):
            return
        self.agents.remove_record(agent_id)

"""The read-only methods: ``agents.list``, ``agents.get`` and ``agents.timeline`` (docs/ipc.md)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from ...ipc.methods import Method
from ...ipc.protocol import MAX_MESSAGE
from ...ipc.server import Connection, MethodTable
from ...store.codec import decode_event
from ...store.log import EventLog
from ..agents.timeline import TimelineItem, timeline
from ..errors import NotFound
from ..params import AgentParams, Parameters, decoder
from ..service import Service
from ..views import AgentView, OutcomeView, agent_view, listed, resolve_agent

# A timeline reply must fit in one message (with room for the envelope).
TIMELINE_BUDGET = MAX_MESSAGE - 64 * 1024


def _fit_timeline(items: list[TimelineItem], agent_id: str) -> list[TimelineItem]:
    """The newest items that fit in one reply, after a marker saying how many were left out.

    A long-lived agent has more events than one message holds; failing with too_large would
    make its timeline unreadable for good.
    """
    sizes = [len(json.dumps(item, ensure_ascii=False).encode()) + 1 for item in items]
    total = sum(sizes)
    if total <= TIMELINE_BUDGET:
        return items
    start = 0
    while total > TIMELINE_BUDGET:
        total -= sizes[start]
        start += 1
    marker: TimelineItem = {
        "seq": items[start - 1]["seq"],
        "at": items[start - 1]["at"],
        "type": "timeline-truncated",
        "agent": agent_id,
        "text": f"{start} earlier events left out (more than one reply holds); the newest follow",
    }
    return [marker, *items[start:]]


class ListParams(Parameters, frozen=True, kw_only=True):
    """``agents.list``: ``all`` lists the agents that ended too."""

    all: bool = False


class Queries:
    """Answers from the registry (and, for a timeline, the log)."""

    def __init__(
        self,
        service: Service,
        event_log: EventLog,
        methods: MethodTable,
        outcome: Callable[[str], OutcomeView | None] | None = None,
    ) -> None:
        self.service = service
        self.log = event_log
        # Each agent's plan, change and last reply, as last refreshed (daemon/missions/outcomes.py).
        self.outcome = outcome or (lambda _agent_id: None)
        methods.add(Method.AGENTS_LIST, self.agents_list, decoder(ListParams))
        methods.add(Method.AGENTS_GET, self.agents_get, decoder(AgentParams))
        methods.add(Method.AGENTS_TIMELINE, self.agents_timeline, decoder(AgentParams))

    async def agents_list(self, _conn: Connection, params: ListParams) -> list[AgentView]:
        registry = self.service.registry
        agents = listed(registry, params.all)
        return [agent_view(a, outcome=self.outcome(a.id)) for a in agents]

    async def agents_get(self, _conn: Connection, params: AgentParams) -> AgentView:
        registry = self.service.registry
        agent = resolve_agent(registry, params.agent)
        return agent_view(agent, outcome=self.outcome(agent.id))

    async def agents_timeline(self, _conn: Connection, params: AgentParams) -> list[TimelineItem]:
        registry = self.service.registry
        ref = params.agent
        try:
            agent_id = resolve_agent(registry, ref).id
        except NotFound:
            if ref in registry.names:
                agent_id = ref  # a forgotten agent's timeline is still readable
            else:
                raise
        return await asyncio.to_thread(self._timeline, agent_id)

    def _timeline(self, agent_id: str) -> list[TimelineItem]:
        needle = agent_id.encode()
        entries = (
            (r.seq, decode_event(r.type, r.version, r.payload))
            for r in self.log.read(0)
            if needle in r.payload
        )
        items = timeline(entries, agent_id, self.service.registry.name_of)
        return _fit_timeline(items, agent_id)

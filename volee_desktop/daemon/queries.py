"""The read-only methods: ``agents.list``, ``agents.get`` and ``agents.timeline`` (docs/ipc.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..ipc.protocol import MAX_MESSAGE
from ..ipc.server import Connection, MethodTable
from ..store.codec import decode_event
from ..store.log import EventLog
from .errors import NotFound
from .params import flag, text
from .service import Service
from .timeline import timeline
from .views import agent_view, listed, resolve_agent

# A timeline reply must fit in one message (with room for the envelope).
TIMELINE_BUDGET = MAX_MESSAGE - 64 * 1024


def _fit_timeline(items: list[dict[str, Any]], agent_id: str) -> list[dict[str, Any]]:
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
    marker = {
        "seq": items[start - 1]["seq"],
        "at": items[start - 1]["at"],
        "type": "timeline-truncated",
        "agent": agent_id,
        "text": f"{start} earlier events left out (more than one reply holds); the newest follow",
    }
    return [marker, *items[start:]]


class Queries:
    """Answers from the registry (and, for a timeline, the log)."""

    def __init__(self, service: Service, event_log: EventLog, methods: MethodTable) -> None:
        self.service = service
        self.log = event_log
        methods.add("agents.list", self.agents_list)
        methods.add("agents.get", self.agents_get)
        methods.add("agents.timeline", self.agents_timeline)

    async def agents_list(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.registry
        return [agent_view(a) for a in listed(registry, flag(params, "all", False))]

    async def agents_get(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.registry
        return agent_view(resolve_agent(registry, text(params, "agent") or ""))

    async def agents_timeline(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.registry
        ref = text(params, "agent") or ""
        try:
            agent_id = resolve_agent(registry, ref).id
        except NotFound:
            if ref in registry.names:
                agent_id = ref  # a forgotten agent's timeline is still readable
            else:
                raise
        return await asyncio.to_thread(self._timeline, agent_id)

    def _timeline(self, agent_id: str) -> list[dict[str, Any]]:
        needle = agent_id.encode()
        entries = (
            (r.seq, decode_event(r.type, r.version, r.payload))
            for r in self.log.read(0)
            if needle in r.payload
        )
        items = timeline(entries, agent_id, self.service.registry.name_of)
        return _fit_timeline(items, agent_id)

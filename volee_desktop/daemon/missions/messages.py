"""Messages: the mission thread, volee's notices, posting and reading, delivery into sessions.

Posting checks routing (``Registry.check_route``) for every recipient before
anything is recorded; a message to an agent is then typed into its session
(or resumes it) in the background, and one that cannot be delivered stays
unread.  The ``messages.post`` and ``messages.read`` IPC methods live here
(docs/ipc.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ...core import events as ev
from ...core.ids import MESSAGE, THREAD
from ...core.model import HUMAN, VOLEE, Message, MessageKind, Mission, ThreadKind
from ...core.registry import Registry
from ...core.supervisor import Notice
from ...ipc.methods import Method
from ...ipc.protocol import ErrorCode, IpcError
from ...ipc.server import Connection
from ...store.codec import to_builtins
from ..context import Context
from ..errors import Refused
from ..ids import fresh
from ..params import decoder
from ..threads import direct_thread, posted
from ..views import resolve_agent
from .params import PostParams, ReadParams
from .results import MessageView, Posted

log = logging.getLogger(__name__)


def message_view(registry: Registry, message_id: str) -> MessageView:
    """A message with its sender's and recipients' names."""
    message = registry.messages[message_id]
    data: dict[str, Any] = to_builtins(message)
    data["sender_name"] = party_name(registry, message.sender)
    data["recipient_names"] = [party_name(registry, r) for r in message.recipients]
    return cast(MessageView, data)  # the Message's fields, as msgspec writes them


def party_name(registry: Registry, party: str) -> str:
    """``human``, ``volee`` or the agent's name."""
    return party if party in (HUMAN, VOLEE) else registry.name_of(party) or party


def reachable(registry: Registry, parties: Iterable[str]) -> tuple[str, ...]:
    """The parties that can still be written to, each once; the human when none can."""
    # A forgotten coordinator can no longer be written to: the person hears it instead.
    known = tuple(dict.fromkeys(p for p in parties if p in (HUMAN, VOLEE) or p in registry.agents))
    return known or (HUMAN,)


@dataclass
class Outbox:
    """Events that post volee's notices, and what to type into agents once they are committed."""

    events: list[ev.Event] = field(default_factory=list)
    deliveries: list[tuple[str, str, str]] = field(default_factory=list)  # agent, text, message


class Deliverer(Protocol):
    """Types a message into an agent's session, or resumes it with it (``AgentsRunner``)."""

    async def deliver(self, agent_id: str, text: str, message_id: str | None) -> object:
        """Deliver ``text``; raises when it cannot (the message stays unread)."""
        ...


class Messages:
    """The mission thread, notices, delivery, and the messages IPC methods."""

    def __init__(self, ctx: Context, agents: Deliverer) -> None:
        self.service = ctx.service
        self.tasks = ctx.tasks
        self.clock = ctx.clock
        self.agents = agents
        ctx.methods.add(Method.MESSAGES_POST, self.api_post, decoder(PostParams))
        ctx.methods.add(Method.MESSAGES_READ, self.api_read, decoder(ReadParams))

    # --- threads and notices ---------------------------------------------------------------

    def mission_thread(
        self, registry: Registry, mission: Mission, at: float
    ) -> tuple[str, list[ev.Event]]:
        """The mission's thread, and the event opening it when it has none yet."""
        if mission.thread is not None and mission.thread in registry.threads:
            return mission.thread, []
        existing = next(
            (
                t.id
                for t in registry.threads.values()
                if t.kind is ThreadKind.MISSION and t.mission == mission.id
            ),
            None,
        )
        if existing is not None:
            return existing, []
        thread = fresh(THREAD)
        opened = ev.ThreadOpened(
            at=at, thread=thread, kind=ThreadKind.MISSION, mission=mission.id, parties=(HUMAN,)
        )
        return thread, [opened]

    def notices(
        self, registry: Registry, mission: Mission, notices: Iterable[Notice], at: float
    ) -> Outbox:
        """volee's notices in the mission thread (opened if needed), not yet committed."""
        out = Outbox()
        notices = list(notices)
        if not notices:
            return out
        thread, out.events = self.mission_thread(registry, mission, at)
        for notice in notices:
            recipients = reachable(registry, notice.recipients)
            message_id = fresh(MESSAGE)
            out.events.append(
                ev.MessagePosted(
                    at=at,
                    message=message_id,
                    thread=thread,
                    sender=VOLEE,
                    recipients=recipients,
                    kind=MessageKind.NOTICE,
                    body=notice.body,
                    references=notice.references,
                )
            )
            for recipient in recipients:
                if recipient in registry.agents:
                    out.deliveries.append((recipient, f"[volee] {notice.body}", message_id))
        return out

    def deliver(self, outbox: Outbox) -> None:
        """Type the committed notices of ``outbox`` into their agents' sessions."""
        for agent_id, body, message_id in outbox.deliveries:
            self.deliver_later(agent_id, body, message_id)

    def deliver_later(self, agent_id: str, body: str, message_id: str) -> None:
        """Type a message into an agent's session (or resume it with it), in the background."""

        async def deliver() -> None:
            agent = self.service.current().agents.get(agent_id)
            if agent is None or agent.held_for_good:
                return
            try:
                await self.agents.deliver(agent_id, body, message_id)
            except Exception as exc:  # a message that cannot be delivered stays unread
                log.warning("message %s not delivered to %s: %s", message_id, agent.name, exc)

        self.tasks.spawn(deliver(), f"deliver {message_id}")

    # --- the messages API --------------------------------------------------------------------

    def _party(self, registry: Registry, ref: str) -> str:
        if ref in (HUMAN, VOLEE):
            return ref
        return resolve_agent(registry, ref).id

    async def api_post(self, _conn: Connection, params: PostParams) -> Posted:
        registry = self.service.current()
        sender = self._party(registry, params.sender or HUMAN)
        recipients = tuple(self._party(registry, r) for r in params.to)
        if not recipients:
            raise IpcError(
                ErrorCode.BAD_REQUEST,
                "parameter 'to' must name a recipient: an agent's name or id, or human",
            )
        body = params.body
        kind = params.kind
        for recipient in recipients:
            problem = registry.check_route(sender, recipient)
            if problem:
                raise Refused(f"{problem}; write to one of them, or to the human, instead")
        now = self.clock.now()
        events: list[ev.Event] = []
        thread = params.thread
        if thread is None:
            thread, events = self._thread_for(registry, sender, recipients, now)
        message = posted(
            thread,
            sender,
            recipients,
            body,
            now,
            kind,
            references=params.references,
            reply_to=params.reply_to,
            options=params.options,
            approving=params.approving,
        )
        message_id = message.message
        events.append(message)
        await self.service.commit(events)
        who = party_name(registry, sender)
        for recipient in recipients:
            if recipient in registry.agents and recipient != sender:
                typed = (
                    f"[message from {who} ({message_id})] {body}\n"
                    "(answer with the volee tool post_message)"
                )
                self.deliver_later(recipient, typed, message_id)
        return {"message": message_id, "thread": thread}

    def _thread_for(
        self, registry: Registry, sender: str, recipients: tuple[str, ...], at: float
    ) -> tuple[str, list[ev.Event]]:
        parties = {sender, *recipients}
        members = [registry.agents[p] for p in parties if p in registry.agents]
        missions = {a.mission for a in members}
        if len(missions) == 1 and (mission_id := missions.pop()) is not None:
            mission = registry.missions.get(mission_id)
            if mission is not None:
                return self.mission_thread(registry, mission, at)
        return direct_thread(registry, tuple(sorted(parties)), at)

    async def api_read(self, _conn: Connection, params: ReadParams) -> list[MessageView]:
        registry = self.service.current()
        reader = self._party(registry, params.agent or HUMAN)
        unread_only = params.unread_only

        def unread(m: Message) -> bool:
            receipt = m.receipts.get(reader)
            return receipt is None or receipt.read_at is None

        mine = sorted(
            (
                m
                for m in registry.messages.values()
                if reader in m.recipients and (not unread_only or unread(m))
            ),
            key=lambda m: m.at,  # then log order: ids of one millisecond are not ordered
        )
        limit = params.limit
        if limit is not None:
            mine = mine[-limit:]
        views = [message_view(registry, m.id) for m in mine]
        fresh_ones = [m for m in mine if unread(m)]
        if params.mark and fresh_ones:
            now = self.clock.now()
            await self.service.commit(
                [ev.MessageRead(at=now, message=m.id, recipient=reader) for m in fresh_ones]
            )
        return views

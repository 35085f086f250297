"""Given/when helpers and short event builders for the core tests."""

from __future__ import annotations

import copy
from typing import Any

from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT, MESSAGE, MISSION, THREAD, new_id
from volee_desktop.core.model import HUMAN, Harness, MissionKind, ThreadKind
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

T0 = 1_700_000_000.0


def _id(prefix: str, n: int) -> str:
    # Time and randomness both derived from n: ids are stable and sort by n.
    return new_id(prefix, 1_700_000_000_000 + n, n.to_bytes(10, "big"))


def agent_id(n: int) -> str:
    """The n-th agent id of a test."""
    return _id(AGENT, n)


def mission_id(n: int) -> str:
    """The n-th mission id of a test."""
    return _id(MISSION, n)


def thread_id(n: int) -> str:
    """The n-th thread id of a test."""
    return _id(THREAD, n)


def message_id(n: int) -> str:
    """The n-th message id of a test."""
    return _id(MESSAGE, n)


A1, A2, A3, A4 = (agent_id(n) for n in (1, 2, 3, 4))
M1, M2 = mission_id(1), mission_id(2)
TH = thread_id(1)


def given(*events: ev.Event) -> Registry:
    """A registry built from events that must all be valid."""
    registry = Registry()
    for event in events:
        reason = registry.validate(event)
        assert reason is None, f"given {event.TYPE} was refused: {reason}"
        registry.apply(event)
    return registry


def when(registry: Registry, event: ev.Event) -> str | None:
    """Validate then apply ``event``; the refusal reason, or None when it was applied.

    A refused event must leave the registry exactly as it was.
    """
    before = copy.deepcopy(registry)
    reason = registry.validate(event)
    if reason is None:
        registry.apply(event)
    else:
        assert reason.strip(), "a refusal needs a reason"
        assert registry == before, f"refused {event.TYPE} changed the registry"
    return reason


def accepted(registry: Registry, event: ev.Event) -> None:
    """``when``, asserting the event was accepted."""
    reason = when(registry, event)
    assert reason is None, f"{event.TYPE} was refused: {reason}"


def registered(
    agent: str, name: str | None = None, *, at: float = T0, **fields: Any
) -> ev.AgentRegistered:
    """agent-registered with a name derived from the id unless given."""
    fields.setdefault("harness", Harness.CLAUDE)
    return ev.AgentRegistered(at=at, agent=agent, name=name or f"agent-{agent[-4:]}", **fields)


def linked(agent: str, session: str, *, at: float = T0) -> ev.SessionLinked:
    """session-linked."""
    return ev.SessionLinked(at=at, agent=agent, session=session)


def state(agent: str, new: AgentState, *, at: float = T0, detail: str = "") -> ev.StateChanged:
    """state-changed."""
    return ev.StateChanged(at=at, agent=agent, state=new, detail=detail)


def mission(
    mission_: str = M1, *, at: float = T0, requested_by: str = HUMAN, **fields: Any
) -> ev.MissionCreated:
    """mission-created (a change mission unless told)."""
    fields.setdefault("kind", MissionKind.CHANGE)
    return ev.MissionCreated(
        at=at, mission=mission_, goal="ship it", requested_by=requested_by, **fields
    )


def thread(thread_: str = TH, *, at: float = T0) -> ev.ThreadOpened:
    """thread-opened (a direct thread)."""
    return ev.ThreadOpened(at=at, thread=thread_, kind=ThreadKind.DIRECT)


def posted(
    message: str, sender: str, *recipients: str, at: float = T0, **fields: Any
) -> ev.MessagePosted:
    """message-posted in the test thread."""
    return ev.MessagePosted(
        at=at, message=message, thread=TH, sender=sender, recipients=recipients, **fields
    )

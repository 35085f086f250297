"""Hypothesis: replay determinism, refusals that change nothing, invariants, urgency order."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from volee_desktop.core import events as ev
from volee_desktop.core.model import (
    HUMAN,
    VOLEE,
    Agent,
    Harness,
    MessageKind,
    MissionKind,
    MissionStatus,
    ThreadKind,
    Verdict,
    session_key,
)
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .support import T0, agent_id, message_id, mission_id, thread_id

UNSEEN = agent_id(999)
FAST = settings(max_examples=60, deadline=None)
SESSIONS = ("s1", "s2", "s3", "s4")
HARNESSES = (Harness.CLAUDE, Harness.CODEX)
STATES = tuple(AgentState)
Draw = Callable[[st.SearchStrategy[Any]], Any]


class _Model:
    """What the generator knows: the registry so far and counters for fresh ids."""

    def __init__(self) -> None:
        self.registry = Registry()
        self.agents = 0
        self.missions = 0
        self.messages = 0
        self.at = T0

    def agent(self, draw: Draw) -> str:
        # Mostly agents that exist; sometimes a forgotten/expired one or one never seen.
        live = sorted(self.registry.agents)
        return draw(st.sampled_from([*live, *live, *live, *sorted(self.registry.names), UNSEEN]))

    def mission(self, draw: Draw) -> str:
        known = sorted(self.registry.missions)
        return draw(st.sampled_from([*known, *known, *known, mission_id(999)]))

    def maybe(self, draw: Draw, pick: Callable[[Draw], str]) -> str | None:
        return None if draw(st.integers(0, 2)) == 0 else pick(draw)

    def thread(self, draw: Draw) -> str:
        known = sorted(self.registry.threads)
        return draw(st.sampled_from([*known, *known, *known, thread_id(9)]))

    def party(self, draw: Draw) -> str:
        return draw(st.sampled_from([HUMAN, VOLEE, *sorted(self.registry.agents)]))


def _agent_event(draw: Draw, m: _Model, kind: str) -> ev.Event:
    at, agent = m.at, m.agent(draw)
    if kind == "link":
        return ev.SessionLinked(at=at, agent=agent, session=draw(st.sampled_from(SESSIONS)))
    if kind == "release":
        return ev.SessionReleased(at=at, agent=agent, session=draw(st.sampled_from(SESSIONS)))
    if kind == "state":
        return ev.StateChanged(
            at=at,
            agent=agent,
            state=draw(st.sampled_from(STATES)),
            detail=draw(st.sampled_from(["", "Bash"])),
            progress=draw(st.booleans()),
        )
    if kind == "forget":
        return ev.AgentForgotten(at=at, agent=agent)
    if kind == "expire":
        return ev.AgentExpired(at=at, agent=agent)
    if kind == "stop":
        return ev.StopRequested(at=at, agent=agent)
    if kind == "rename":
        return ev.AgentRenamed(at=at, agent=agent, name=draw(st.sampled_from(["x", "y", " "])))
    if kind == "membership":
        return ev.MembershipChanged(
            at=at, agent=agent, mission=m.mission(draw), joined=draw(st.booleans())
        )
    if kind == "interrupt":
        return ev.InterruptionDetected(at=at, agent=agent, cause="machine-restarted")
    if kind == "host":
        return ev.HostStarted(at=at, agent=agent, host_pid=100, program_pid=101)
    if kind == "restart":
        return ev.RestartScheduled(
            at=at, agent=agent, due_at=at + 1, attempt=draw(st.integers(1, 3)), budget=3, reason="x"
        )
    if kind == "cancel":
        return ev.RestartCancelled(at=at, agent=agent, reason="stop")
    if kind == "reset":
        return ev.RestartBudgetReset(at=at, agent=agent)
    if kind == "decide":
        return ev.RecoveryDecided(at=at, agent=agent, outcome="stopped", rule=6, reason="x")
    assert kind == "context"
    return ev.ContextUsed(at=at, agent=agent, share=draw(st.sampled_from([0.0, 0.4, 1.5])))


def _other_event(draw: Draw, m: _Model, kind: str) -> ev.Event:
    at, r = m.at, m.registry
    if kind == "register":
        m.agents += 1
        reuse = draw(st.integers(0, 4)) == 0
        fresh = m.agent(draw) if reuse else agent_id(m.agents)
        return ev.AgentRegistered(
            at=at,
            agent=fresh,
            name=draw(st.sampled_from(["alpha", "beta", "gamma", "delta", ""])),
            harness=draw(st.sampled_from(HARNESSES)),
            mission=m.maybe(draw, m.mission) if m.registry.missions else None,
            parent=m.maybe(draw, m.agent) if r.agents else None,
            state=draw(st.sampled_from([AgentState.LAUNCHING, AgentState.WORKING])),
            launched_by_volee=draw(st.booleans()),
        )
    if kind == "mission":
        m.missions += 1
        return ev.MissionCreated(
            at=at,
            mission=mission_id(m.missions),
            goal="goal",
            kind=draw(st.sampled_from(MissionKind)),
            requested_by=m.party(draw),
        )
    if kind == "mission-update":
        return ev.MissionUpdated(
            at=at,
            mission=m.mission(draw),
            status=draw(st.one_of(st.none(), st.sampled_from(MissionStatus))),
            coordinator=m.maybe(draw, m.agent),
        )
    if kind == "assess":
        return ev.WorkerAssessed(
            at=at, mission=m.mission(draw), agent=m.agent(draw), verdict=Verdict.DELIVERED
        )
    if kind == "thread" or (kind == "message" and not r.threads):
        return ev.ThreadOpened(
            at=at, thread=thread_id(draw(st.integers(1, 2))), kind=ThreadKind.DIRECT
        )
    if kind == "message":
        m.messages += 1
        question = draw(st.booleans())
        options: tuple[str, ...] = ("yes", "no") if question else ()
        return ev.MessagePosted(
            at=at,
            message=message_id(m.messages),
            thread=m.thread(draw),
            sender=m.party(draw),
            recipients=tuple(
                draw(
                    st.lists(
                        st.sampled_from([HUMAN, VOLEE, *sorted(r.agents), UNSEEN]),
                        min_size=draw(st.sampled_from([0, 1, 1, 1])),
                        max_size=2,
                    )
                )
            ),
            kind=MessageKind.QUESTION if question else MessageKind.TEXT,
            options=options,
            approving="yes" if question else None,
            reply_to=draw(st.sampled_from([None, None, *sorted(r.messages), "msg_x"])),
            chosen=draw(st.sampled_from([None, "yes", "no"])),
        )
    assert kind in ("delivered", "read")
    known = sorted(r.messages)
    message = draw(st.sampled_from([*known, *known, *known, message_id(999)]))
    recipients = r.messages[message].recipients if message in r.messages else ()
    recipient = draw(st.sampled_from([*recipients, *recipients, HUMAN]))
    cls = ev.MessageDelivered if kind == "delivered" else ev.MessageRead
    return cls(at=at, message=message, recipient=recipient)


AGENT_KINDS = (
    "link", "release", "state", "forget", "expire", "stop", "rename", "membership",
    "interrupt", "host", "restart", "cancel", "reset", "decide", "context",
)  # fmt: skip
OTHER_KINDS = (
    "register", "register", "register", "mission", "mission", "mission-update",
    "mission-update", "assess", "thread", "message", "message", "delivered", "read",
)  # fmt: skip


@st.composite
def histories(draw: Draw, max_events: int = 60) -> list[ev.Event]:
    """Event sequences built against a model: mostly valid, with refusals mixed in."""
    m = _Model()
    history: list[ev.Event] = []
    for _ in range(draw(st.integers(10, max_events))):
        # Equal times happen (a batch shares its time): ties must not make replay ambiguous.
        m.at += draw(st.sampled_from([0.0, 0.0, 1.0, 2.5]))
        kind = draw(st.sampled_from(AGENT_KINDS + OTHER_KINDS))
        if kind in AGENT_KINDS and m.registry.names:
            event = _agent_event(draw, m, kind)
        else:
            event = _other_event(draw, m, kind if kind in OTHER_KINDS else "register")
        history.append(event)
        if m.registry.validate(event) is None:
            m.registry.apply(event)
    return history


def replay(history: Sequence[ev.Event]) -> Registry:
    """Validate then apply each event, skipping refused ones (as the daemon does)."""
    registry = Registry()
    for event in history:
        if registry.validate(event) is None:
            registry.apply(event)
            check_invariants(registry)
    return registry


def check_invariants(r: Registry) -> None:
    """Facts that hold after any sequence of valid events."""
    for agent in r.agents.values():
        assert r.names[agent.id] == agent.name
        assert len(set(agent.sessions)) == len(agent.sessions), agent.sessions
        for session in agent.sessions:
            # A session never belongs to two agents: the index and the lineage agree.
            assert r.sessions[session_key(agent.harness, session)] == agent.id
        if agent.mission is not None and r.missions[agent.mission].status.ended:
            assert agent.held_for_good, f"{agent.id} is in an ended mission without a hold"
    owned = {key for key, owner in r.sessions.items() if owner in r.agents}
    assert owned == set(r.sessions), "the session index names an agent that is gone"
    assert not set(r.sessions) & set(r.ignored), "a session both owned and ignored"


@FAST
@given(history=histories())
def test_replay_is_deterministic(history: list[ev.Event]) -> None:
    assert replay(history) == replay(history)


@FAST
@given(history=histories(), data=st.data())
def test_replay_through_fork_working_copies_gives_the_same_registry(
    history: list[ev.Event], data: st.DataObject
) -> None:
    # The daemon validates a batch on a fork, makes it durable, then applies it for real.
    base = Registry()
    rest = list(history)
    while rest:
        size = data.draw(st.integers(1, 8), label="batch size")
        batch, rest = rest[:size], rest[size:]
        before = copy.deepcopy(base)
        work = base.fork()
        kept = []
        for event in batch:
            if work.validate(event) is None:
                work.apply(event)
                kept.append(event)
        assert base == before, "changing a fork changed the registry it came from"
        for event in kept:
            assert base.validate(event) is None
            base.apply(event)
        assert base == work
    assert base == replay(history)


@FAST
@given(history=histories())
def test_refused_events_leave_the_registry_unchanged(history: list[ev.Event]) -> None:
    registry = Registry()
    for event in history:
        before = copy.deepcopy(registry)
        reason = registry.validate(event)
        if reason is None:
            registry.apply(event)
            check_invariants(registry)
        else:
            assert reason.strip()
            assert registry == before, f"validating refused {event.TYPE} changed the registry"


# --- urgency order --------------------------------------------------------------------------


@st.composite
def agent_lists(draw: Draw) -> list[Agent]:
    """Agents with few distinct states and times, so that ties are common."""
    numbers = draw(st.lists(st.integers(1, 60), unique=True, max_size=15))
    return [
        Agent(
            id=agent_id(n),
            name=f"a{n}",
            harness=Harness.CLAUDE,
            state=draw(st.sampled_from(STATES)),
            state_since=draw(st.sampled_from([T0, T0 + 1, T0 + 2])),
        )
        for n in numbers
    ]


@FAST
@given(agents=agent_lists(), data=st.data())
def test_urgency_order_is_total_and_stable(agents: list[Agent], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(agents), label="input order")
    ordered = Registry().by_urgency(agents)
    assert Registry().by_urgency(shuffled) == ordered
    assert Registry(agents={a.id: a for a in shuffled}).by_urgency() == ordered
    assert sorted(a.id for a in ordered) == sorted(a.id for a in agents)
    for first, second in itertools.pairwise(ordered):
        assert first.state.urgency <= second.state.urgency
        if first.state is second.state:
            # The most recent change first within a state.
            assert first.state_since >= second.state_since

"""The registry: the state of every agent, mission, thread and message, as a fold of events.

``validate(event)`` says why an event would be refused (``None`` when it is
fine); ``apply(event)`` folds it in.  Entities are frozen and replaced, so
``fork()`` (a shallow copy of the dicts) gives the daemon a cheap working copy
to validate a batch against before the batch is durable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from . import events as ev
from .ids import AGENT, MESSAGE, MISSION, THREAD, is_id
from .model import (
    HUMAN,
    VOLEE,
    Agent,
    Assessment,
    Location,
    Message,
    MessageKind,
    Mission,
    PendingRestart,
    Receipt,
    Thread,
    session_key,
)
from .states import AgentState

_T = TypeVar("_T")

HELD_BY_STOP = "stopped by you"
HELD_BY_MISSION = "mission over"
INTERRUPTION_MEMORY = 5


@dataclass
class Registry:
    """Everything volee knows, rebuilt by applying events in order."""

    agents: dict[str, Agent] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    missions: dict[str, Mission] = field(default_factory=dict)
    threads: dict[str, Thread] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    seq: int = 0

    # --- queries ----------------------------------------------------------------------------

    def fork(self) -> Registry:
        """A working copy that can be changed without touching this registry."""
        return Registry(
            agents=dict(self.agents),
            sessions=dict(self.sessions),
            ignored=dict(self.ignored),
            names=dict(self.names),
            missions=dict(self.missions),
            threads=dict(self.threads),
            messages=dict(self.messages),
            seq=self.seq,
        )

    def name_of(self, agent_id: str) -> str | None:
        """The name of any agent ever registered, forgotten ones included."""
        return self.names.get(agent_id)

    def owner_of(self, harness: str, session_id: str) -> str | None:
        """The agent a session belongs to, if any."""
        return self.sessions.get(session_key(harness, session_id))

    def is_ignored(self, harness: str, session_id: str) -> bool:
        """Whether a session belonged to a forgotten agent (and is ignored from then on)."""
        return session_key(harness, session_id) in self.ignored

    def by_urgency(self, agents: Iterable[Agent] | None = None) -> list[Agent]:
        """Agents most urgent first; the most recent change first within a state."""
        pool = self.agents.values() if agents is None else agents
        return sorted(pool, key=urgency_key)

    def mission_agents(self, mission_id: str) -> list[Agent]:
        """The agents taking part in a mission."""
        return [a for a in self.agents.values() if a.mission == mission_id]

    def answer_to(self, question_id: str) -> Message | None:
        """The human's latest answer to a question, if any."""
        best: Message | None = None
        for message in self.messages.values():
            if (
                message.reply_to == question_id
                and message.sender == HUMAN
                and (best is None or (message.at, message.id) >= (best.at, best.id))
            ):
                best = message
        return best

    def check_route(self, sender: str, recipient: str) -> str | None:
        """Why ``sender`` may not write to ``recipient`` (``None``: it may)."""
        return check_route(self, sender, recipient)

    # --- validation ------------------------------------------------------------------------

    def validate(self, event: ev.Event) -> str | None:
        """Why the event would be refused, or ``None`` when it can be applied."""
        check = _VALIDATORS.get(type(event))
        if check is None:
            return f"unknown event type {type(event).__name__}"
        if isinstance(event, ev.AgentEvent) and not isinstance(event, ev.AgentRegistered):
            problem = self._known_agent(event.agent)
            if problem:
                return problem
        return check(self, event)

    def _known_agent(self, agent_id: str) -> str | None:
        if agent_id in self.agents:
            return None
        if agent_id in self.names:
            return f"agent {self.names[agent_id]} ({agent_id}) was forgotten"
        return f"unknown agent {agent_id!r}"

    def _party(self, party: str) -> str | None:
        if party in (HUMAN, VOLEE):
            return None
        return self._known_agent(party)

    # --- folding ---------------------------------------------------------------------------

    def apply(self, event: ev.Event) -> None:
        """Fold one (valid) event into the registry."""
        _APPLIERS[type(event)](self, event)

    def _put(self, agent: Agent) -> None:
        self.agents[agent.id] = agent


_FIELDS: dict[type, frozenset[str]] = {}


def _evolve(obj: _T, **changes: Any) -> _T:
    """``dataclasses.replace`` without re-running ``__init__`` (replay applies a million events).

    Only valid for the frozen, slot-less entities of ``model.py``, whose fields need no
    validation: a new instance shares the old one's attribute dict, updated.
    """
    cls = type(obj)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in fields(cls))  # type: ignore[arg-type]
    if not changes.keys() <= names:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(changes.keys() - names)}")
    new = object.__new__(cls)
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


def urgency_key(agent: Agent) -> tuple[int, float, str]:
    """Sort key: state urgency, then the most recent change first, then the id (total)."""
    return (agent.state.urgency, -agent.state_since, agent.id)


def check_route(registry: Registry, sender: str, recipient: str) -> str | None:
    """Routing (seed 002): who may write to whom."""
    if sender in (HUMAN, VOLEE):
        return None
    if recipient in (HUMAN, VOLEE):
        return None
    src = registry.agents.get(sender)
    dst = registry.agents.get(recipient)
    if src is None:
        return f"unknown sender {sender!r}"
    if dst is None:
        return f"unknown recipient {recipient!r}"
    if src.mission is not None and src.mission == dst.mission:
        return None
    if src.parent == dst.id or dst.parent == src.id:
        return None
    if src.mission is not None:
        mission = registry.missions.get(src.mission)
        if mission is not None and recipient in (mission.coordinator, mission.requested_by):
            return None
    return (
        f"{src.name} may not write to {dst.name}: agents write to people, to members of their "
        "mission, their parent, their children, their mission's coordinator and the agent that "
        "requested their mission"
    )


# --- validators ---------------------------------------------------------------------------


def _v_ok(_r: Registry, _e: Any) -> str | None:
    return None


def _v_registered(r: Registry, e: ev.AgentRegistered) -> str | None:
    if not is_id(e.agent, AGENT):
        return f"agent id {e.agent!r} is not an ag_ ULID"
    if e.agent in r.names:
        return f"agent id {e.agent} is already used"
    if not e.name.strip():
        return "an agent needs a non-empty name"
    if e.mission is not None:
        mission = r.missions.get(e.mission)
        if mission is None:
            return f"unknown mission {e.mission!r}"
        # An agent joining an ended mission would be one of its agents without the hold.
        if mission.status.ended:
            return f"mission {e.mission} is over ({mission.status}); it takes no new agents"
    if e.parent is not None and e.parent not in r.names:
        return f"unknown parent agent {e.parent!r}"
    return None


def _v_session(r: Registry, e: ev.SessionLinked) -> str | None:
    if not e.session:
        return "a session needs its harness id"
    agent = r.agents[e.agent]
    key = session_key(agent.harness, e.session)
    if key in r.ignored:
        gone = r.ignored[key]
        return f"session {e.session} belonged to forgotten agent {r.names.get(gone, gone)}"
    owner = r.sessions.get(key)
    if owner is not None and owner != e.agent:
        return f"session {e.session} already belongs to agent {r.names.get(owner, owner)} ({owner})"
    return None


def _v_released(r: Registry, e: ev.SessionReleased) -> str | None:
    agent = r.agents[e.agent]
    if session_key(agent.harness, e.session) not in r.sessions or e.session not in agent.sessions:
        return f"session {e.session} does not belong to agent {agent.name}"
    return None


def _v_renamed(_r: Registry, e: ev.AgentRenamed) -> str | None:
    return None if e.name.strip() else "a new name cannot be empty"


def _v_context(_r: Registry, e: ev.ContextUsed) -> str | None:
    return None if 0.0 <= e.share <= 1.0 else f"context share {e.share} is outside 0..1"


def _v_membership(r: Registry, e: ev.MembershipChanged) -> str | None:
    mission = r.missions.get(e.mission)
    if mission is None:
        return f"unknown mission {e.mission!r}"
    if e.joined and mission.status.ended:
        return f"mission {e.mission} is over"
    return None


def _v_mission_created(r: Registry, e: ev.MissionCreated) -> str | None:
    if not is_id(e.mission, MISSION):
        return f"mission id {e.mission!r} is not an ms_ ULID"
    if e.mission in r.missions:
        return f"mission id {e.mission} is already used"
    if not e.goal.strip():
        return "a mission needs a goal"
    return None


def _v_mission_updated(r: Registry, e: ev.MissionUpdated) -> str | None:
    mission = r.missions.get(e.mission)
    if mission is None:
        return f"unknown mission {e.mission!r}"
    if mission.status.ended and e.status is not None and e.status != mission.status:
        return f"mission {e.mission} is over ({mission.status}); it cannot become {e.status}"
    if e.coordinator is not None and e.coordinator not in r.agents:
        return f"unknown coordinator {e.coordinator!r}"
    if e.report is not None and e.report not in r.messages:
        return f"unknown report message {e.report!r}"
    return None


def _v_assessed(r: Registry, e: ev.WorkerAssessed) -> str | None:
    if e.mission not in r.missions:
        return f"unknown mission {e.mission!r}"
    return r._known_agent(e.agent)


def _v_thread(r: Registry, e: ev.ThreadOpened) -> str | None:
    if not is_id(e.thread, THREAD):
        return f"thread id {e.thread!r} is not a th_ ULID"
    if e.thread in r.threads:
        return f"thread id {e.thread} is already used"
    if e.mission is not None and e.mission not in r.missions:
        return f"unknown mission {e.mission!r}"
    return None


def _v_message(r: Registry, e: ev.MessagePosted) -> str | None:
    if not is_id(e.message, MESSAGE):
        return f"message id {e.message!r} is not a msg_ ULID"
    if e.message in r.messages:
        return f"message id {e.message} is already used"
    if e.thread not in r.threads:
        return f"unknown thread {e.thread!r}"
    problem = r._party(e.sender)
    if problem:
        return f"sender: {problem}"
    if not e.recipients:
        return "a message needs at least one recipient"
    for recipient in e.recipients:
        problem = r._party(recipient) or check_route(r, e.sender, recipient)
        if problem:
            return problem
    if e.reply_to is not None and e.reply_to not in r.messages:
        return f"reply to unknown message {e.reply_to!r}"
    if e.kind is MessageKind.QUESTION and not e.options:
        return "a question needs options"
    if e.approving is not None and e.approving not in e.options:
        return f"approving option {e.approving!r} is not one of the options"
    return None


def _v_receipt(r: Registry, e: ev.MessageDelivered | ev.MessageRead) -> str | None:
    message = r.messages.get(e.message)
    if message is None:
        return f"unknown message {e.message!r}"
    if e.recipient not in message.recipients:
        return f"{e.recipient} is not a recipient of {e.message}"
    return None


_VALIDATORS: dict[type, Callable[[Registry, Any], str | None]] = {
    ev.AgentRegistered: _v_registered,
    ev.SessionLinked: _v_session,
    ev.StateChanged: _v_ok,
    ev.ActivityRecorded: _v_ok,
    ev.WorkspaceUpdated: _v_ok,
    ev.LocationChanged: _v_ok,
    ev.ModelChanged: _v_ok,
    ev.ContextUsed: _v_context,
    ev.DeliveryUpdated: _v_ok,
    ev.AgentForgotten: _v_ok,
    ev.AgentRenamed: _v_renamed,
    ev.SessionReleased: _v_released,
    ev.AgentExpired: _v_ok,
    ev.StopRequested: _v_ok,
    ev.MembershipChanged: _v_membership,
    ev.HostStarted: _v_ok,
    ev.HostAdopted: _v_ok,
    ev.ProgramExited: _v_ok,
    ev.InterruptionDetected: _v_ok,
    ev.RecoveryDecided: _v_ok,
    ev.RestartScheduled: _v_ok,
    ev.RestartCancelled: _v_ok,
    ev.RestartBudgetReset: _v_ok,
    ev.MissionCreated: _v_mission_created,
    ev.MissionUpdated: _v_mission_updated,
    ev.WorkerAssessed: _v_assessed,
    ev.ThreadOpened: _v_thread,
    ev.MessagePosted: _v_message,
    ev.MessageDelivered: _v_receipt,
    ev.MessageRead: _v_receipt,
}


# --- appliers -----------------------------------------------------------------------------


def _a_registered(r: Registry, e: ev.AgentRegistered) -> None:
    r._put(
        Agent(
            id=e.agent,
            name=e.name,
            harness=e.harness,
            role=e.role,
            parent=e.parent,
            mission=e.mission,
            launched_by_volee=e.launched_by_volee,
            launch=e.launch,
            cwd=e.cwd,
            worktree=e.worktree,
            repo=e.repo,
            branch=e.branch,
            location=e.location,
            state=e.state,
            detail=e.detail,
            state_since=e.at,
            created_at=e.at,
            last_progress_at=e.at,
            worked=e.state is AgentState.WORKING,
        )
    )
    r.names[e.agent] = e.name


def _a_session(r: Registry, e: ev.SessionLinked) -> None:
    agent = r.agents[e.agent]
    sessions = (*(s for s in agent.sessions if s != e.session), e.session)
    r.sessions[session_key(agent.harness, e.session)] = agent.id
    r._put(_evolve(agent, sessions=sessions))


def _a_state(r: Registry, e: ev.StateChanged) -> None:
    agent = r.agents[e.agent]
    changes: dict[str, Any] = {"detail": e.detail}
    if e.state is not agent.state:
        changes["state"] = e.state
        changes["state_since"] = e.at
    if e.state is AgentState.WORKING:
        changes["worked"] = True
    if e.progress:
        changes["last_progress_at"] = e.at
    if e.state.live and e.state is not AgentState.LAUNCHING:
        changes["interrupted"] = None
        changes["action"] = None
    r._put(_evolve(agent, **changes))


def _a_activity(r: Registry, e: ev.ActivityRecorded) -> None:
    agent = r.agents[e.agent]
    r._put(_evolve(agent, activity=e.activity, activity_at=e.at, last_progress_at=e.at))


def _a_workspace(r: Registry, e: ev.WorkspaceUpdated) -> None:
    agent = r.agents[e.agent]
    changes: dict[str, Any] = {
        k: v
        for k, v in (
            ("cwd", e.cwd),
            ("worktree", e.worktree),
            ("repo", e.repo),
            ("branch", e.branch),
        )
        if v is not None
    }
    r._put(_evolve(agent, **changes))


def _a_location(r: Registry, e: ev.LocationChanged) -> None:
    r._put(_evolve(r.agents[e.agent], location=e.location, pid=e.pid))


def _a_model(r: Registry, e: ev.ModelChanged) -> None:
    r._put(_evolve(r.agents[e.agent], model=e.model))


def _a_context(r: Registry, e: ev.ContextUsed) -> None:
    r._put(_evolve(r.agents[e.agent], context_share=e.share))


def _a_delivery(r: Registry, e: ev.DeliveryUpdated) -> None:
    r._put(_evolve(r.agents[e.agent], delivery=e.delivery))


def _drop_agent(r: Registry, agent_id: str, ignore: bool) -> None:
    agent = r.agents.pop(agent_id)
    for session in agent.sessions:
        key = session_key(agent.harness, session)
        if r.sessions.get(key) == agent_id:
            del r.sessions[key]
        if ignore:
            r.ignored[key] = agent_id


def _a_forgotten(r: Registry, e: ev.AgentForgotten) -> None:
    _drop_agent(r, e.agent, ignore=True)


def _a_expired(r: Registry, e: ev.AgentExpired) -> None:
    _drop_agent(r, e.agent, ignore=False)


def _a_renamed(r: Registry, e: ev.AgentRenamed) -> None:
    r._put(_evolve(r.agents[e.agent], name=e.name))
    r.names[e.agent] = e.name


def _a_released(r: Registry, e: ev.SessionReleased) -> None:
    agent = r.agents[e.agent]
    r.sessions.pop(session_key(agent.harness, e.session), None)
    r._put(_evolve(agent, sessions=tuple(s for s in agent.sessions if s != e.session)))


def _a_stop(r: Registry, e: ev.StopRequested) -> None:
    agent = r.agents[e.agent]
    held = agent.held if agent.held_for_good else (e.reason or HELD_BY_STOP)
    r._put(_evolve(agent, held=held, restart=None))


def _a_membership(r: Registry, e: ev.MembershipChanged) -> None:
    agent = r.agents[e.agent]
    if e.joined:
        r._put(_evolve(agent, mission=e.mission))
    elif agent.mission == e.mission:
        r._put(_evolve(agent, mission=None))


def _a_host_started(r: Registry, e: ev.HostStarted) -> None:
    agent = r.agents[e.agent]
    r._put(
        _evolve(
            agent,
            host_started_at=e.at,
            location=Location.HOST,
            pid=e.program_pid,
            interrupted=None,
            action=None,
            restart=None,
        )
    )


def _a_adopted(r: Registry, e: ev.HostAdopted) -> None:
    r._put(_evolve(r.agents[e.agent], location=Location.HOST))


def _a_exited(r: Registry, e: ev.ProgramExited) -> None:
    r._put(_evolve(r.agents[e.agent], pid=None))


def _a_interrupted(r: Registry, e: ev.InterruptionDetected) -> None:
    agent = r.agents[e.agent]
    times = (*agent.interruptions, e.at)[-INTERRUPTION_MEMORY:]
    r._put(_evolve(agent, interrupted=e.cause, interruptions=times, pid=None))


def _a_decided(r: Registry, e: ev.RecoveryDecided) -> None:
    agent = r.agents[e.agent]
    r._put(_evolve(agent, action=e.action))


def _a_restart_scheduled(r: Registry, e: ev.RestartScheduled) -> None:
    agent = r.agents[e.agent]
    pending = PendingRestart(due_at=e.due_at, attempt=e.attempt, budget=e.budget, reason=e.reason)
    r._put(_evolve(agent, restart=pending, restarts_in_row=e.attempt))


def _a_restart_cancelled(r: Registry, e: ev.RestartCancelled) -> None:
    r._put(_evolve(r.agents[e.agent], restart=None))


def _a_budget_reset(r: Registry, e: ev.RestartBudgetReset) -> None:
    r._put(_evolve(r.agents[e.agent], restarts_in_row=0))


def _a_mission_created(r: Registry, e: ev.MissionCreated) -> None:
    r.missions[e.mission] = Mission(
        id=e.mission,
        goal=e.goal,
        kind=e.kind,
        repositories=e.repositories,
        requested_by=e.requested_by,
        coordinator=e.coordinator,
        thread=e.thread,
        base_branch=e.base_branch,
        created_at=e.at,
        updated_at=e.at,
    )


def _a_mission_updated(r: Registry, e: ev.MissionUpdated) -> None:
    mission = r.missions[e.mission]
    changes: dict[str, Any] = {"updated_at": e.at}
    if e.status is not None:
        changes["status"] = e.status
        changes["reason"] = e.reason
    elif e.reason:
        changes["reason"] = e.reason
    if e.coordinator is not None:
        changes["coordinator"] = e.coordinator
    if e.report is not None:
        changes["report"] = e.report
    if e.report_requested is not None:
        changes["report_requested"] = e.report_requested
    mission = _evolve(mission, **changes)
    r.missions[e.mission] = mission
    if mission.status.ended:
        for agent in r.mission_agents(mission.id):
            r._put(_evolve(agent, held=HELD_BY_MISSION, held_for_good=True, restart=None))


def _a_assessed(r: Registry, e: ev.WorkerAssessed) -> None:
    mission = r.missions[e.mission]
    assessment = Assessment(verdict=e.verdict, reason=e.reason, at=e.at, evidence=e.evidence)
    r.missions[e.mission] = _evolve(
        mission, assessments={**mission.assessments, e.agent: assessment}
    )


def _a_thread(r: Registry, e: ev.ThreadOpened) -> None:
    r.threads[e.thread] = Thread(
        id=e.thread, kind=e.kind, mission=e.mission, parties=e.parties, created_at=e.at
    )


def _a_message(r: Registry, e: ev.MessagePosted) -> None:
    r.messages[e.message] = Message(
        id=e.message,
        thread=e.thread,
        sender=e.sender,
        recipients=e.recipients,
        kind=e.kind,
        body=e.body,
        references=e.references,
        reply_to=e.reply_to,
        options=e.options,
        approving=e.approving,
        chosen=e.chosen,
        at=e.at,
        receipts={recipient: Receipt() for recipient in e.recipients},
    )
    if e.sender == HUMAN:
        # A later message from the human lifts a stop hold (never a mission's end).
        for recipient in e.recipients:
            agent = r.agents.get(recipient)
            if agent is not None and agent.held and not agent.held_for_good:
                r._put(_evolve(agent, held=None))


def _a_delivered(r: Registry, e: ev.MessageDelivered) -> None:
    message = r.messages[e.message]
    old = message.receipts.get(e.recipient, Receipt())
    if old.delivered_at is not None:
        return  # a receipt keeps its first delivery
    receipts = {**message.receipts, e.recipient: _evolve(old, delivered_at=e.at)}
    r.messages[e.message] = _evolve(message, receipts=receipts)


def _a_read(r: Registry, e: ev.MessageRead) -> None:
    message = r.messages[e.message]
    old = message.receipts.get(e.recipient, Receipt())
    delivered = old.delivered_at if old.delivered_at is not None else e.at
    receipts = {**message.receipts, e.recipient: Receipt(delivered_at=delivered, read_at=e.at)}
    r.messages[e.message] = _evolve(message, receipts=receipts)


_APPLIERS: dict[type, Callable[[Registry, Any], None]] = {
    ev.AgentRegistered: _a_registered,
    ev.SessionLinked: _a_session,
    ev.StateChanged: _a_state,
    ev.ActivityRecorded: _a_activity,
    ev.WorkspaceUpdated: _a_workspace,
    ev.LocationChanged: _a_location,
    ev.ModelChanged: _a_model,
    ev.ContextUsed: _a_context,
    ev.DeliveryUpdated: _a_delivery,
    ev.AgentForgotten: _a_forgotten,
    ev.AgentRenamed: _a_renamed,
    ev.SessionReleased: _a_released,
    ev.AgentExpired: _a_expired,
    ev.StopRequested: _a_stop,
    ev.MembershipChanged: _a_membership,
    ev.HostStarted: _a_host_started,
    ev.HostAdopted: _a_adopted,
    ev.ProgramExited: _a_exited,
    ev.InterruptionDetected: _a_interrupted,
    ev.RecoveryDecided: _a_decided,
    ev.RestartScheduled: _a_restart_scheduled,
    ev.RestartCancelled: _a_restart_cancelled,
    ev.RestartBudgetReset: _a_budget_reset,
    ev.MissionCreated: _a_mission_created,
    ev.MissionUpdated: _a_mission_updated,
    ev.WorkerAssessed: _a_assessed,
    ev.ThreadOpened: _a_thread,
    ev.MessagePosted: _a_message,
    ev.MessageDelivered: _a_delivered,
    ev.MessageRead: _a_read,
}

"""Validation: why an event would be refused by the registry (``None`` when it is fine).

One rule per event type, each reading the tables and never changing them; the
registry runs them before an event is appended, and a batch is validated against
a fork of the registry before it is durable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import events as ev
from .ids import AGENT, MESSAGE, MISSION, THREAD, is_id
from .model import HUMAN, VOLEE, MessageKind, session_key
from .tables import Tables


def problem_with(r: Tables, event: ev.Event) -> str | None:
    """Why the event would be refused, or ``None`` when it can be applied."""
    check = VALIDATORS.get(type(event))
    if check is None:
        return f"unknown event type {type(event).__name__}"
    if isinstance(event, ev.AgentEvent) and not isinstance(event, ev.AgentRegistered):
        problem = known_agent(r, event.agent)
        if problem:
            return problem
    return check(r, event)


def known_agent(r: Tables, agent_id: str) -> str | None:
    """Why ``agent_id`` names no current agent (``None``: it does)."""
    if agent_id in r.agents:
        return None
    if agent_id in r.names:
        return f"agent {r.names[agent_id]} ({agent_id}) was forgotten"
    return f"unknown agent {agent_id!r}"


def party(r: Tables, who: str) -> str | None:
    """Why ``party`` cannot send or receive a message (people and volee always can)."""
    if who in (HUMAN, VOLEE):
        return None
    return known_agent(r, who)


def check_route(registry: Tables, sender: str, recipient: str) -> str | None:
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


# --- one rule per event type -----------------------------------------------------------


def _v_ok(_r: Tables, _e: Any) -> str | None:
    return None


def _v_registered(r: Tables, e: ev.AgentRegistered) -> str | None:
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


def _v_session(r: Tables, e: ev.SessionLinked) -> str | None:
    if not e.session:
        return "a session needs its harness id"
    agent = r.agents[e.agent]
    key = session_key(agent.harness, e.session)
    if key in r.ignored:
        gone = r.ignored[key]
        return f"session {e.session} belonged to forgotten agent {r.names[gone]}"
    owner = r.sessions.get(key)
    if owner is not None and owner != e.agent:
        return f"session {e.session} already belongs to agent {r.names[owner]} ({owner})"
    return None


def _v_released(r: Tables, e: ev.SessionReleased) -> str | None:
    agent = r.agents[e.agent]
    if session_key(agent.harness, e.session) not in r.sessions or e.session not in agent.sessions:
        return f"session {e.session} does not belong to agent {agent.name}"
    return None


def _v_renamed(_r: Tables, e: ev.AgentRenamed) -> str | None:
    return None if e.name.strip() else "a new name cannot be empty"


def _v_context(_r: Tables, e: ev.ContextUsed) -> str | None:
    if not 0.0 <= e.share <= 1.0:
        return f"context share {e.share} is outside 0..1"
    if e.cost_usd is not None and not 0.0 <= e.cost_usd < 1e9:
        return f"cost {e.cost_usd} is not a cost in dollars"
    return None


def coordinates(r: Tables, agent_id: str) -> str | None:
    """The mission ``agent_id`` coordinates, if any."""
    return next((m.id for m in r.missions.values() if m.coordinator == agent_id), None)


def _v_membership(r: Tables, e: ev.MembershipChanged) -> str | None:
    # Seed 002: only agents that joined through volee's MCP server change missions; the
    # daemon lets only the agent itself join, and only into a mission that invited it.
    mission = r.missions.get(e.mission)
    if mission is None:
        return f"unknown mission {e.mission!r}"
    if e.joined and mission.status.ended:
        return f"mission {e.mission} is over"
    agent = r.agents[e.agent]
    if e.agent not in mission.invited:
        return (
            f"{agent.name} was not invited to mission {e.mission}: its coordinator or the "
            "person invites an agent first, then the agent joins"
        )
    if not e.joined:
        if agent.mission != e.mission:
            return f"{agent.name} is not in mission {e.mission}"
        return None
    led = coordinates(r, e.agent)
    if led is not None and led != e.mission:
        return f"{agent.name} coordinates mission {led}; a coordinator joins no other mission"
    if agent.mission is not None and agent.mission != e.mission:
        return f"{agent.name} is already in mission {agent.mission}; an agent is in one mission"
    return None


def _v_invited(r: Tables, e: ev.MissionInvited) -> str | None:
    mission = r.missions.get(e.mission)
    if mission is None:
        return f"unknown mission {e.mission!r}"
    if mission.status.ended:
        return f"mission {e.mission} is over"
    if e.by != HUMAN and e.by != mission.coordinator:
        return f"only the person or the coordinator of mission {e.mission} invites agents to it"
    agent = r.agents[e.agent]
    led = coordinates(r, e.agent)
    if led is not None:
        return f"{agent.name} coordinates mission {led}; a coordinator joins no other mission"
    if agent.mission == e.mission:
        return f"{agent.name} is already in mission {e.mission}"
    if agent.mission is not None:
        return f"{agent.name} is already in mission {agent.mission}; an agent is in one mission"
    return None


def _v_mission_created(r: Tables, e: ev.MissionCreated) -> str | None:
    if not is_id(e.mission, MISSION):
        return f"mission id {e.mission!r} is not an ms_ ULID"
    if e.mission in r.missions:
        return f"mission id {e.mission} is already used"
    if not e.goal.strip():
        return "a mission needs a goal"
    return None


def _v_mission_updated(r: Tables, e: ev.MissionUpdated) -> str | None:
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


def _v_assessed(r: Tables, e: ev.WorkerAssessed) -> str | None:
    if e.mission not in r.missions:
        return f"unknown mission {e.mission!r}"
    return known_agent(r, e.agent)


def _v_thread(r: Tables, e: ev.ThreadOpened) -> str | None:
    if not is_id(e.thread, THREAD):
        return f"thread id {e.thread!r} is not a th_ ULID"
    if e.thread in r.threads:
        return f"thread id {e.thread} is already used"
    if e.mission is not None and e.mission not in r.missions:
        return f"unknown mission {e.mission!r}"
    return None


def _v_message(r: Tables, e: ev.MessagePosted) -> str | None:
    if not is_id(e.message, MESSAGE):
        return f"message id {e.message!r} is not a msg_ ULID"
    if e.message in r.messages:
        return f"message id {e.message} is already used"
    if e.thread not in r.threads:
        return f"unknown thread {e.thread!r}"
    problem = party(r, e.sender)
    if problem:
        return f"sender: {problem}"
    if not e.recipients:
        return "a message needs at least one recipient"
    for recipient in e.recipients:
        problem = party(r, recipient) or check_route(r, e.sender, recipient)
        if problem:
            return problem
    if e.reply_to is not None and e.reply_to not in r.messages:
        return f"reply to unknown message {e.reply_to!r}"
    if e.kind is MessageKind.QUESTION and not e.options:
        return "a question needs options"
    if e.approving is not None and e.approving not in e.options:
        return f"approving option {e.approving!r} is not one of the options"
    return None


def _v_receipt(r: Tables, e: ev.MessageDelivered | ev.MessageRead) -> str | None:
    message = r.messages.get(e.message)
    if message is None:
        return f"unknown message {e.message!r}"
    if e.recipient not in message.recipients:
        return f"{e.recipient} is not a recipient of {e.message}"
    return None


def _v_answered(r: Tables, e: ev.RequestAnswered) -> str | None:
    agent = r.agents[e.agent]
    request = agent.request
    if request is None or request.id != e.request:
        now = f"it is {agent.state}" + (f" ({agent.detail})" if agent.detail else "")
        return f"agent {agent.name} no longer asks that ({now})"
    if request.answered is not None:
        return f"that request of agent {agent.name} was already answered ({request.answered})"
    return None


def _v_limit(_r: Tables, e: ev.LimitHit) -> str | None:
    if e.resets_at is not None and e.resets_at < 0:
        return f"reset time {e.resets_at} is before 1970"
    beyond = e.attempt is not None and e.attempts is not None and e.attempt > e.attempts
    if e.attempt is not None and (e.attempt < 1 or beyond):
        return f"attempt {e.attempt}/{e.attempts} is not a retry"
    return None


def _v_plan(_r: Tables, e: ev.PlanUsed) -> str | None:
    for share in (e.five_hour, e.seven_day):
        if share is not None and not 0.0 <= share <= 1.0:
            return f"plan use {share} is outside 0..1"
    return None


def _v_limit_continued(r: Tables, e: ev.LimitContinued) -> str | None:
    agent = r.agents[e.agent]
    if agent.limit is None or not agent.limit.ended:
        return f"agent {agent.name} did not end its turn on a limit"
    return None


VALIDATORS: dict[type, Callable[[Tables, Any], str | None]] = {
    ev.AgentRegistered: _v_registered,
    ev.SessionLinked: _v_session,
    ev.StateChanged: _v_ok,
    ev.RequestAnswered: _v_answered,
    ev.ActivityRecorded: _v_ok,
    ev.WorkspaceUpdated: _v_ok,
    ev.LocationChanged: _v_ok,
    ev.ModelChanged: _v_ok,
    ev.ContextUsed: _v_context,
    ev.LimitHit: _v_limit,
    ev.LimitContinued: _v_limit_continued,
    ev.PlanUsed: _v_plan,
    ev.DeliveryUpdated: _v_ok,
    ev.AgentForgotten: _v_ok,
    ev.AgentRenamed: _v_renamed,
    ev.SessionReleased: _v_released,
    ev.AgentExpired: _v_ok,
    ev.StopRequested: _v_ok,
    ev.MembershipChanged: _v_membership,
    ev.MissionInvited: _v_invited,
    ev.RequestRefused: _v_ok,
    ev.HookSpooled: _v_ok,
    ev.HostStarted: _v_ok,
    ev.HostAdopted: _v_ok,
    ev.HostSuspect: _v_ok,
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
    ev.SettingsConfirmed: _v_ok,
}

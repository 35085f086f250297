"""The fold: how each (valid) event changes the registry's tables.

Entities are frozen and replaced, never changed in place, so a fork of the tables
(a shallow copy of the dicts) is a cheap working copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from . import events as ev
from .limits import limit_of
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
    PlanUse,
    Receipt,
    Thread,
    session_key,
)
from .requests import request_after
from .states import AgentState
from .tables import Tables

_T = TypeVar("_T")

HELD_BY_STOP = "stopped by you"
HELD_BY_MISSION = "mission over"
INTERRUPTION_MEMORY = 5


def fold(r: Tables, event: ev.Event) -> None:
    """Fold one (valid) event into the tables."""
    APPLIERS[type(event)](r, event)


def _put(r: Tables, agent: Agent) -> None:
    r.agents[agent.id] = agent


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


# --- one applier per event type --------------------------------------------------------


def _a_registered(r: Tables, e: ev.AgentRegistered) -> None:
    _put(
        r,
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
        ),
    )
    r.names[e.agent] = e.name


def _a_session(r: Tables, e: ev.SessionLinked) -> None:
    agent = r.agents[e.agent]
    sessions = (*(s for s in agent.sessions if s != e.session), e.session)
    r.sessions[session_key(agent.harness, e.session)] = agent.id
    _put(r, _evolve(agent, sessions=sessions))


#: States an agent rests in between turns: working again from one of them is a new turn.
_RESTING = frozenset({AgentState.DONE, AgentState.IDLE})


def _a_state(r: Tables, e: ev.StateChanged) -> None:
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
    follow_up = agent.denied_follow_up and e.state is AgentState.WORKING
    if agent.denied is not None and (
        e.state is AgentState.NEEDS_INPUT
        or (e.state is AgentState.WORKING and not agent.state.live and not follow_up)
        or (e.state is AgentState.WORKING and agent.state in _RESTING and not follow_up)
    ):
        changes["denied"] = None  # a new request, or a new turn (the denial's own end is not)
        changes["denied_untold"] = changes["denied_follow_up"] = False
    if follow_up:
        changes["denied_follow_up"] = False  # the turn the denial's word started is its own
    changes.update(limit_after(agent, e.state))
    request = request_after(
        agent.id, agent.state, agent.request, e.state, e.request, e.detail, e.at
    )
    if request is not agent.request:
        changes["request"] = request
    _put(r, _evolve(agent, **changes))


def _a_answered(r: Tables, e: ev.RequestAnswered) -> None:
    agent = r.agents[e.agent]
    if agent.request is not None:
        request = _evolve(agent.request, answered=e.answer, answered_by=e.by, answered_at=e.at)
        denied = (request.summary or request.tool or "a request") if e.answer == "deny" else None
        _put(
            r,
            _evolve(
                agent,
                request=request,
                denied=denied,
                denied_untold=denied is not None,
                denied_follow_up=False,
            ),
        )


def _a_activity(r: Tables, e: ev.ActivityRecorded) -> None:
    agent = r.agents[e.agent]
    _put(r, _evolve(agent, activity=e.activity, activity_at=e.at, last_progress_at=e.at))


def _a_workspace(r: Tables, e: ev.WorkspaceUpdated) -> None:
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
    _put(r, _evolve(agent, **changes))


def _a_location(r: Tables, e: ev.LocationChanged) -> None:
    _put(r, _evolve(r.agents[e.agent], location=e.location, pid=e.pid))


def _a_model(r: Tables, e: ev.ModelChanged) -> None:
    _put(r, _evolve(r.agents[e.agent], model=e.model))


def _a_context(r: Tables, e: ev.ContextUsed) -> None:
    agent = r.agents[e.agent]
    cost = e.cost_usd if e.cost_usd is not None else agent.cost_usd
    _put(r, _evolve(agent, context_share=e.share, cost_usd=cost))


def limit_after(agent: Agent, state: AgentState) -> dict[str, Any]:
    """What a state change does to the agent's limit (docs/limits.md): a finished turn
    clears it and the count of automatic continues; a new turn clears a limit the last
    turn ended on (the one being retried stays); an agent no longer live has none."""
    if state is AgentState.DONE:
        return {"limit": None, "limit_continues": 0}
    limit = agent.limit
    if limit is None:
        return {}
    if not state.live or (state is AgentState.WORKING and limit.ended):
        return {"limit": None}
    return {}


def _a_limit(r: Tables, e: ev.LimitHit) -> None:
    _put(r, _evolve(r.agents[e.agent], limit=limit_of(e)))


def _a_plan(r: Tables, e: ev.PlanUsed) -> None:
    plan = PlanUse(
        at=e.at,
        five_hour=e.five_hour,
        five_hour_resets_at=e.five_hour_resets_at,
        seven_day=e.seven_day,
        seven_day_resets_at=e.seven_day_resets_at,
    )
    _put(r, _evolve(r.agents[e.agent], plan=plan))


def _a_limit_continued(r: Tables, e: ev.LimitContinued) -> None:
    agent = r.agents[e.agent]
    limit = agent.limit
    continues = agent.limit_continues + 1 if e.automatic else 0
    _put(
        r,
        _evolve(
            agent,
            limit_continues=continues,
            limit_continued=limit.at if limit is not None else None,
        ),
    )


def _a_delivery(r: Tables, e: ev.DeliveryUpdated) -> None:
    _put(r, _evolve(r.agents[e.agent], delivery=e.delivery))


def _drop_agent(r: Tables, agent_id: str, ignore: bool) -> None:
    agent = r.agents.pop(agent_id)
    for session in agent.sessions:
        key = session_key(agent.harness, session)
        if r.sessions.get(key) == agent_id:
            del r.sessions[key]
        if ignore:
            r.ignored[key] = agent_id


def _a_forgotten(r: Tables, e: ev.AgentForgotten) -> None:
    _drop_agent(r, e.agent, ignore=True)


def _a_expired(r: Tables, e: ev.AgentExpired) -> None:
    _drop_agent(r, e.agent, ignore=False)


def _a_renamed(r: Tables, e: ev.AgentRenamed) -> None:
    _put(r, _evolve(r.agents[e.agent], name=e.name))
    r.names[e.agent] = e.name


def _a_released(r: Tables, e: ev.SessionReleased) -> None:
    agent = r.agents[e.agent]
    del r.sessions[session_key(agent.harness, e.session)]  # validated: it is the agent's
    _put(r, _evolve(agent, sessions=tuple(s for s in agent.sessions if s != e.session)))


def _a_stop(r: Tables, e: ev.StopRequested) -> None:
    agent = r.agents[e.agent]
    held = agent.held if agent.held_for_good else (e.reason or HELD_BY_STOP)
    _put(r, _evolve(agent, held=held, restart=None))


def _a_membership(r: Tables, e: ev.MembershipChanged) -> None:
    agent = r.agents[e.agent]
    if e.joined:
        _put(r, _evolve(agent, mission=e.mission))
    elif agent.mission == e.mission:
        _put(r, _evolve(agent, mission=None))


def _a_invited(r: Tables, e: ev.MissionInvited) -> None:
    mission = r.missions[e.mission]
    if e.agent not in mission.invited:
        r.missions[e.mission] = _evolve(mission, invited=(*mission.invited, e.agent))


def _a_audit(_r: Tables, _e: ev.Event) -> None:
    """An audit record: it changes nothing, it is only kept (and shown in the timeline)."""


def _a_settings(r: Tables, e: ev.SettingsConfirmed) -> None:
    r.confirmed_settings = dict(e.settings)


def _a_host_started(r: Tables, e: ev.HostStarted) -> None:
    agent = r.agents[e.agent]
    _put(
        r,
        _evolve(
            agent,
            host_started_at=e.at,
            location=Location.HOST,
            pid=e.program_pid,
            interrupted=None,
            action=None,
            restart=None,
        ),
    )


def _a_adopted(r: Tables, e: ev.HostAdopted) -> None:
    _put(r, _evolve(r.agents[e.agent], location=Location.HOST))


def _a_suspect(r: Tables, e: ev.HostSuspect) -> None:
    # Nothing of that process is the agent's: it has no known program any more.
    _put(r, _evolve(r.agents[e.agent], pid=None))


def _a_exited(r: Tables, e: ev.ProgramExited) -> None:
    _put(r, _evolve(r.agents[e.agent], pid=None))


def _a_interrupted(r: Tables, e: ev.InterruptionDetected) -> None:
    agent = r.agents[e.agent]
    times = (*agent.interruptions, e.at)[-INTERRUPTION_MEMORY:]
    _put(r, _evolve(agent, interrupted=e.cause, interruptions=times, pid=None))


def _a_decided(r: Tables, e: ev.RecoveryDecided) -> None:
    agent = r.agents[e.agent]
    _put(r, _evolve(agent, action=e.action))


def _a_restart_scheduled(r: Tables, e: ev.RestartScheduled) -> None:
    agent = r.agents[e.agent]
    pending = PendingRestart(due_at=e.due_at, attempt=e.attempt, budget=e.budget, reason=e.reason)
    _put(r, _evolve(agent, restart=pending, restarts_in_row=e.attempt))


def _a_restart_cancelled(r: Tables, e: ev.RestartCancelled) -> None:
    _put(r, _evolve(r.agents[e.agent], restart=None))


def _a_budget_reset(r: Tables, e: ev.RestartBudgetReset) -> None:
    _put(r, _evolve(r.agents[e.agent], restarts_in_row=0))


def _a_mission_created(r: Tables, e: ev.MissionCreated) -> None:
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


def _a_mission_updated(r: Tables, e: ev.MissionUpdated) -> None:
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
            _put(r, _evolve(agent, held=HELD_BY_MISSION, held_for_good=True, restart=None))


def _a_assessed(r: Tables, e: ev.WorkerAssessed) -> None:
    mission = r.missions[e.mission]
    assessment = Assessment(verdict=e.verdict, reason=e.reason, at=e.at, evidence=e.evidence)
    r.missions[e.mission] = _evolve(
        mission, assessments={**mission.assessments, e.agent: assessment}
    )


def _a_thread(r: Tables, e: ev.ThreadOpened) -> None:
    r.threads[e.thread] = Thread(
        id=e.thread, kind=e.kind, mission=e.mission, parties=e.parties, created_at=e.at
    )


def _a_message(r: Tables, e: ev.MessagePosted) -> None:
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
    _denial_told(r, e)
    if e.sender == HUMAN:
        # A later message from the human lifts a stop hold (never a mission's end).
        for recipient in e.recipients:
            agent = r.agents.get(recipient)
            if agent is not None and agent.held and not agent.held_for_good:
                _put(r, _evolve(agent, held=None))


def _denial_told(r: Tables, e: ev.MessagePosted) -> None:
    """The first word to an agent after a denial through volee, volee's "carry on without
    it" or the reason the person typed with Deny, starts the turn that ends on that denial,
    not a new one of the person's: that turn keeps ``denied`` through the Stop that ends it.

    Read when the word is posted, not delivered: the daemon records the delivery after typing
    it, and the harness's hook for the turn it starts can come first.
    """
    by_volee = e.sender == VOLEE and e.kind is MessageKind.NOTICE
    if not by_volee and e.sender != HUMAN:
        return
    for recipient in e.recipients:
        agent = r.agents.get(recipient)
        if agent is not None and agent.denied is not None and agent.denied_untold:
            _put(r, _evolve(agent, denied_untold=False, denied_follow_up=True))


def _a_delivered(r: Tables, e: ev.MessageDelivered) -> None:
    message = r.messages[e.message]
    old = message.receipts.get(e.recipient, Receipt())
    if old.delivered_at is not None:
        return  # a receipt keeps its first delivery
    receipts = {**message.receipts, e.recipient: _evolve(old, delivered_at=e.at)}
    r.messages[e.message] = _evolve(message, receipts=receipts)


def _a_read(r: Tables, e: ev.MessageRead) -> None:
    message = r.messages[e.message]
    old = message.receipts.get(e.recipient, Receipt())
    delivered = old.delivered_at if old.delivered_at is not None else e.at
    receipts = {**message.receipts, e.recipient: Receipt(delivered_at=delivered, read_at=e.at)}
    r.messages[e.message] = _evolve(message, receipts=receipts)


APPLIERS: dict[type, Callable[[Tables, Any], None]] = {
    ev.AgentRegistered: _a_registered,
    ev.SessionLinked: _a_session,
    ev.StateChanged: _a_state,
    ev.RequestAnswered: _a_answered,
    ev.ActivityRecorded: _a_activity,
    ev.WorkspaceUpdated: _a_workspace,
    ev.LocationChanged: _a_location,
    ev.ModelChanged: _a_model,
    ev.ContextUsed: _a_context,
    ev.LimitHit: _a_limit,
    ev.LimitContinued: _a_limit_continued,
    ev.PlanUsed: _a_plan,
    ev.DeliveryUpdated: _a_delivery,
    ev.AgentForgotten: _a_forgotten,
    ev.AgentRenamed: _a_renamed,
    ev.SessionReleased: _a_released,
    ev.AgentExpired: _a_expired,
    ev.StopRequested: _a_stop,
    ev.MembershipChanged: _a_membership,
    ev.MissionInvited: _a_invited,
    ev.RequestRefused: _a_audit,
    ev.HookSpooled: _a_audit,
    ev.HostStarted: _a_host_started,
    ev.HostAdopted: _a_adopted,
    ev.HostSuspect: _a_suspect,
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
    ev.SettingsConfirmed: _a_settings,
}

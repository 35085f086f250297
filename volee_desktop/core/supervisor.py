"""The mission supervisor (seed 002): the program half of a mission, pure and idempotent.

``supervise(registry, mission_id, now)`` returns the events to commit and the
notices volee posts in the mission thread.  Once its events are applied,
calling it again returns nothing: every decision is keyed on state the events
change (an assessment, the mission's status, ``report_requested``).  Notices
are not events here because their ids are drawn by the daemon (the core draws
no randomness).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import events as ev
from .delivery import delivered_by_merge, evidence_fresh, judge_change
from .model import (
    HUMAN,
    Agent,
    MessageKind,
    Mission,
    MissionKind,
    MissionStatus,
    Role,
    Verdict,
)
from .registry import Registry
from .states import AgentState

APPROVING_DEFAULT = "approve"
REPORT_NO_LONGER_STANDS = "the report no longer stands"


@dataclass(frozen=True)
class Notice:
    """A message volee posts in the mission thread."""

    recipients: tuple[str, ...]
    body: str
    references: tuple[str, ...] = ()


@dataclass
class Decision:
    """What the daemon commits (in one batch) and tells."""

    events: list[ev.Event] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.notices)


def workers_of(registry: Registry, mission: Mission) -> list[Agent]:
    """The agents of a mission other than its coordinator, oldest first.

    An agent that joined (invited, then ``join_mission``) takes part in the mission's
    conversation but is no worker: it is never judged (issue 11).
    """
    return sorted(
        (
            a
            for a in registry.mission_agents(mission.id)
            if a.id != mission.coordinator
            and a.role is not Role.COORDINATOR
            and a.id not in mission.invited
        ),
        key=lambda a: (a.created_at, a.id),
    )


def reported(registry: Registry, mission: Mission, agent_id: str) -> str | None:
    """The id of the latest report message the agent posted for the mission, if any."""
    reports = [
        (message.at, message.id)
        for message in registry.messages.values()
        if message.sender == agent_id
        and message.kind is MessageKind.REPORT
        and _in_mission(registry, mission, message.thread)
    ]
    return max(reports)[1] if reports else None


def _in_mission(registry: Registry, mission: Mission, thread_id: str) -> bool:
    thread = registry.threads.get(thread_id)
    return thread is not None and (thread.mission == mission.id or thread.id == mission.thread)


def assess(registry: Registry, mission: Mission, agent: Agent) -> tuple[Verdict, str] | None:
    """The verdict on one worker now, or None when there is none yet (the table of seed 002)."""
    state = agent.state
    if state in (AgentState.LAUNCHING, AgentState.WORKING):
        return None
    if state is AgentState.IDLE and not agent.worked:
        return None  # a fresh session rests at its prompt before its task is submitted
    if state is AgentState.NEEDS_INPUT:
        return Verdict.NEEDS_HUMAN, agent.detail or "waits for a person"
    if state is AgentState.FAILED:
        return Verdict.FAILED, agent.detail or "failed"
    if state is AgentState.LOST:
        return Verdict.LOST, agent.detail or "volee cannot find it any more"
    # idle (after work), done, stopped: the evidence decides.
    if mission.kind is MissionKind.ANALYSIS:
        report = reported(registry, mission, agent.id)
        if report is not None:
            return Verdict.DELIVERED, f"reported ({report})"
        return Verdict.NOT_DELIVERED, "no report message yet"
    if not evidence_fresh(agent):
        # Evidence read before the stop may miss its last commits; never read is empty.
        return None
    assert agent.delivery is not None
    ok, reason = judge_change(agent.delivery)
    return (Verdict.DELIVERED if ok else Verdict.NOT_DELIVERED), reason


def _merged(agent: Agent) -> bool:
    return agent.delivery is not None and delivered_by_merge(agent.delivery) is not None


MAX_STEPS = 8


def supervise(registry: Registry, mission_id: str, now: float) -> Decision:
    """The supervisor's decision for one mission (empty once its own events are applied).

    A step may enable the next (approved -> closed for an analysis), so steps run on a
    fork until one decides nothing: the decision is complete, and a second call is empty.
    """
    decision = Decision()
    work = registry
    for _ in range(MAX_STEPS):
        step = _step(work, mission_id, now)
        if not step:
            break
        if work is registry:
            work = registry.fork()
        for event in step.events:
            problem = work.validate(event)
            if problem:  # never expected: the core's own events are valid by construction
                raise ValueError(f"supervisor produced an invalid {event.TYPE}: {problem}")
            work.apply(event)
        decision.events += step.events
        decision.notices += step.notices
    return decision


def _step(registry: Registry, mission_id: str, now: float) -> Decision:
    decision = Decision()
    mission = registry.missions.get(mission_id)
    if mission is None or mission.status.ended:
        return decision
    events, notices = decision.events, decision.notices

    coordinator = mission.coordinator
    if coordinator is None:
        found = next(
            (a for a in registry.mission_agents(mission.id) if a.role is Role.COORDINATOR), None
        )
        if found is not None:
            coordinator = found.id
            events.append(ev.MissionUpdated(at=now, mission=mission.id, coordinator=coordinator))
    # Without a coordinator, the person hears what the coordinator would.
    lead: tuple[str, ...] = (coordinator,) if coordinator else (HUMAN,)
    both: tuple[str, ...] = (coordinator, HUMAN) if coordinator else (HUMAN,)

    workers = workers_of(registry, mission)
    # Each worker's verdict once this step's assessments are recorded (None: none yet).
    current: dict[str, Verdict | None] = {}
    newly_not_delivered: list[str] = []
    for worker in workers:
        old = mission.assessments.get(worker.id)
        current[worker.id] = old.verdict if old is not None else None
        verdict = assess(registry, mission, worker)
        if verdict is None:
            continue  # keeps its last verdict (a delivered worker that works again stays so)
        kind, reason = verdict
        if old is not None and old.verdict is kind and old.reason == reason:
            continue
        evidence = worker.delivery if mission.kind is MissionKind.CHANGE else None
        events.append(
            ev.WorkerAssessed(
                at=now,
                mission=mission.id,
                agent=worker.id,
                verdict=kind,
                reason=reason,
                evidence=evidence,
            )
        )
        current[worker.id] = kind
        told = both if kind in (Verdict.FAILED, Verdict.LOST) else lead
        notices.append(
            Notice(told, f"worker {worker.name} ({worker.id}): {kind} — {reason}", (worker.id,))
        )
        if kind is not Verdict.DELIVERED:
            newly_not_delivered.append(worker.name)

    status = mission.status
    all_delivered = bool(workers) and all(v is Verdict.DELIVERED for v in current.values())

    # A worker with no verdict at all (spawned after the others delivered) stops the report
    # standing too: reporting needs every worker delivered (seed 002).
    no_verdict = [w.name for w in workers if current[w.id] is None]
    if (newly_not_delivered or no_verdict) and status is not MissionStatus.RUNNING:
        parts: list[str] = []
        if newly_not_delivered:
            parts.append(f"{', '.join(newly_not_delivered)} no longer delivered")
        if no_verdict:
            verb = "has" if len(no_verdict) == 1 else "have"
            parts.append(f"{', '.join(no_verdict)} {verb} no verdict yet")
        reason = "; ".join(parts)
        events.append(
            ev.MissionUpdated(
                at=now,
                mission=mission.id,
                status=MissionStatus.RUNNING,
                reason=reason,
                report_requested=False,
            )
        )
        if status in (MissionStatus.AWAITING_APPROVAL, MissionStatus.APPROVED):
            notices.append(
                Notice(both, f"{reason}: {REPORT_NO_LONGER_STANDS}; the mission runs again")
            )
        return decision

    if status is MissionStatus.RUNNING and all_delivered:
        events.append(
            ev.MissionUpdated(
                at=now,
                mission=mission.id,
                status=MissionStatus.REPORTING,
                reason="every worker delivered",
                report_requested=True,
            )
        )
        if not mission.report_requested:
            notices.append(
                Notice(
                    lead,
                    "Every worker delivered. Check their work, then present your report to the "
                    "human with the volee tool present_report (a question with the approving "
                    "option).",
                )
            )
        return decision

    if status is MissionStatus.AWAITING_APPROVAL and mission.report is not None:
        question = registry.messages.get(mission.report)
        answer = registry.answer_to(mission.report)
        if question is not None and answer is not None:
            approving = question.approving
            if approving is not None and answer.chosen == approving:
                events.append(
                    ev.MissionUpdated(
                        at=now,
                        mission=mission.id,
                        status=MissionStatus.APPROVED,
                        reason=f"the human chose {approving!r}",
                    )
                )
                notices.append(Notice(lead, "The human approved your report.", (answer.id,)))
            else:
                said = answer.body or answer.chosen or "(no text)"
                events.append(
                    ev.MissionUpdated(
                        at=now,
                        mission=mission.id,
                        status=MissionStatus.REPORTING,
                        reason=f"the human answered: {said}",
                    )
                )
                notices.append(
                    Notice(lead, f"The human did not approve your report: {said}", (answer.id,))
                )
        return decision

    merged = mission.kind is MissionKind.ANALYSIS or all(_merged(w) for w in workers)
    if status is MissionStatus.APPROVED and all_delivered and merged:
        why = "approved and merged" if mission.kind is MissionKind.CHANGE else "approved"
        events.append(
            ev.MissionUpdated(at=now, mission=mission.id, status=MissionStatus.CLOSED, reason=why)
        )
        notices.append(Notice(both, "The mission is closed."))
    return decision

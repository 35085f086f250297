"""The mission supervisor: verdict table, delivery evidence, reporting and approval (seed 002)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import (
    HUMAN,
    Delivery,
    MessageKind,
    MissionKind,
    MissionStatus,
    PullRequest,
    PushState,
    Role,
    ThreadKind,
    Verdict,
)
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.core.supervisor import Decision, Notice, supervise

from .support import M1, M2, T0, agent_id, given, message_id, registered, state, thread_id

C, W1, W2 = agent_id(1), agent_id(2), agent_id(3)
MT = thread_id(7)
TIP = "a" * 40
OLD = "b" * 40


def delivered_evidence(**fields: Any) -> Delivery:
    """Evidence of a change that is delivered: commits, pushed, an open PR at the tip, clean."""
    base: dict[str, Any] = {
        "branch": "volee/w",
        "base": "main",
        "commits": 2,
        "tip": TIP,
        "unmerged_tip": TIP,
        "pushed": PushState.PUSHED,
        "clean": True,
        "pull_request": PullRequest(number=4, state="open", head=TIP),
        "pull_request_known": True,
        "checked_at": T0 + 20,
    }
    base.update(fields)
    return Delivery(**base)


def mission_with(
    *workers: str, kind: MissionKind = MissionKind.CHANGE, coordinator: bool = True
) -> Registry:
    """A running mission with its thread, a coordinator and the given workers."""
    events: list[ev.Event] = [
        ev.MissionCreated(at=T0, mission=M1, goal="ship it", kind=kind, thread=MT),
        ev.ThreadOpened(at=T0, thread=MT, kind=ThreadKind.MISSION, mission=M1),
    ]
    if coordinator:
        events += [
            registered(C, "coord", role=Role.COORDINATOR, mission=M1),
            ev.MissionUpdated(at=T0, mission=M1, coordinator=C),
        ]
    for n, worker in enumerate(workers):
        events.append(
            registered(
                worker,
                f"worker-{n + 1}",
                at=T0 + n * 0.001,
                role=Role.WORKER,
                mission=M1,
                parent=C if coordinator else None,
            )
        )
    return given(*events)


def run(registry: Registry, now: float = T0 + 30) -> Decision:
    """Supervise, apply the decision, and check that a second round decides nothing."""
    decision = supervise(registry, M1, now)
    for event in decision.events:
        reason = registry.validate(event)
        assert reason is None, f"{event.TYPE} refused: {reason}"
        registry.apply(event)
    again = supervise(registry, M1, now + 1)
    assert not again, f"not idempotent: {again}"
    return decision


def apply(registry: Registry, *events: ev.Event) -> Registry:
    for event in events:
        reason = registry.validate(event)
        assert reason is None, f"{event.TYPE} refused: {reason}"
        registry.apply(event)
    return registry


def worked_then(worker: str, final: AgentState, at: float = T0 + 10) -> list[ev.Event]:
    return [state(worker, AgentState.WORKING, at=at - 5), state(worker, final, at=at)]


def evidence(worker: str, d: Delivery, at: float = T0 + 20) -> ev.DeliveryUpdated:
    return ev.DeliveryUpdated(at=at, agent=worker, delivery=d)


def verdict(registry: Registry, worker: str) -> Verdict | None:
    a = registry.missions[M1].assessments.get(worker)
    return a.verdict if a else None


# --- the verdict table --------------------------------------------------------------------


@pytest.mark.parametrize("current", [AgentState.LAUNCHING, AgentState.WORKING])
def test_launching_or_working_has_no_verdict_yet(current: AgentState) -> None:
    registry = apply(mission_with(W1), state(W1, current, at=T0 + 1))
    assert not run(registry)
    assert verdict(registry, W1) is None


def test_idle_before_it_ever_worked_has_no_verdict_yet() -> None:
    registry = apply(mission_with(W1), state(W1, AgentState.IDLE, at=T0 + 1))
    assert not run(registry)


def test_needs_input_is_needs_human() -> None:
    registry = apply(
        mission_with(W1),
        state(W1, AgentState.WORKING, at=T0 + 1),
        state(W1, AgentState.NEEDS_INPUT, at=T0 + 2, detail="permission for Bash"),
    )
    decision = run(registry)
    assert verdict(registry, W1) is Verdict.NEEDS_HUMAN
    assert decision.notices[0].recipients == (C,)
    assert "permission for Bash" in decision.notices[0].body


@pytest.mark.parametrize(
    ("final", "expected"), [(AgentState.FAILED, Verdict.FAILED), (AgentState.LOST, Verdict.LOST)]
)
def test_failed_or_lost_is_told_to_the_human_too(final: AgentState, expected: Verdict) -> None:
    registry = apply(mission_with(W1), *worked_then(W1, final))
    decision = run(registry)
    assert verdict(registry, W1) is expected
    assert decision.notices[0].recipients == (C, HUMAN)


@pytest.mark.parametrize("final", [AgentState.IDLE, AgentState.DONE, AgentState.STOPPED])
def test_idle_done_stopped_are_judged_on_evidence(final: AgentState) -> None:
    registry = apply(mission_with(W1), *worked_then(W1, final), evidence(W1, delivered_evidence()))
    run(registry)
    assert verdict(registry, W1) is Verdict.DELIVERED


@pytest.mark.parametrize("final", [AgentState.IDLE, AgentState.DONE, AgentState.STOPPED])
def test_idle_done_stopped_without_commits_are_not_delivered(final: AgentState) -> None:
    d = delivered_evidence(commits=0, unmerged_tip=None, pull_request=None)
    registry = apply(mission_with(W1), *worked_then(W1, final), evidence(W1, d))
    decision = run(registry)
    assert verdict(registry, W1) is Verdict.NOT_DELIVERED
    assert "no commits" in decision.notices[0].body
    assert decision.notices[0].recipients == (C,)


# --- change evidence ----------------------------------------------------------------------


def _judged(d: Delivery) -> tuple[Verdict | None, str]:
    registry = apply(mission_with(W1), *worked_then(W1, AgentState.DONE), evidence(W1, d))
    run(registry)
    a = registry.missions[M1].assessments[W1]
    return a.verdict, a.reason


def test_every_missing_condition_is_named_at_once() -> None:
    d = delivered_evidence(
        commits=0, clean=False, pushed=PushState.UNPUSHED, pull_request=None, unmerged_tip=None
    )
    kind, reason = _judged(d)
    assert kind is Verdict.NOT_DELIVERED
    for words in ("no commits", "uncommitted", "not pushed", "no pull request"):
        assert words in reason


def test_a_pull_request_not_at_the_tip_proves_nothing() -> None:
    d = delivered_evidence(pull_request=PullRequest(number=4, state="open", head=OLD))
    kind, reason = _judged(d)
    assert kind is Verdict.NOT_DELIVERED
    assert "not at the branch's tip" in reason


def test_a_reused_branch_names_old_merged_pull_request_proves_nothing() -> None:
    # The old PR of the same branch name was merged, at another commit.
    d = delivered_evidence(pull_request=PullRequest(number=1, state="merged", head=OLD))
    kind, _ = _judged(d)
    assert kind is Verdict.NOT_DELIVERED


def test_a_merged_pull_request_at_the_tip_always_counts() -> None:
    d = delivered_evidence(
        pushed=PushState.UNKNOWN,
        clean=False,
        pull_request=PullRequest(number=4, state="merged", head=TIP),
    )
    assert _judged(d) == (Verdict.DELIVERED, "pull request #4 merged")


def test_a_merge_that_leaves_no_commit_ahead_still_counts() -> None:
    d = delivered_evidence(commits=0, merged_into_base=True, pull_request=None)
    assert _judged(d) == (Verdict.DELIVERED, "merged into main")


def test_without_a_remote_commits_and_a_clean_tree_are_enough() -> None:
    d = delivered_evidence(pushed=PushState.NO_REMOTE, pull_request=None, pull_request_known=False)
    kind, reason = _judged(d)
    assert kind is Verdict.DELIVERED
    assert "no remote" in reason


def test_an_unknown_pull_request_is_not_none() -> None:
    d = delivered_evidence(pull_request=None, pull_request_known=False)
    kind, reason = _judged(d)
    assert kind is Verdict.NOT_DELIVERED
    assert "unknown" in reason
    assert "no pull request" not in reason


# --- stale evidence -----------------------------------------------------------------------


def test_evidence_read_before_the_stop_waits_for_the_next_check() -> None:
    registry = apply(
        mission_with(W1),
        state(W1, AgentState.WORKING, at=T0 + 1),
        evidence(W1, delivered_evidence(commits=0, checked_at=T0 + 2), at=T0 + 2),
        state(W1, AgentState.DONE, at=T0 + 10),
    )
    assert not run(registry)
    assert verdict(registry, W1) is None


def test_never_not_delivered_just_before_delivered() -> None:
    registry = apply(mission_with(W1), *worked_then(W1, AgentState.DONE, at=T0 + 10))
    first = run(registry)  # no evidence read yet: nothing said
    assert not first
    apply(registry, evidence(W1, delivered_evidence(checked_at=T0 + 10)))
    second = run(registry)
    assert verdict(registry, W1) is Verdict.DELIVERED
    told = [n.body for n in (*first.notices, *second.notices)]
    assert not any("not-delivered" in body for body in told)


# --- analysis -----------------------------------------------------------------------------


def _report(sender: str, n: int = 1, thread: str = MT) -> ev.MessagePosted:
    return ev.MessagePosted(
        at=T0 + 9,
        message=message_id(n),
        thread=thread,
        sender=sender,
        recipients=(C,),
        kind=MessageKind.REPORT,
        body="findings",
    )


def test_analysis_worker_delivers_with_a_report_message() -> None:
    registry = apply(
        mission_with(W1, kind=MissionKind.ANALYSIS),
        _report(W1),
        *worked_then(W1, AgentState.DONE),
    )
    run(registry)
    assert verdict(registry, W1) is Verdict.DELIVERED


def test_analysis_worker_without_a_report_is_not_delivered() -> None:
    registry = apply(mission_with(W1, kind=MissionKind.ANALYSIS), *worked_then(W1, AgentState.DONE))
    run(registry)
    assert verdict(registry, W1) is Verdict.NOT_DELIVERED


# --- recording ----------------------------------------------------------------------------


def test_an_unchanged_verdict_is_not_recorded_again() -> None:
    registry = apply(
        mission_with(W1), *worked_then(W1, AgentState.DONE), evidence(W1, delivered_evidence())
    )
    run(registry)
    apply(registry, evidence(W1, delivered_evidence(checked_at=T0 + 40), at=T0 + 40))
    assert not supervise(registry, M1, T0 + 41)


def test_a_newly_registered_coordinator_is_recorded_on_its_mission() -> None:
    registry = mission_with(coordinator=False)
    apply(registry, registered(C, "coord", role=Role.COORDINATOR, mission=M1))
    decision = run(registry)
    assert registry.missions[M1].coordinator == C
    assert isinstance(decision.events[0], ev.MissionUpdated)


def test_without_a_coordinator_the_human_is_told() -> None:
    registry = apply(mission_with(W1, coordinator=False), *worked_then(W1, AgentState.FAILED))
    decision = run(registry)
    assert decision.notices[0].recipients == (HUMAN,)


def test_an_ended_mission_is_not_supervised() -> None:
    registry = apply(
        mission_with(W1),
        ev.MissionUpdated(at=T0 + 1, mission=M1, status=MissionStatus.CANCELLED),
    )
    assert not supervise(registry, M1, T0 + 2)


# --- reporting and approval ---------------------------------------------------------------


def delivered_mission(*workers: str) -> Registry:
    registry = mission_with(*workers)
    for w in workers:
        apply(registry, *worked_then(w, AgentState.DONE), evidence(w, delivered_evidence()))
    return registry


def test_all_delivered_moves_to_reporting_and_asks_the_coordinator_once() -> None:
    registry = delivered_mission(W1, W2)
    decision = run(registry)
    m = registry.missions[M1]
    assert m.status is MissionStatus.REPORTING
    assert m.report_requested
    asks = [n for n in decision.notices if "present your report" in n.body]
    assert len(asks) == 1
    assert asks[0].recipients == (C,)


def test_not_every_worker_delivered_stays_running() -> None:
    registry = mission_with(W1, W2)
    apply(registry, *worked_then(W1, AgentState.DONE), evidence(W1, delivered_evidence()))
    run(registry)
    assert registry.missions[M1].status is MissionStatus.RUNNING


def present(registry: Registry, n: int = 50, at: float = T0 + 40) -> str:
    """The coordinator presents its report (what missions.request_approval commits)."""
    report = message_id(n)
    apply(
        registry,
        ev.MessagePosted(
            at=at,
            message=report,
            thread=MT,
            sender=C,
            recipients=(HUMAN,),
            kind=MessageKind.QUESTION,
            body="all done",
            options=("approve", "revise"),
            approving="approve",
        ),
        ev.MissionUpdated(at=at, mission=M1, status=MissionStatus.AWAITING_APPROVAL, report=report),
    )
    return report


def answer(registry: Registry, report: str, n: int, chosen: str | None, body: str = "") -> None:
    apply(
        registry,
        ev.MessagePosted(
            at=T0 + 50 + n,
            message=message_id(n),
            thread=MT,
            sender=HUMAN,
            recipients=(C,),
            kind=MessageKind.ANSWER,
            body=body or (chosen or ""),
            reply_to=report,
            chosen=chosen,
        ),
    )


def awaiting() -> tuple[Registry, str]:
    registry = delivered_mission(W1)
    run(registry)
    return registry, present(registry)


def test_the_approving_option_chosen_approves() -> None:
    registry, report = awaiting()
    answer(registry, report, 60, "approve")
    run(registry, T0 + 70)
    assert registry.missions[M1].status is MissionStatus.APPROVED


@pytest.mark.parametrize(
    ("chosen", "body"),
    [("revise", ""), (None, "please add tests"), ("Approve", ""), (None, "approve")],
)
def test_any_other_answer_goes_back_to_reporting_and_tells_the_coordinator(
    chosen: str | None, body: str
) -> None:
    registry, report = awaiting()
    answer(registry, report, 60, chosen, body)
    decision = run(registry, T0 + 70)
    m = registry.missions[M1]
    assert m.status is MissionStatus.REPORTING
    told = decision.notices[0]
    assert told.recipients == (C,)
    assert (body or chosen or "") in told.body


def test_an_answer_from_an_agent_is_not_the_humans() -> None:
    registry, report = awaiting()
    apply(
        registry,
        ev.MessagePosted(
            at=T0 + 61,
            message=message_id(61),
            thread=MT,
            sender=W1,
            recipients=(C,),
            reply_to=report,
            chosen="approve",
        ),
    )
    assert not run(registry, T0 + 70)
    assert registry.missions[M1].status is MissionStatus.AWAITING_APPROVAL


def test_only_the_answer_to_the_report_presented_last_counts() -> None:
    registry, first = awaiting()
    second = present(registry, n=51, at=T0 + 45)
    answer(registry, first, 60, "approve")
    assert not run(registry, T0 + 70)
    assert registry.missions[M1].status is MissionStatus.AWAITING_APPROVAL
    answer(registry, second, 61, "approve")
    run(registry, T0 + 71)
    assert registry.missions[M1].status is MissionStatus.APPROVED


def test_an_answer_counts_only_while_awaiting_approval() -> None:
    registry = delivered_mission(W1)
    run(registry)
    report = present(registry)
    apply(registry, ev.MissionUpdated(at=T0 + 41, mission=M1, status=MissionStatus.REPORTING))
    answer(registry, report, 60, "approve")
    assert not run(registry, T0 + 70)
    assert registry.missions[M1].status is MissionStatus.REPORTING


def test_approved_closes_once_every_merge_is_seen() -> None:
    registry, report = awaiting()
    answer(registry, report, 60, "approve")
    run(registry, T0 + 70)
    assert registry.missions[M1].status is MissionStatus.APPROVED
    merged = delivered_evidence(commits=0, merged_into_base=True, checked_at=T0 + 80)
    apply(registry, evidence(W1, merged, at=T0 + 80))
    run(registry, T0 + 81)
    assert registry.missions[M1].status is MissionStatus.CLOSED
    assert registry.agents[W1].held_for_good


def test_approved_analysis_closes_at_once() -> None:
    registry = apply(
        mission_with(W1, kind=MissionKind.ANALYSIS), _report(W1), *worked_then(W1, AgentState.DONE)
    )
    run(registry)
    report = present(registry)
    answer(registry, report, 60, "approve")
    run(registry, T0 + 70)
    assert registry.missions[M1].status is MissionStatus.CLOSED


@pytest.mark.parametrize("status", ["awaiting", "approved"])
def test_a_verdict_that_stops_being_delivered_sends_the_mission_back(status: str) -> None:
    registry, report = awaiting()
    if status == "approved":
        answer(registry, report, 60, "approve")
        run(registry, T0 + 70)
    apply(
        registry,
        state(W1, AgentState.WORKING, at=T0 + 90),
        state(W1, AgentState.DONE, at=T0 + 95),
        evidence(W1, delivered_evidence(clean=False, checked_at=T0 + 96), at=T0 + 96),
    )
    decision = run(registry, T0 + 97)
    m = registry.missions[M1]
    assert m.status is MissionStatus.RUNNING
    assert not m.report_requested
    stands = [n for n in decision.notices if "no longer stands" in n.body]
    assert stands
    assert stands[0].recipients == (C, HUMAN)


def test_a_delivered_worker_that_works_again_keeps_its_delivery() -> None:
    registry = delivered_mission(W1)
    run(registry)
    apply(registry, state(W1, AgentState.WORKING, at=T0 + 90))
    assert not run(registry, T0 + 91)
    assert verdict(registry, W1) is Verdict.DELIVERED
    assert registry.missions[M1].status is MissionStatus.REPORTING
    # Stopped again: the old evidence is stale, the verdict waits (still delivered).
    apply(registry, state(W1, AgentState.DONE, at=T0 + 95))
    assert not run(registry, T0 + 96)
    assert verdict(registry, W1) is Verdict.DELIVERED


def test_reporting_goes_back_to_running_on_a_not_delivered_verdict() -> None:
    registry = delivered_mission(W1)
    run(registry)
    apply(
        registry,
        state(W1, AgentState.WORKING, at=T0 + 90),
        state(W1, AgentState.FAILED, at=T0 + 95, detail="exited with code 1"),
    )
    run(registry, T0 + 96)
    assert registry.missions[M1].status is MissionStatus.RUNNING


def test_supervise_is_pure_it_changes_nothing_itself() -> None:
    registry = delivered_mission(W1)
    before = replace(registry.missions[M1])
    supervise(registry, M1, T0 + 30)
    assert registry.missions[M1] == before


def test_approval_while_a_worker_has_no_verdict_sends_the_mission_back_and_never_approves() -> None:
    # Seed 002: a mission reaches reporting only when every worker delivered. A worker spawned
    # while the report waits has no verdict: the report no longer stands.
    registry, report = awaiting()
    apply(
        registry,
        registered(W2, "worker-late", at=T0 + 45, role=Role.WORKER, mission=M1, parent=C),
        state(W2, AgentState.WORKING, at=T0 + 46),
    )
    answer(registry, report, 60, "approve")

    decision = run(registry, T0 + 70)

    m = registry.missions[M1]
    assert m.status is MissionStatus.RUNNING
    assert not m.report_requested
    assert "worker-late has no verdict yet" in (m.reason or "")
    stands = [n for n in decision.notices if "no longer stands" in n.body]
    assert [n.recipients for n in stands] == [(C, HUMAN)]
    # The late worker delivers: reporting again, and the old answer approves nothing.
    apply(
        registry,
        state(W2, AgentState.DONE, at=T0 + 80),
        evidence(W2, delivered_evidence(checked_at=T0 + 81), at=T0 + 81),
    )
    run(registry, T0 + 90)
    assert registry.missions[M1].status is MissionStatus.REPORTING


@pytest.mark.parametrize("status", ["reporting", "approved"])
def test_a_worker_without_a_verdict_sends_reporting_and_approved_back(status: str) -> None:
    registry, report = awaiting()
    if status == "approved":
        answer(registry, report, 60, "approve")
        run(registry, T0 + 70)
    else:
        answer(registry, report, 60, "revise")
        run(registry, T0 + 70)
    assert registry.missions[M1].status.value == status
    apply(registry, registered(W2, "worker-late", at=T0 + 75, role=Role.WORKER, mission=M1))

    run(registry, T0 + 80)

    assert registry.missions[M1].status is MissionStatus.RUNNING


def test_an_agent_that_joined_is_never_judged_as_a_worker() -> None:
    registry = mission_with(W1)
    apply(
        registry,
        registered(W2, "joiner"),
        ev.MissionInvited(at=T0, agent=W2, mission=M1, by=C),
        ev.MembershipChanged(at=T0 + 1, agent=W2, mission=M1),
        *worked_then(W2, AgentState.FAILED),
        *worked_then(W1, AgentState.WORKING),
    )
    run(registry)
    assert verdict(registry, W2) is None
    assert registry.agents[W2].mission == M1


# --- who and what counts ------------------------------------------------------------------


def test_a_closed_or_cancelled_mission_is_no_longer_supervised() -> None:
    for ended in (MissionStatus.CLOSED, MissionStatus.CANCELLED):
        registry = apply(
            mission_with(W1, W2),
            *worked_then(W1, AgentState.FAILED),
            ev.MissionUpdated(at=T0 + 11, mission=M1, status=ended),
        )
        assert not supervise(registry, M1, T0 + 30)
        assert verdict(registry, W1) is None


def test_a_coordinator_not_yet_recorded_on_its_mission_is_never_judged_as_a_worker() -> None:
    registry = mission_with(W1, coordinator=False)
    apply(
        registry,
        registered(C, "coord", role=Role.COORDINATOR, mission=M1),
        *worked_then(C, AgentState.FAILED),
    )
    decision = run(registry)
    assert not [e for e in decision.events if isinstance(e, ev.WorkerAssessed)]
    assert registry.missions[M1].coordinator == C


def test_one_worker_with_nothing_new_does_not_stop_the_judging_of_the_workers_after_it() -> None:
    registry = apply(
        mission_with(W1, W2),
        state(W1, AgentState.WORKING, at=T0 + 1),
        *worked_then(W2, AgentState.FAILED),
    )
    run(registry)
    assert verdict(registry, W1) is None
    assert verdict(registry, W2) is Verdict.FAILED


def test_a_worker_that_fails_before_it_ever_worked_is_judged_failed() -> None:
    # A launch that failed (a bad flag, a missing login) never reaches working.
    registry = apply(mission_with(W1), state(W1, AgentState.FAILED, at=T0 + 1, detail="no login"))
    run(registry)
    assert registry.missions[M1].assessments[W1].reason == "no login"
    assert verdict(registry, W1) is Verdict.FAILED


@pytest.mark.parametrize(
    ("final", "reason"),
    [
        (AgentState.NEEDS_INPUT, "waits for a person"),
        (AgentState.FAILED, "failed"),
        (AgentState.LOST, "volee cannot find it any more"),
    ],
)
def test_a_verdict_has_a_reason_even_when_the_agent_said_nothing(
    final: AgentState, reason: str
) -> None:
    registry = apply(mission_with(W1), *worked_then(W1, final))
    decision = run(registry)
    assert registry.missions[M1].assessments[W1].reason == reason
    assert decision.notices[0].body.endswith(f"— {reason}")


def test_a_verdict_notice_names_the_worker_and_refers_to_it() -> None:
    registry = apply(mission_with(W1), *worked_then(W1, AgentState.FAILED, at=T0 + 10))
    decision = run(registry)
    assert decision.notices == [
        Notice((C, HUMAN), f"worker worker-1 ({W1}): failed — failed", (W1,))
    ]


def test_without_a_coordinator_the_person_hears_every_verdict() -> None:
    registry = apply(
        mission_with(W1, coordinator=False),
        *worked_then(W1, AgentState.DONE),
        evidence(W1, delivered_evidence(commits=0, unmerged_tip=None, pull_request=None)),
    )
    decision = run(registry)
    assert verdict(registry, W1) is Verdict.NOT_DELIVERED
    assert [n.recipients for n in decision.notices] == [(HUMAN,)]


def test_a_change_verdict_keeps_the_evidence_it_was_judged_on() -> None:
    d = delivered_evidence()
    registry = apply(mission_with(W1), *worked_then(W1, AgentState.DONE), evidence(W1, d))
    decision = run(registry)
    assessed = [e for e in decision.events if isinstance(e, ev.WorkerAssessed)]
    assert [e.evidence for e in assessed] == [d]
    assert registry.missions[M1].assessments[W1].evidence == d


def test_an_analysis_verdict_keeps_no_branch_evidence() -> None:
    registry = apply(
        mission_with(W1, kind=MissionKind.ANALYSIS),
        _report(W1),
        *worked_then(W1, AgentState.DONE),
        evidence(W1, delivered_evidence()),
    )
    run(registry)
    assessment = registry.missions[M1].assessments[W1]
    assert (assessment.verdict, assessment.evidence) == (Verdict.DELIVERED, None)


def test_the_supervisors_events_are_stamped_at_its_round() -> None:
    registry = mission_with(coordinator=False)
    apply(registry, registered(C, "coord", role=Role.COORDINATOR, mission=M1))
    for w in (W1, W2):
        apply(
            registry,
            registered(w, f"w-{w[-2:]}", role=Role.WORKER, mission=M1),
            *worked_then(w, AgentState.DONE),
            evidence(w, delivered_evidence()),
        )
    decision = run(registry, T0 + 33)
    assert len(decision.events) == 4  # coordinator, two verdicts, reporting
    assert {e.at for e in decision.events} == {T0 + 33}


# --- analysis reports ----------------------------------------------------------------------


def _analysis(*extra: ev.Event) -> Registry:
    registry = apply(
        mission_with(W1, W2, kind=MissionKind.ANALYSIS),
        ev.ThreadOpened(at=T0, thread=thread_id(8), kind=ThreadKind.DIRECT),
        ev.MissionCreated(at=T0, mission=M2, goal="other", kind=MissionKind.ANALYSIS),
        ev.ThreadOpened(at=T0, thread=thread_id(9), kind=ThreadKind.MISSION, mission=M2),
        *extra,
    )
    apply(registry, *worked_then(W1, AgentState.DONE, at=T0 + 20))
    return registry


def test_a_report_by_another_agent_or_in_another_thread_is_not_a_workers_delivery() -> None:
    registry = _analysis(
        _report(W2, 1),  # another worker's report
        _report(W1, 2, thread=thread_id(8)),  # a direct thread, no mission
        _report(W1, 3, thread=thread_id(9)),  # another mission's thread
    )
    run(registry)
    assessment = registry.missions[M1].assessments[W1]
    assert (assessment.verdict, assessment.reason) == (
        Verdict.NOT_DELIVERED,
        "no report message yet",
    )


def test_a_plain_message_of_the_worker_is_not_its_report() -> None:
    registry = _analysis(replace(_report(W1), kind=MessageKind.TEXT))
    run(registry)
    assert verdict(registry, W1) is Verdict.NOT_DELIVERED


def test_the_workers_latest_report_counts_among_any_other_messages() -> None:
    second_thread = thread_id(10)
    registry = _analysis(
        _report(W2, 1),
        _report(W1, 2, thread=thread_id(8)),
        ev.ThreadOpened(at=T0, thread=second_thread, kind=ThreadKind.MISSION, mission=M1),
        _report(W1, 3),
        replace(_report(W1, 4, thread=second_thread), at=T0 + 12),  # any thread of the mission
        _report(W1, 5),
    )
    run(registry)
    assessment = registry.missions[M1].assessments[W1]
    assert (assessment.verdict, assessment.reason) == (
        Verdict.DELIVERED,
        f"reported ({message_id(4)})",
    )


# --- the mission's own steps ---------------------------------------------------------------


def test_reporting_says_why_and_asks_the_coordinator_for_its_report_with_the_tool() -> None:
    registry = delivered_mission(W1)
    decision = run(registry)
    assert registry.missions[M1].reason == "every worker delivered"
    assert decision.notices[-1] == Notice(
        (C,),
        "Every worker delivered. Check their work, then present your report to the human with "
        "the volee tool present_report (a question with the approving option).",
    )


def test_the_report_no_longer_stands_names_every_worker_it_misses() -> None:
    w3, w4 = agent_id(4), agent_id(5)
    registry = delivered_mission(W1, W2)
    run(registry)
    present(registry)
    apply(
        registry,
        registered(w3, "late-1", at=T0 + 40, role=Role.WORKER, mission=M1),
        registered(w4, "late-2", at=T0 + 41, role=Role.WORKER, mission=M1),
        state(W1, AgentState.FAILED, at=T0 + 42),
        state(W2, AgentState.FAILED, at=T0 + 42),
    )
    decision = run(registry, T0 + 50)
    reason = "worker-1, worker-2 no longer delivered; late-1, late-2 have no verdict yet"
    assert registry.missions[M1].reason == reason
    assert {e.at for e in decision.events} == {T0 + 50}
    assert decision.notices[-1] == Notice(
        (C, HUMAN), f"{reason}: the report no longer stands; the mission runs again"
    )


def test_a_delivered_worker_whose_new_evidence_still_proves_it_keeps_the_report_standing() -> None:
    registry = delivered_mission(W1)
    run(registry)
    apply(
        registry,
        state(W1, AgentState.WORKING, at=T0 + 40),
        state(W1, AgentState.DONE, at=T0 + 45),
        evidence(W1, delivered_evidence(commits=3, checked_at=T0 + 46), at=T0 + 46),
    )
    decision = run(registry, T0 + 50)
    assert registry.missions[M1].assessments[W1].reason.startswith("3 commits")
    assert registry.missions[M1].status is MissionStatus.REPORTING
    assert [type(e) for e in decision.events] == [ev.WorkerAssessed]


def test_an_approval_is_told_to_the_coordinator_with_the_answer_it_refers_to() -> None:
    registry, report = awaiting()
    answer(registry, report, 60, "approve")
    decision = run(registry, T0 + 70)
    assert registry.missions[M1].reason == "the human chose 'approve'"
    assert decision.notices == [Notice((C,), "The human approved your report.", (message_id(60),))]


@pytest.mark.parametrize(
    ("chosen", "body", "said"),
    [("revise", "", "revise"), (None, "", "(no text)"), ("revise", "add tests", "add tests")],
)
def test_a_refusal_is_told_in_the_persons_words_with_the_answer_it_refers_to(
    chosen: str | None, body: str, said: str
) -> None:
    registry, report = awaiting()
    apply(
        registry,
        ev.MessagePosted(
            at=T0 + 60,
            message=message_id(60),
            thread=MT,
            sender=HUMAN,
            recipients=(C,),
            kind=MessageKind.ANSWER,
            body=body,
            reply_to=report,
            chosen=chosen,
        ),
    )
    decision = run(registry, T0 + 70)
    assert registry.missions[M1].reason == f"the human answered: {said}"
    assert [e.at for e in decision.events] == [T0 + 70]
    assert decision.notices == [
        Notice((C,), f"The human did not approve your report: {said}", (message_id(60),))
    ]


def test_an_approved_change_closes_as_approved_and_merged() -> None:
    registry, report = awaiting()
    answer(registry, report, 60, "approve")
    run(registry, T0 + 70)
    merged = delivered_evidence(commits=0, merged_into_base=True, checked_at=T0 + 80)
    apply(registry, evidence(W1, merged, at=T0 + 80))
    decision = run(registry, T0 + 81)
    assert registry.missions[M1].reason == "approved and merged"
    assert decision.notices[-1] == Notice((C, HUMAN), "The mission is closed.")
    assert {e.at for e in decision.events} == {T0 + 81}


def test_one_call_that_approves_then_closes_returns_both_steps() -> None:
    registry = apply(
        mission_with(W1, kind=MissionKind.ANALYSIS), _report(W1), *worked_then(W1, AgentState.DONE)
    )
    run(registry)
    report = present(registry)
    answer(registry, report, 60, "approve")
    decision = run(registry, T0 + 70)
    statuses = [e.status for e in decision.events if isinstance(e, ev.MissionUpdated)]
    assert statuses == [MissionStatus.APPROVED, MissionStatus.CLOSED]
    assert [n.body for n in decision.notices] == [
        "The human approved your report.",
        "The mission is closed.",
    ]
    assert registry.missions[M1].reason == "approved"
    assert {e.at for e in decision.events} == {T0 + 70}

"""recovery.md's decision table, one test per row, and M38's crash restarts, on explicit times."""

from __future__ import annotations

from dataclasses import replace

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core import recovery as rules
from volee_desktop.core.model import (
    Agent,
    Harness,
    Mission,
    MissionKind,
    MissionStatus,
    PendingRestart,
    Request,
    RequestKind,
)
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .support import A1, A2, A3, M1, T0, given, linked, registered, state

POLICY = rules.Policy()
NOW = T0 + 3600.0


def working_agent(**changes: object) -> Agent:
    """A Claude Code agent that was mid-turn, with a session, an hour of progress ago at most."""
    registry = given(registered(A1), linked(A1, "s-1"), state(A1, AgentState.WORKING, at=NOW - 60))
    return replace(registry.agents[A1], pid=4242, **changes)  # type: ignore[arg-type]


def decide(agent: Agent, **kw: object) -> rules.Decision:
    kw.setdefault("cause", rules.MACHINE_RESTARTED)
    kw.setdefault("now", NOW)
    kw.setdefault("policy", POLICY)
    return rules.decide_interrupted(agent, **kw)  # type: ignore[arg-type]


def applied(decision: rules.Decision, registry: Registry | None = None) -> Agent:
    """The agent after the decision's events are applied to a registry holding it."""
    reg = registry or given(registered(A1), linked(A1, "s-1"), state(A1, AgentState.WORKING))
    for event in decision.events(NOW):
        assert reg.validate(event) is None
        reg.apply(event)
    return reg.agents[A1]


# --- detection ---------------------------------------------------------------------------


def test_cause_is_a_machine_restart_when_the_record_is_of_another_boot() -> None:
    # hosts.records.same_boot compares boot ids (or boot times, within a second).
    assert rules.cause_of_boot(False) == rules.MACHINE_RESTARTED
    assert rules.cause_of_boot(True) == rules.HOST_STOPPED
    assert rules.cause_of_boot(None) == rules.HOST_STOPPED  # nothing says it restarted


def test_needs_recovery_only_once_per_interruption() -> None:
    agent = working_agent()
    assert rules.needs_recovery(agent)
    after = applied(decide(agent, policy=replace(POLICY, resume_after_reboot=False)))
    assert not rules.needs_recovery(after)  # no pid, not live: decided already
    pending = PendingRestart(due_at=NOW, attempt=1, budget=3, reason="killed by SIGKILL")
    waiting = replace(agent, restart=pending)
    assert not rules.needs_recovery(waiting)


# --- the table, in order -----------------------------------------------------------------


def test_rule_1_held_by_a_persons_stop_stays_stopped() -> None:
    d = decide(working_agent(held="stopped by you"))
    assert (d.rule, d.outcome, d.state, d.action) == (1, rules.HELD, AgentState.STOPPED, None)
    assert "comes back only when someone writes" in d.reason
    assert not d.starts


def test_rule_2_mission_over_is_held_for_good() -> None:
    closed = Mission(id=M1, goal="g", kind=MissionKind.CHANGE, status=MissionStatus.CLOSED)
    d = decide(working_agent(mission=M1), mission=closed)
    assert (d.rule, d.outcome, d.state) == (2, rules.HELD, AgentState.STOPPED)
    d = decide(working_agent(held="mission over", held_for_good=True))
    assert (d.rule, d.outcome) == (2, rules.HELD)


def test_rule_3_generic_harness_is_stopped_with_a_relaunch_action() -> None:
    d = decide(working_agent(harness=Harness.GENERIC))
    assert (d.rule, d.outcome, d.action, d.state) == (
        3,
        rules.STOPPED,
        rules.RELAUNCH,
        AgentState.STOPPED,
    )
    agent = applied(d)
    assert (agent.interrupted, agent.action) == (rules.MACHINE_RESTARTED, "relaunch")


def test_rule_4_interrupted_twice_within_ten_minutes_fails() -> None:
    d = decide(working_agent(interruptions=(NOW - 599,)))
    assert (d.rule, d.outcome, d.state) == (4, rules.FAILED, AgentState.FAILED)
    assert d.reason == "interrupted twice within 10 minutes; not resumed"
    # Eleven minutes earlier does not count.
    assert decide(working_agent(interruptions=(NOW - 660,))).rule == 9


@pytest.mark.parametrize("was", [AgentState.IDLE, AgentState.DONE, AgentState.NEEDS_INPUT])
def test_rule_5_not_working_is_stopped_and_marked_interrupted(was: AgentState) -> None:
    d = decide(working_agent(state=was))
    assert (d.rule, d.outcome, d.state, d.action) == (5, rules.STOPPED, AgentState.STOPPED, None)
    assert "a message to it resumes it" in d.reason
    assert applied(d).interrupted == rules.MACHINE_RESTARTED


def test_rule_6_resume_after_reboot_off_offers_a_resume_action() -> None:
    d = decide(working_agent(), policy=replace(POLICY, resume_after_reboot=False))
    assert (d.rule, d.outcome, d.action, d.state) == (
        6,
        rules.STOPPED,
        rules.RESUME,
        AgentState.STOPPED,
    )
    assert "resume_after_reboot is off" in d.reason


def test_rule_7_last_progress_older_than_max_age_says_the_age() -> None:
    agent = working_agent(last_progress_at=NOW - 7 * 3600)
    d = decide(agent)
    assert (d.rule, d.action) == (7, rules.RESUME)
    assert "7 h ago" in d.reason
    assert "(6 h)" in d.reason


def test_rule_8_over_the_per_start_cap() -> None:
    d = decide(working_agent(), resumed_in_this_start=10)
    assert (d.rule, d.action) == (8, rules.RESUME)
    assert "over the per-start cap" in d.reason


def test_rule_8_the_most_recent_work_goes_first() -> None:
    base = working_agent()
    agents = [
        replace(base, id=aid, last_progress_at=NOW - age)
        for aid, age in ((A1, 300.0), (A2, 10.0), (A3, 100.0))
    ]
    decisions = rules.decide_all(
        [(a, rules.MACHINE_RESTARTED) for a in agents],
        now=NOW,
        policy=replace(POLICY, resume_cap_per_start=2),
    )
    assert [(d.agent, d.rule) for d in decisions] == [(A2, 9), (A3, 9), (A1, 8)]


def test_rule_9_working_is_resumed() -> None:
    d = decide(working_agent())
    assert (d.rule, d.outcome, d.state, d.action) == (9, rules.RESUME, AgentState.WORKING, None)
    assert d.starts
    types = [e.TYPE for e in d.events(NOW)]
    assert types == ["interruption-detected", "recovery-decided", "state-changed"]
    agent = applied(d)
    assert agent.state is AgentState.WORKING
    assert agent.interrupted is None


def test_rule_9_launching_without_a_session_is_launched_again_with_its_task() -> None:
    agent = working_agent(state=AgentState.LAUNCHING)
    d = decide(agent, session_written=False)
    assert (d.rule, d.outcome, d.state) == (9, rules.RELAUNCH, AgentState.LAUNCHING)
    assert "original task" in d.reason
    assert not rules.session_written(agent)


def test_every_decision_records_rule_reason_and_the_state_it_implies() -> None:
    d = decide(working_agent(), policy=replace(POLICY, resume_after_reboot=False))
    interrupted, decided, changed = d.events(NOW)
    assert isinstance(interrupted, ev.InterruptionDetected)
    assert interrupted.state is AgentState.WORKING
    assert isinstance(decided, ev.RecoveryDecided)
    assert (decided.rule, decided.outcome, decided.action) == (6, "stopped", "resume")
    assert isinstance(changed, ev.StateChanged)
    assert changed.progress is False  # rule 7 keeps the real age of the work


# --- the resume prompt -------------------------------------------------------------------


def test_the_resume_prompt_is_volees_own_and_says_the_turn_was_cut_off() -> None:
    text = rules.resume_prompt(rules.MACHINE_RESTARTED)
    assert text.startswith("[volee] The machine restarted while you were working")
    assert "last turn was cut off" in text
    assert "before repeating anything with side effects" in text
    assert "host" in rules.resume_prompt(rules.HOST_STOPPED)
    assert rules.continue_prompt("killed by SIGKILL").endswith("Continue where you left off.")


# --- M38: crashes while the daemon runs --------------------------------------------------


def crash(
    agent: Agent, *, code: int | None = None, signal: str | None = "SIGKILL", **kw: object
) -> rules.ExitDecision:
    kw.setdefault("now", NOW)
    kw.setdefault("policy", POLICY)
    return rules.decide_exit(
        agent,
        code=code,
        signal=signal,
        stop_requested=False,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("done", "delay"), [(0, 1.0), (1, 5.0), (2, 15.0)])
def test_m38_a_crash_during_a_turn_schedules_a_restart_after_the_delays(
    done: int, delay: float
) -> None:
    d = crash(working_agent(restarts_in_row=done))
    assert d.restart is not None
    assert (d.restart.due_at, d.restart.attempt, d.restart.budget) == (NOW + delay, done + 1, 3)
    assert d.state is AgentState.WORKING
    assert d.detail == (
        f"killed by SIGKILL; continuing in {delay:g} s (automatic restart {done + 1} of 3)"
    )


def test_m38_past_the_budget_fails_with_why() -> None:
    d = crash(working_agent(restarts_in_row=3))
    assert d.restart is None
    assert d.state is AgentState.FAILED
    assert d.detail.endswith(
        "not restarted again after 3 automatic restarts in a row (reply to continue)"
    )


def test_m38_a_signal_is_never_success_and_a_non_zero_code_is_a_crash() -> None:
    assert crash(working_agent(), signal=None, code=3).restart is not None
    ok = crash(working_agent(), signal=None, code=0)
    assert ok.restart is None
    assert ok.state is AgentState.STOPPED


def test_a_program_that_exits_with_an_error_before_reporting_anything_failed_to_launch() -> None:
    # codex exits with a usage error on a mode it does not take: restarting it fails the same.
    output = (
        "error: invalid value 'untrusted' for '--ask-for-approval <APPROVAL_POLICY>'\n"
        "  [possible values: on-request, never]\n\n"
        "For more information, try '--help'.\n\n"
    )
    d = crash(working_agent(state=AgentState.LAUNCHING), signal=None, code=2, output=output)
    assert d.restart is None
    assert d.state is AgentState.FAILED
    assert d.detail == (
        "could not start: exited with code 2: "
        "error: invalid value 'untrusted' for '--ask-for-approval <APPROVAL_POLICY>'"
    )
    plain = crash(
        working_agent(state=AgentState.LAUNCHING), signal=None, code=1, output="Not logged in\n"
    )
    assert plain.detail == "could not start: exited with code 1: Not logged in"
    bare = crash(working_agent(state=AgentState.LAUNCHING), signal=None, code=2)
    assert (bare.restart, bare.detail) == (None, "could not start: exited with code 2")


def test_a_launch_killed_by_a_signal_is_still_restarted() -> None:
    d = crash(working_agent(state=AgentState.LAUNCHING), signal="SIGKILL")
    assert d.restart is not None
    ok = crash(working_agent(state=AgentState.LAUNCHING), signal=None, code=0)
    assert (ok.restart, ok.state) == (None, AgentState.STOPPED)


def test_m38_a_kill_while_waiting_for_a_permission_is_a_kill_mid_run_and_restarts() -> None:
    asked = Request(
        id="rq1", kind=RequestKind.PERMISSION, tool="Bash", summary="Bash: rm -rf build/"
    )
    agent = working_agent(state=AgentState.NEEDS_INPUT, request=asked)

    d = crash(agent)

    assert d.restart is not None
    assert d.events_before[0].during_turn  # type: ignore[attr-defined]
    assert d.restart.reason == (
        "killed by SIGKILL while it waited for you (Bash: rm -rf build/); "
        "that was never answered: ask again"
    )
    prompt = rules.continue_prompt(d.restart.reason)
    assert "Bash: rm -rf build/" in prompt
    assert "ask again" in prompt
    assert prompt.endswith("Continue where you left off.")


def test_m38_a_needs_input_that_asks_nothing_of_the_turn_is_not_a_run() -> None:
    # Waiting at its prompt after the turn (a dialog, nothing asked mid-turn): not restarted.
    notice = Request(id="rq2", kind=RequestKind.DIALOG, summary="Claude is waiting for your input")
    d = crash(working_agent(state=AgentState.NEEDS_INPUT, request=notice))
    assert d.restart is None
    answered = Request(id="rq3", kind=RequestKind.PERMISSION, tool="Bash", answered="deny")
    assert crash(working_agent(state=AgentState.NEEDS_INPUT, request=answered)).restart is None
    assert crash(working_agent(state=AgentState.NEEDS_INPUT)).restart is None


def test_m38_a_crash_outside_a_turn_fails_without_a_restart() -> None:
    d = crash(working_agent(state=AgentState.IDLE))
    assert d.restart is None
    assert (d.state, d.detail) == (AgentState.FAILED, "killed by SIGKILL")


def test_m38_restart_on_crash_off_restarts_nothing() -> None:
    d = crash(working_agent(), policy=replace(POLICY, restart_on_crash=False))
    assert d.restart is None
    assert d.state is AgentState.FAILED


def test_m38_a_held_agent_is_never_restarted() -> None:
    d = crash(working_agent(held="stopped by you"))
    assert d.restart is None
    assert d.state is AgentState.STOPPED
    stopped = rules.decide_exit(
        working_agent(), code=None, signal="SIGTERM", stop_requested=True, now=NOW, policy=POLICY
    )
    assert stopped.restart is None


def test_m38_a_crash_while_launching_stays_launching() -> None:
    d = crash(working_agent(state=AgentState.LAUNCHING))
    assert d.state is AgentState.LAUNCHING
    assert d.restart is not None


def test_m38_a_host_vanishing_under_a_working_run_follows_the_same_path() -> None:
    d = rules.decide_vanished(working_agent(), cause=rules.HOST_STOPPED, now=NOW, policy=POLICY)
    assert d.restart is not None
    assert d.restart.attempt == 1
    assert isinstance(d.events()[0], ev.InterruptionDetected)
    assert "volee's host was stopped; continuing in 1 s" in d.detail
    off = rules.decide_vanished(
        working_agent(),
        cause=rules.HOST_STOPPED,
        now=NOW,
        policy=replace(POLICY, resume_after_reboot=False),
    )
    assert off.restart is None
    assert off.state is AgentState.STOPPED


def test_m38_the_budget_comes_back_after_a_normal_turn_with_a_minute_of_uptime() -> None:
    agent = working_agent(restarts_in_row=2, host_started_at=NOW - 61)
    assert rules.budget_given_back(agent, turn_ended_at=NOW)
    young = replace(agent, host_started_at=NOW - 30)
    assert not rules.budget_given_back(young, turn_ended_at=NOW)
    assert not rules.budget_given_back(replace(agent, restarts_in_row=0), turn_ended_at=NOW)


def test_m38_a_stop_cancels_a_waiting_restart_in_the_registry() -> None:
    reg = given(registered(A1), state(A1, AgentState.WORKING))
    d = crash(reg.agents[A1])
    for event in d.events():
        reg.apply(event)
    assert reg.agents[A1].restart is not None
    assert rules.restart_due(reg.agents[A1], NOW + 1)
    reg.apply(ev.StopRequested(at=NOW, agent=A1))
    assert reg.agents[A1].restart is None
    assert not rules.may_restart_automatically(reg.agents[A1])


def test_m38_any_start_replaces_the_waiting_restart_without_giving_the_budget_back() -> None:
    reg = given(registered(A1), state(A1, AgentState.WORKING))
    for event in crash(reg.agents[A1]).events():
        reg.apply(event)
    reg.apply(ev.HostStarted(at=NOW, agent=A1, host_pid=1, program_pid=2, automatic=False))
    agent = reg.agents[A1]
    assert agent.restart is None
    assert agent.restarts_in_row == 1

"""Recovery rules at their edges and in the words people read (found by mutation testing).

Each test names the rule it checks: the exact boundaries of M38 and recovery.md's table,
the cause kept through every decision, what a decision writes to the timeline, and the
rules that hold an agent of an ended mission whatever path decides for it.
"""

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
from volee_desktop.core.states import AgentState

from .support import A1, A2, A3, M1, T0, given, linked, registered, state

POLICY = rules.Policy()
NOW = T0 + 3600.0
CLOSED = Mission(id=M1, goal="g", kind=MissionKind.CHANGE, status=MissionStatus.CLOSED)
CANCELLED = replace(CLOSED, status=MissionStatus.CANCELLED)
RUNNING = replace(CLOSED, status=MissionStatus.RUNNING)


def working_agent(**changes: object) -> Agent:
    """A Claude Code agent mid-turn, with a session, its last progress a minute ago."""
    registry = given(registered(A1), linked(A1, "s-1"), state(A1, AgentState.WORKING, at=NOW - 60))
    return replace(registry.agents[A1], pid=4242, **changes)  # type: ignore[arg-type]


def decide(agent: Agent, **kw: object) -> rules.Decision:
    kw.setdefault("cause", rules.MACHINE_RESTARTED)
    kw.setdefault("now", NOW)
    kw.setdefault("policy", POLICY)
    return rules.decide_interrupted(agent, **kw)  # type: ignore[arg-type]


def exit_(
    agent: Agent, *, code: int | None = None, signal: str | None = "SIGKILL", **kw: object
) -> rules.ExitDecision:
    kw.setdefault("now", NOW)
    kw.setdefault("policy", POLICY)
    kw.setdefault("stop_requested", False)
    return rules.decide_exit(agent, code=code, signal=signal, **kw)  # type: ignore[arg-type]


def vanished(agent: Agent, **kw: object) -> rules.ExitDecision:
    kw.setdefault("cause", rules.MACHINE_RESTARTED)
    kw.setdefault("now", NOW)
    kw.setdefault("policy", POLICY)
    return rules.decide_vanished(agent, **kw)  # type: ignore[arg-type]


# --- the edges ----------------------------------------------------------------------------


def test_exactly_600_s_between_interruptions_is_not_twice_within_ten_minutes() -> None:
    assert decide(working_agent(interruptions=(NOW - 600,))).rule == 9
    assert decide(working_agent(interruptions=(NOW - 599.5,))).rule == 4


def test_an_interruption_at_this_very_moment_counts_and_one_after_it_does_not() -> None:
    # Only earlier interruptions count: one stamped later (a clock stepped back) is no evidence.
    assert rules.interrupted_twice((NOW,), NOW)
    assert not rules.interrupted_twice((NOW + 1,), NOW)
    assert decide(working_agent(interruptions=(NOW - 3000, NOW - 10))).rule == 4


def test_exactly_resume_max_age_is_still_resumed() -> None:
    assert decide(working_agent(last_progress_at=NOW - POLICY.resume_max_age)).rule == 9
    assert decide(working_agent(last_progress_at=NOW - POLICY.resume_max_age - 1)).rule == 7


def test_the_cap_resumes_exactly_resume_cap_per_start_agents() -> None:
    assert decide(working_agent(), resumed_in_this_start=POLICY.resume_cap_per_start - 1).starts
    assert decide(working_agent(), resumed_in_this_start=POLICY.resume_cap_per_start).rule == 8


def test_exactly_60_s_of_uptime_gives_the_budget_back() -> None:
    agent = working_agent(restarts_in_row=1, host_started_at=NOW - 60)
    assert rules.budget_given_back(agent, turn_ended_at=NOW)
    assert not rules.budget_given_back(agent, turn_ended_at=NOW - 0.5)
    assert not rules.budget_given_back(replace(agent, host_started_at=None), turn_ended_at=NOW)


def test_a_restart_is_due_exactly_at_its_due_time() -> None:
    pending = PendingRestart(due_at=NOW, attempt=1, budget=3, reason="killed by SIGKILL")
    agent = working_agent(restart=pending)
    assert rules.restart_due(agent, NOW)
    assert not rules.restart_due(agent, NOW - 0.5)
    assert not rules.restart_due(working_agent(), NOW)


# --- the cause, in words, through every decision -------------------------------------------


@pytest.mark.parametrize(
    ("changes", "kw", "rule", "reason", "detail"),
    [
        (
            {"held": "stopped by Ada"},
            {},
            1,
            "the machine restarted; it was stopped (stopped by Ada): it comes back only when "
            "someone writes to it",
            "stopped by Ada",
        ),
        (
            {"mission": M1},
            {"mission": CLOSED},
            2,
            "the machine restarted; its mission is over, so it stays stopped for good",
            "mission over",
        ),
        (
            {"harness": Harness.GENERIC},
            {},
            3,
            "the machine restarted; its harness (generic) cannot resume a conversation",
            "interrupted: the machine restarted; its harness (generic) cannot resume a "
            "conversation",
        ),
        (
            {"interruptions": (NOW - 60,)},
            {},
            4,
            "interrupted twice within 10 minutes; not resumed",
            "interrupted twice within 10 minutes; not resumed",
        ),
        (
            {"state": AgentState.IDLE},
            {},
            5,
            "the machine restarted while it was idle; a message to it resumes it",
            "interrupted: the machine restarted",
        ),
        (
            {},
            {"policy": replace(POLICY, resume_after_reboot=False)},
            6,
            "the machine restarted; resume_after_reboot is off",
            "interrupted: the machine restarted; resume_after_reboot is off",
        ),
        (
            {"last_progress_at": NOW - 7 * 3600},
            {},
            7,
            "the machine restarted; its last progress was 7 h ago, older than resume_max_age (6 h)",
            "interrupted: the machine restarted; its last progress was 7 h ago, older than "
            "resume_max_age (6 h)",
        ),
        (
            {},
            {"resumed_in_this_start": 10},
            8,
            "the machine restarted; over the per-start cap (10 already resumed in this start)",
            "interrupted: the machine restarted; over the per-start cap (10 already resumed in "
            "this start)",
        ),
        (
            {"state": AgentState.LAUNCHING},
            {"session_written": False},
            9,
            "the machine restarted while it was launching; its harness never wrote its session, "
            "so it is launched again with its original task",
            "relaunched: the machine restarted",
        ),
        (
            {},
            {},
            9,
            "the machine restarted while it was working: resumed with volee's resume prompt",
            "resumed: the machine restarted",
        ),
    ],
)
def test_every_decision_at_start_up_says_the_cause_and_the_rule_in_words(
    changes: dict[str, object], kw: dict[str, object], rule: int, reason: str, detail: str
) -> None:
    d = decide(working_agent(**changes), **kw)
    assert (d.rule, d.reason, d.detail) == (rule, reason, detail)
    assert d.cause == rules.MACHINE_RESTARTED


def test_a_host_stopped_is_said_as_volees_host_was_stopped() -> None:
    d = decide(working_agent(), cause=rules.HOST_STOPPED)
    assert d.detail == "resumed: volee's host was stopped"
    assert rules.cause_words(rules.MACHINE_RESTARTED) == "the machine restarted"


def test_a_stop_without_words_is_said_as_stopped_by_you() -> None:
    d = decide(working_agent(held=""))
    assert (d.rule, d.detail) == (1, "stopped by you")


def test_the_timeline_holds_the_interruption_the_decision_and_the_state_it_implies() -> None:
    d = decide(working_agent(state=AgentState.IDLE), cause=rules.HOST_STOPPED)
    assert d.events(NOW + 5) == [
        ev.InterruptionDetected(
            at=NOW + 5, agent=A1, cause=rules.HOST_STOPPED, state=AgentState.IDLE
        ),
        ev.RecoveryDecided(
            at=NOW + 5,
            agent=A1,
            outcome=rules.STOPPED,
            rule=5,
            reason="volee's host was stopped while it was idle; a message to it resumes it",
            action=None,
        ),
        ev.StateChanged(
            at=NOW + 5,
            agent=A1,
            state=AgentState.STOPPED,
            detail="interrupted: volee's host was stopped",
            progress=False,
        ),
    ]


def test_by_default_the_first_agent_of_a_start_is_resumed_with_its_session() -> None:
    # decide_interrupted alone: nothing resumed yet in this start, the session written.
    first = decide(working_agent(), policy=replace(POLICY, resume_cap_per_start=1))
    assert (first.rule, first.outcome) == (9, rules.RESUME)
    launching = decide(working_agent(state=AgentState.LAUNCHING))
    assert (launching.outcome, launching.state) == (rules.RESUME, AgentState.WORKING)


def test_a_decision_that_waits_for_the_person_offers_resume() -> None:
    d = decide(working_agent(), policy=replace(POLICY, resume_after_reboot=False))
    decided = d.events(NOW)[1]
    assert isinstance(decided, ev.RecoveryDecided)
    assert (decided.outcome, decided.action) == (rules.STOPPED, rules.RESUME)
    assert not d.starts
    assert decide(working_agent(state=AgentState.LAUNCHING), session_written=False).starts


# --- the resume prompts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cause", "what"),
    [
        (rules.MACHINE_RESTARTED, "The machine restarted while you were working"),
        ("crashed", "Your process ended without closing the session while you were working"),
        (rules.HOST_STOPPED, "volee's host for your session was stopped while you were working"),
    ],
)
def test_the_resume_prompt_says_what_cut_the_turn_off(cause: str, what: str) -> None:
    assert rules.resume_prompt(cause) == (
        f"[volee] {what}, and your last turn was cut off: a command may not have finished "
        "and your last reply may be missing. Check the state of the work before repeating "
        "anything with side effects, then continue."
    )


def test_the_continue_prompt_is_labelled_and_says_why() -> None:
    assert rules.continue_prompt("killed by SIGKILL") == (
        "[volee] Your last turn was cut off (killed by SIGKILL). Continue where you left off."
    )


# --- start-up, every agent at once ---------------------------------------------------------


def test_an_agent_of_an_ended_mission_is_not_resumed_at_start_up() -> None:
    for ended in (CLOSED, CANCELLED):
        decisions = rules.decide_all(
            [(working_agent(mission=M1), rules.MACHINE_RESTARTED)],
            now=NOW,
            policy=POLICY,
            missions={M1: ended},
        )
        assert [(d.rule, d.outcome) for d in decisions] == [(2, rules.HELD)]
    running = rules.decide_all(
        [(working_agent(mission=M1), rules.MACHINE_RESTARTED)],
        now=NOW,
        policy=POLICY,
        missions={M1: RUNNING},
    )
    assert [d.rule for d in running] == [9]


def test_each_agent_found_interrupted_keeps_its_own_cause() -> None:
    base = working_agent()
    first, second = replace(base, id=A1), replace(base, id=A2, last_progress_at=NOW - 120)
    decisions = rules.decide_all(
        [(first, rules.HOST_STOPPED), (second, rules.MACHINE_RESTARTED)], now=NOW, policy=POLICY
    )
    assert [(d.agent, d.cause) for d in decisions] == [
        (A1, rules.HOST_STOPPED),
        (A2, rules.MACHINE_RESTARTED),
    ]


def test_only_the_agents_started_again_use_the_per_start_cap() -> None:
    base = working_agent()
    agents = [
        replace(base, id=A1, last_progress_at=NOW - 10, held="stopped by you"),
        replace(base, id=A2, last_progress_at=NOW - 20, state=AgentState.LAUNCHING, sessions=()),
        replace(base, id=A3, last_progress_at=NOW - 30),
    ]
    decisions = rules.decide_all(
        [(a, rules.MACHINE_RESTARTED) for a in agents],
        now=NOW,
        policy=replace(POLICY, resume_cap_per_start=1),
    )
    # The held one starts nothing; the relaunched one uses the only place; the last waits.
    assert [(d.agent, d.rule, d.outcome) for d in decisions] == [
        (A1, 1, rules.HELD),
        (A2, 9, rules.RELAUNCH),
        (A3, 8, rules.STOPPED),
    ]


def test_equal_progress_is_ordered_by_id() -> None:
    base = working_agent()
    agents = [replace(base, id=aid) for aid in (A3, A1, A2)]
    assert [a.id for a in rules.recovery_order(agents)] == [A1, A2, A3]


def test_an_interruption_is_to_decide_once_while_the_agent_still_looks_live() -> None:
    gone = replace(working_agent(), pid=None)
    assert rules.needs_recovery(gone)  # its host is gone, it still shows working
    assert not rules.needs_recovery(replace(gone, interrupted=rules.MACHINE_RESTARTED))
    assert not rules.needs_recovery(replace(gone, state=AgentState.STOPPED))
    assert rules.needs_recovery(replace(gone, state=AgentState.STOPPED, pid=7))


# --- crashes while the daemon runs -----------------------------------------------------------


def test_the_state_after_a_crash_is_kept_and_is_never_progress() -> None:
    d = exit_(working_agent(restarts_in_row=1), now=NOW + 7)
    events = d.events()
    assert [type(e) for e in events] == [ev.ProgramExited, ev.RestartScheduled, ev.StateChanged]
    exited, scheduled, changed = events
    assert exited == ev.ProgramExited(
        at=NOW + 7, agent=A1, code=None, signal="SIGKILL", during_turn=True
    )
    assert scheduled == ev.RestartScheduled(
        at=NOW + 7, agent=A1, due_at=NOW + 12, attempt=2, budget=3, reason="killed by SIGKILL"
    )
    assert changed == ev.StateChanged(
        at=NOW + 7,
        agent=A1,
        state=AgentState.WORKING,
        detail="killed by SIGKILL; continuing in 5 s (automatic restart 2 of 3)",
        progress=False,
    )


def test_a_crash_keeps_the_age_rule_seeing_the_last_real_progress() -> None:
    registry = given(registered(A1), state(A1, AgentState.WORKING, at=T0))
    for event in exit_(registry.agents[A1], now=NOW).events():
        assert registry.validate(event) is None
        registry.apply(event)
    assert registry.agents[A1].last_progress_at == T0


def test_no_restart_is_scheduled_after_the_mission_ended() -> None:
    for ended in (CLOSED, CANCELLED):
        d = exit_(working_agent(mission=M1), mission=ended)
        assert (d.restart, d.state) == (None, AgentState.STOPPED)
        gone = vanished(working_agent(mission=M1), mission=ended)
        assert (gone.restart, gone.state, gone.detail) == (None, AgentState.STOPPED, "mission over")
        assert not rules.may_restart_automatically(working_agent(mission=M1), ended)
    assert exit_(working_agent(mission=M1), mission=RUNNING).restart is not None
    assert rules.may_restart_automatically(working_agent(mission=M1), RUNNING)
    assert not rules.may_restart_automatically(working_agent(held="stopped by you"))
    # Held for good (its mission ended) even without the mission at hand.
    for_good = working_agent(held="mission over", held_for_good=True)
    assert not rules.may_restart_automatically(for_good)
    assert vanished(for_good).restart is None


def test_a_crash_of_a_stopped_agent_keeps_what_its_stop_said() -> None:
    stopped = working_agent(state=AgentState.STOPPED, detail="stopped: review", held="review")
    assert exit_(stopped).detail == "stopped: review"
    assert exit_(replace(stopped, detail="")).detail == "review"
    assert exit_(replace(stopped, detail="", held=None), stop_requested=True).detail == (
        "stopped by you"
    )
    busy = working_agent(held="for the night", detail="Bash: pytest")
    assert exit_(busy).detail == "for the night"  # what it did is over, the stop is what stands


def test_a_program_that_ends_normally_is_stopped_as_exited() -> None:
    d = exit_(working_agent(state=AgentState.IDLE, detail="waiting"), signal=None, code=0)
    assert d.events() == [
        ev.ProgramExited(at=NOW, agent=A1, code=0, signal=None, during_turn=False),
        ev.StateChanged(
            at=NOW, agent=A1, state=AgentState.STOPPED, detail="exited", progress=False
        ),
    ]
    stopped = working_agent(state=AgentState.STOPPED, detail="stopped: done for today")
    assert exit_(stopped, signal=None, code=0).detail == "stopped: done for today"


def test_a_failed_launch_is_recorded_as_failed_with_why() -> None:
    d = exit_(working_agent(state=AgentState.LAUNCHING), signal=None, code=2, output="bad flag")
    assert d.events() == [
        ev.ProgramExited(at=NOW, agent=A1, code=2, signal=None, during_turn=True),
        ev.StateChanged(
            at=NOW,
            agent=A1,
            state=AgentState.FAILED,
            detail="could not start: exited with code 2: bad flag",
            progress=False,
        ),
    ]


def test_a_launch_that_ends_with_code_0_or_a_signal_did_not_fail_to_launch() -> None:
    launching = working_agent(state=AgentState.LAUNCHING)
    assert exit_(launching, signal=None, code=0).state is AgentState.STOPPED
    assert exit_(launching, signal="SIGTERM", code=None).restart is not None
    held = exit_(replace(launching, held="stopped by you"), signal=None, code=2)
    assert (held.state, held.detail) == (AgentState.STOPPED, "stopped by you")


def test_a_launch_failure_names_the_last_error_line_whatever_its_case() -> None:
    output = "Error: first\nsome noise\nERROR: the bad flag\nusage: codex [OPTIONS]\n"
    assert rules.launch_failed_words("exited with code 2", output) == (
        "could not start: exited with code 2: ERROR: the bad flag"
    )
    assert rules.launch_failed_words("exited with code 2", "  \n  last words  \n\n") == (
        "could not start: exited with code 2: last words"
    )


def test_a_crash_while_asking_says_what_was_asked() -> None:
    def asking(kind: RequestKind, **fields: object) -> Agent:
        request = Request(id="rq", kind=kind, **fields)  # type: ignore[arg-type]
        return working_agent(state=AgentState.NEEDS_INPUT, request=request)

    question = exit_(asking(RequestKind.QUESTION, summary="Which database?"))
    assert question.restart is not None
    assert "(Which database?)" in question.restart.reason
    tool_only = exit_(asking(RequestKind.PERMISSION, tool="Bash"))
    assert tool_only.restart is not None
    assert "(Bash)" in tool_only.restart.reason
    bare = exit_(asking(RequestKind.PERMISSION))
    assert bare.restart is not None
    assert "(permission)" in bare.restart.reason


def test_the_last_automatic_restart_then_the_budget_is_spent() -> None:
    last = exit_(working_agent(restarts_in_row=2))
    assert last.restart is not None
    assert last.restart.attempt == 3
    one = replace(POLICY, restart_delays=(2.5,))
    first = exit_(working_agent(), policy=one)
    assert first.restart is not None
    assert first.detail == "killed by SIGKILL; continuing in 2.5 s (automatic restart 1 of 1)"
    spent = exit_(working_agent(restarts_in_row=1), policy=one)
    assert (spent.restart, spent.state) == (None, AgentState.FAILED)
    assert spent.detail == (
        "killed by SIGKILL; not restarted again after 1 automatic restart in a row "
        "(reply to continue)"
    )


def test_a_host_gone_under_the_daemon_keeps_its_cause() -> None:
    d = vanished(working_agent(restarts_in_row=1), now=NOW + 3)
    assert d.events() == [
        ev.InterruptionDetected(
            at=NOW + 3, agent=A1, cause=rules.MACHINE_RESTARTED, state=AgentState.WORKING
        ),
        ev.RestartScheduled(
            at=NOW + 3,
            agent=A1,
            due_at=NOW + 8,
            attempt=2,
            budget=3,
            reason="the machine restarted",
        ),
        ev.StateChanged(
            at=NOW + 3,
            agent=A1,
            state=AgentState.WORKING,
            detail="the machine restarted; continuing in 5 s (automatic restart 2 of 3)",
            progress=False,
        ),
    ]


@pytest.mark.parametrize(
    ("changes", "kw", "detail"),
    [
        ({"held": "stopped by Ada"}, {}, "stopped by Ada"),
        ({"held": ""}, {}, "stopped by you"),
        ({"state": AgentState.IDLE}, {}, "interrupted: the machine restarted"),
        (
            {},
            {"policy": replace(POLICY, resume_after_reboot=False)},
            "interrupted: the machine restarted; resume_after_reboot is off",
        ),
    ],
)
def test_a_host_gone_under_the_daemon_without_a_restart_says_why(
    changes: dict[str, object], kw: dict[str, object], detail: str
) -> None:
    agent = working_agent(**changes)
    d = vanished(agent, **kw)
    assert (d.restart, d.state, d.detail) == (None, AgentState.STOPPED, detail)
    assert d.events()[0] == ev.InterruptionDetected(
        at=NOW, agent=A1, cause=rules.MACHINE_RESTARTED, state=agent.state
    )
    assert [type(e) for e in d.events()] == [ev.InterruptionDetected, ev.StateChanged]


def test_a_launch_whose_host_vanished_stays_a_launch_while_it_waits() -> None:
    d = vanished(working_agent(state=AgentState.LAUNCHING))
    assert (d.state, d.restart is not None) == (AgentState.LAUNCHING, True)

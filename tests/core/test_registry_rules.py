"""Registry rules a mutation left unnoticed: what each fact changes on an agent, and no more.

Found with ``scripts/mutation`` (docs/testing.md): each test names the rule it checks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core import fold
from volee_desktop.core.model import (
    HUMAN,
    Assessment,
    Delivery,
    Harness,
    LaunchSettings,
    Location,
    MessageKind,
    MissionKind,
    MissionStatus,
    Receipt,
    Thread,
    ThreadKind,
    Verdict,
)
from volee_desktop.core.states import AgentState

from .support import (
    A1,
    A2,
    M1,
    T0,
    accepted,
    given,
    linked,
    message_id,
    mission,
    posted,
    registered,
    state,
    thread,
    thread_id,
    when,
)


def test_an_activity_is_progress_and_is_shown_as_the_agents_latest() -> None:
    registry = given(registered(A1), state(A1, AgentState.WORKING, at=T0 + 1))
    accepted(registry, ev.ActivityRecorded(at=T0 + 50, agent=A1, activity="Bash: pytest"))
    agent = registry.agents[A1]
    assert (agent.activity, agent.activity_at, agent.last_progress_at) == (
        "Bash: pytest",
        T0 + 50,
        T0 + 50,
    )
    assert (agent.state, agent.state_since) == (AgentState.WORKING, T0 + 1)


def test_a_model_change_is_the_agents_model_from_then_on() -> None:
    registry = given(registered(A1))
    accepted(registry, ev.ModelChanged(at=T0 + 1, agent=A1, model="claude-opus-4"))
    accepted(registry, ev.ModelChanged(at=T0 + 2, agent=A1, model="claude-sonnet-4"))
    assert registry.agents[A1].model == "claude-sonnet-4"


def test_a_suspect_hosts_process_is_no_longer_taken_for_the_agents_program() -> None:
    registry = given(registered(A1), ev.HostStarted(at=T0, agent=A1, host_pid=10, program_pid=11))
    accepted(registry, ev.HostSuspect(at=T0 + 1, agent=A1, host_pid=10, reason="not volee's"))
    agent = registry.agents[A1]
    assert agent.pid is None
    assert agent.location is Location.HOST  # where it was last seen; only its pid is doubted


def test_a_workspace_update_moves_every_place_it_names() -> None:
    registry = given(registered(A1, cwd="/a", worktree="/a/wt", repo="/a", branch="main"))
    accepted(
        registry,
        ev.WorkspaceUpdated(at=T0, agent=A1, cwd="/b", worktree="/b/wt", repo="/b", branch="fix"),
    )
    agent = registry.agents[A1]
    assert (agent.cwd, agent.worktree, agent.repo, agent.branch) == ("/b", "/b/wt", "/b", "fix")


def test_an_answer_to_a_request_gone_says_what_the_agent_does_now() -> None:
    registry = given(registered(A1), state(A1, AgentState.WORKING, detail="Bash: pytest"))
    late = ev.RequestAnswered(at=T0 + 5, agent=A1, request="rq_0000000000000000", answer="allow")
    assert when(registry, late) == (
        f"agent agent-{A1[-4:]} no longer asks that (it is working (Bash: pytest))"
    )


def test_a_context_update_without_a_cost_keeps_the_cost_said_last() -> None:
    registry = given(registered(A1))
    accepted(registry, ev.ContextUsed(at=T0, agent=A1, share=0.25, cost_usd=1.5))
    accepted(registry, ev.ContextUsed(at=T0 + 1, agent=A1, share=0.5))
    agent = registry.agents[A1]
    assert (agent.context_share, agent.cost_usd) == (0.5, 1.5)
    accepted(registry, ev.ContextUsed(at=T0 + 2, agent=A1, share=0.6, cost_usd=2.0))
    assert registry.agents[A1].cost_usd == 2.0


def test_a_working_copy_continues_the_registrys_sequence() -> None:
    registry = given(registered(A1))
    registry.seq = 41
    assert registry.fork().seq == 41


def test_a_verdict_is_recorded_with_its_time_and_the_evidence_it_was_judged_on() -> None:
    d = Delivery(branch="volee/w", commits=1, checked_at=T0 + 3)
    registry = given(mission(), registered(A1, mission=M1))
    accepted(
        registry,
        ev.WorkerAssessed(
            at=T0 + 4, mission=M1, agent=A1, verdict=Verdict.DELIVERED, reason="ok", evidence=d
        ),
    )
    assert registry.missions[M1].assessments[A1] == Assessment(
        verdict=Verdict.DELIVERED, reason="ok", at=T0 + 4, evidence=d
    )


def test_a_released_session_belongs_to_no_one() -> None:
    registry = given(registered(A1), linked(A1, "s-1"), linked(A1, "s-2"))
    accepted(registry, ev.SessionReleased(at=T0, agent=A1, session="s-1"))
    assert registry.owner_of("claude", "s-1") is None
    assert registry.owner_of("claude", "s-2") == A1
    assert registry.agents[A1].sessions == ("s-2",)


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_an_empty_or_a_full_context_is_a_share(share: float) -> None:
    assert when(given(registered(A1)), ev.ContextUsed(at=T0, agent=A1, share=share)) is None


@pytest.mark.parametrize(("cost", "ok"), [(0.0, True), (12.5, True), (-0.01, False), (1e9, False)])
def test_a_cost_is_dollars_from_nothing_to_under_a_billion(cost: float, ok: bool) -> None:
    reason = when(given(registered(A1)), ev.ContextUsed(at=T0, agent=A1, share=0.5, cost_usd=cost))
    assert reason == (None if ok else f"cost {cost} is not a cost in dollars")


def test_refusals_of_a_session_or_a_name_say_why_in_words() -> None:
    registry = given(registered(A1, "ada"), registered(A2, "bob"), linked(A1, "s-1"))
    assert when(registry, linked(A2, "")) == "a session needs its harness id"
    assert when(registry, linked(A2, "s-1")) == (f"session s-1 already belongs to agent ada ({A1})")
    assert when(registry, ev.AgentRenamed(at=T0, agent=A2, name=" ")) == (
        "a new name cannot be empty"
    )
    accepted(registry, ev.AgentForgotten(at=T0, agent=A1))
    assert when(registry, linked(A2, "s-1")) == "session s-1 belonged to forgotten agent ada"


def test_joining_without_an_invitation_says_who_invites() -> None:
    registry = given(mission(), registered(A1, "ada"))
    assert when(registry, ev.MembershipChanged(at=T0, agent=A1, mission=M1)) == (
        f"ada was not invited to mission {M1}: its coordinator or the person invites an agent "
        "first, then the agent joins"
    )


def test_a_posted_question_keeps_everything_its_reader_needs() -> None:
    q = message_id(1)
    registry = given(registered(A1), thread())
    accepted(
        registry,
        posted(
            q,
            A1,
            HUMAN,
            kind=MessageKind.QUESTION,
            body="merge now?",
            references=("ag_ref",),
            options=("merge", "wait"),
            approving="merge",
        ),
    )
    message = registry.messages[q]
    assert (message.body, message.references, message.options, message.approving) == (
        "merge now?",
        ("ag_ref",),
        ("merge", "wait"),
        "merge",
    )


def test_a_message_refused_for_its_form_says_what_it_lacks() -> None:
    registry = given(registered(A1), thread())
    assert when(registry, posted(message_id(1), A1)) == "a message needs at least one recipient"
    question = posted(message_id(2), A1, HUMAN, kind=MessageKind.QUESTION)
    assert when(registry, question) == "a question needs options"


def test_a_request_read_from_a_detail_is_the_agents_own_from_the_moment_it_asked() -> None:
    # Two agents asking the same at the same moment: an answer can never reach the other.
    asks = "permission for Bash"
    registry = given(
        registered(A1),
        registered(A2),
        state(A1, AgentState.NEEDS_INPUT, at=T0 + 3, detail=asks),
        state(A2, AgentState.NEEDS_INPUT, at=T0 + 3, detail=asks),
    )
    first, second = registry.agents[A1].request, registry.agents[A2].request
    assert first is not None
    assert second is not None
    assert (first.tool, first.at) == ("Bash", T0 + 3)
    assert first.id != second.id


def test_a_new_mission_holds_everything_it_was_created_with() -> None:
    registry = given(
        registered(A1),
        ev.MissionCreated(
            at=T0 + 1,
            mission=M1,
            goal="ship it",
            kind=MissionKind.ANALYSIS,
            repositories=("/src/a", "/src/b"),
            requested_by=A1,
            coordinator=A1,
            thread=thread_id(3),
            base_branch="develop",
        ),
    )
    m = registry.missions[M1]
    assert (m.goal, m.kind, m.repositories, m.requested_by) == (
        "ship it",
        MissionKind.ANALYSIS,
        ("/src/a", "/src/b"),
        A1,
    )
    assert (m.coordinator, m.thread, m.base_branch) == (A1, thread_id(3), "develop")
    assert (m.created_at, m.updated_at, m.status) == (T0 + 1, T0 + 1, MissionStatus.RUNNING)


def test_a_mission_update_with_only_a_reason_records_the_reason() -> None:
    registry = given(mission())
    accepted(registry, ev.MissionUpdated(at=T0 + 5, mission=M1, reason="waiting for CI"))
    m = registry.missions[M1]
    assert (m.status, m.reason, m.updated_at) == (MissionStatus.RUNNING, "waiting for CI", T0 + 5)
    accepted(registry, ev.MissionUpdated(at=T0 + 6, mission=M1, status=MissionStatus.REPORTING))
    assert registry.missions[M1].reason == ""  # a new status brings its own reason


def test_a_thread_holds_its_kind_mission_parties_and_time() -> None:
    registry = given(mission(), registered(A1))
    accepted(
        registry,
        ev.ThreadOpened(
            at=T0 + 2, thread=thread_id(4), kind=ThreadKind.MISSION, mission=M1, parties=(A1,)
        ),
    )
    assert registry.threads[thread_id(4)] == Thread(
        id=thread_id(4), kind=ThreadKind.MISSION, mission=M1, parties=(A1,), created_at=T0 + 2
    )


def test_a_mission_without_a_goal_is_refused_in_words() -> None:
    assert when(given(), replace(mission(), goal="  ")) == "a mission needs a goal"


def test_a_route_refused_says_whom_agents_may_write_to() -> None:
    registry = given(registered(A1, "ada"), registered(A2, "bob"))
    assert registry.check_route(A1, A2) == (
        "ada may not write to bob: agents write to people, to members of their mission, their "
        "parent, their children, their mission's coordinator and the agent that requested "
        "their mission"
    )


def test_a_registered_agent_holds_how_and_where_it_was_launched() -> None:
    # A resume uses the same launch settings: the registry keeps them.
    launch = LaunchSettings(harness=Harness.CLAUDE, cwd="/src/wt", prompt="fix the bug")
    registry = given(
        registered(
            A1,
            launch=launch,
            cwd="/src/wt",
            worktree="/src/wt",
            repo="/src",
            branch="volee/fix",
            location=Location.TERMINAL,
        )
    )
    agent = registry.agents[A1]
    assert (agent.launch, agent.cwd, agent.worktree, agent.repo, agent.branch) == (
        launch,
        "/src/wt",
        "/src/wt",
        "/src",
        "volee/fix",
    )
    assert agent.location is Location.TERMINAL
    assert when(given(), registered(A2, " ")) == "an agent needs a non-empty name"


def test_the_fold_changes_only_the_fields_it_names_even_on_an_entitys_first_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fold, "_FIELDS", {})  # as in a fresh process: no field seen yet
    old = Receipt()
    new = fold._evolve(old, delivered_at=1.0, read_at=2.0)  # every field at once
    assert (new, old) == (Receipt(delivered_at=1.0, read_at=2.0), Receipt())
    with pytest.raises(TypeError, match=r"^Receipt has no field\(s\) \['seen_at'\]$"):
        fold._evolve(old, seen_at=3.0)


def test_the_settings_the_person_confirmed_are_the_registrys() -> None:
    confirmed = {"claude.permission_mode": '"bypassPermissions"'}
    registry = given(ev.SettingsConfirmed(at=T0, settings=confirmed))
    assert registry.confirmed_settings == confirmed


def test_a_fork_of_the_registry_keeps_the_settings_the_person_confirmed() -> None:
    # A supervisor's decision is worked out on a fork: it must still know what the person
    # confirmed, and its changes must not reach the registry it came from.
    confirmed = {"claude.permission_mode": '"bypassPermissions"'}
    registry = given(ev.SettingsConfirmed(at=T0, settings=confirmed))
    fork = registry.fork()
    assert fork.confirmed_settings == confirmed
    fork.confirmed_settings["notify.needs_input"] = "false"
    assert registry.confirmed_settings == confirmed

"""Agent rules: registration, sessions, state changes, forget, expire and release."""

from __future__ import annotations

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness
from volee_desktop.core.states import AgentState

from .support import (
    A1,
    A2,
    M1,
    T0,
    accepted,
    given,
    linked,
    mission,
    registered,
    state,
    when,
)

# --- agent-registered ----------------------------------------------------------------------


def test_agent_registered_gives_launching() -> None:
    registry = given(registered(A1, "alpha", at=T0))
    agent = registry.agents[A1]
    assert agent.state is AgentState.LAUNCHING
    assert (agent.state_since, agent.created_at, agent.last_progress_at) == (T0, T0, T0)
    assert agent.sessions == ()
    assert agent.session is None
    assert not agent.worked
    assert registry.name_of(A1) == "alpha"


def test_agent_registered_in_a_given_state() -> None:
    registry = given(registered(A1, state=AgentState.WORKING, detail="discovered busy"))
    agent = registry.agents[A1]
    assert agent.state is AgentState.WORKING
    assert agent.detail == "discovered busy"
    assert agent.worked


def test_agent_registered_with_a_duplicate_id_is_refused() -> None:
    registry = given(registered(A1, "alpha"))
    reason = when(registry, registered(A1, "beta"))
    assert reason is not None
    assert "already used" in reason
    assert registry.agents[A1].name == "alpha"


def test_agent_registered_with_the_id_of_a_forgotten_agent_is_refused() -> None:
    registry = given(registered(A1, "alpha"), ev.AgentForgotten(at=T0, agent=A1))
    reason = when(registry, registered(A1, "again"))
    assert reason is not None
    assert A1 in reason
    assert A1 not in registry.agents


@pytest.mark.parametrize("name", ["", "   ", "\t\n"])
def test_agent_registered_with_an_empty_name_is_refused(name: str) -> None:
    registry = given()
    reason = when(registry, _named(A1, name))
    assert reason is not None
    assert "name" in reason


def _named(agent: str, name: str) -> ev.AgentRegistered:
    # registered() replaces an empty name by a default: build the event by hand.
    return ev.AgentRegistered(at=T0, agent=agent, name=name, harness=Harness.CLAUDE)


def test_agent_registered_in_an_unknown_mission_is_refused() -> None:
    registry = given()
    reason = when(registry, registered(A1, mission=M1))
    assert reason is not None
    assert "unknown mission" in reason
    assert M1 in reason


def test_agent_registered_in_a_known_mission_takes_part_in_it() -> None:
    registry = given(mission(M1), registered(A1, mission=M1))
    assert [a.id for a in registry.mission_agents(M1)] == [A1]


@pytest.mark.parametrize("bad", ["agent-1", "ms_" + A1[3:], A1.lower()])
def test_agent_registered_with_a_malformed_id_is_refused(bad: str) -> None:
    reason = when(given(), registered(bad, "alpha"))
    assert reason is not None
    assert "ag_ ULID" in reason


def test_agent_registered_with_an_unknown_parent_is_refused() -> None:
    reason = when(given(), registered(A2, parent=A1))
    assert reason is not None
    assert "unknown parent" in reason


def test_events_for_an_unknown_agent_are_refused() -> None:
    reason = when(given(), state(A1, AgentState.WORKING))
    assert reason is not None
    assert "unknown agent" in reason


# --- session-linked ------------------------------------------------------------------------


def test_a_session_never_belongs_to_two_agents() -> None:
    registry = given(registered(A1, "alpha"), registered(A2, "beta"), linked(A1, "s1"))
    reason = when(registry, linked(A2, "s1"))
    assert reason is not None
    # The reason names the owner, so a person can tell which agent has it.
    assert "alpha" in reason
    assert A1 in reason
    assert registry.owner_of(Harness.CLAUDE, "s1") == A1
    assert registry.agents[A2].sessions == ()


def test_a_session_is_keyed_by_harness_and_id() -> None:
    # codex's "s1" and Claude Code's "s1" are different sessions.
    registry = given(
        registered(A1, harness=Harness.CLAUDE),
        registered(A2, harness=Harness.CODEX),
        linked(A1, "s1"),
    )
    accepted(registry, linked(A2, "s1"))
    assert registry.owner_of(Harness.CLAUDE, "s1") == A1
    assert registry.owner_of(Harness.CODEX, "s1") == A2


def test_session_linked_becomes_current() -> None:
    registry = given(registered(A1), linked(A1, "s1"), linked(A1, "s2"))
    assert registry.agents[A1].sessions == ("s1", "s2")
    assert registry.agents[A1].session == "s2"
    assert registry.owner_of(Harness.CLAUDE, "s1") == A1
    assert registry.owner_of(Harness.CLAUDE, "s2") == A1


def test_relinking_its_own_session_makes_it_current_without_duplicating_it() -> None:
    registry = given(registered(A1), linked(A1, "s1"), linked(A1, "s2"))
    accepted(registry, linked(A1, "s1"))
    assert registry.agents[A1].sessions == ("s2", "s1")
    assert registry.agents[A1].session == "s1"


def test_session_linked_without_a_session_id_is_refused() -> None:
    reason = when(given(registered(A1)), linked(A1, ""))
    assert reason is not None


# --- state-changed -------------------------------------------------------------------------


def test_state_since_moves_only_when_the_state_really_changes() -> None:
    registry = given(registered(A1, at=T0), state(A1, AgentState.WORKING, at=T0 + 1))
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 2, detail="Bash"))
    agent = registry.agents[A1]
    assert agent.state_since == T0 + 1
    assert agent.detail == "Bash"
    assert agent.last_progress_at == T0 + 2

    accepted(registry, state(A1, AgentState.NEEDS_INPUT, at=T0 + 3, detail="permission"))
    assert registry.agents[A1].state_since == T0 + 3


def test_state_changed_without_progress_keeps_the_last_progress_time() -> None:
    registry = given(registered(A1, at=T0))
    accepted(
        registry,
        ev.StateChanged(at=T0 + 5, agent=A1, state=AgentState.IDLE, progress=False),
    )
    assert registry.agents[A1].last_progress_at == T0
    assert registry.agents[A1].state_since == T0 + 5


def test_working_marks_worked() -> None:
    registry = given(registered(A1), state(A1, AgentState.IDLE, at=T0 + 1))
    assert not registry.agents[A1].worked
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 2))
    accepted(registry, state(A1, AgentState.IDLE, at=T0 + 3))
    # Once worked, always worked: the supervisor judges idle workers by it.
    assert registry.agents[A1].worked


# --- agent-forgotten -----------------------------------------------------------------------


def test_forgotten_agent_is_removed_and_its_sessions_ignored() -> None:
    registry = given(
        registered(A1, "alpha"), linked(A1, "s1"), linked(A1, "s2"), registered(A2, "beta")
    )
    accepted(registry, ev.AgentForgotten(at=T0 + 1, agent=A1))
    assert A1 not in registry.agents
    for session in ("s1", "s2"):
        assert registry.is_ignored(Harness.CLAUDE, session)
        assert registry.owner_of(Harness.CLAUDE, session) is None
        reason = when(registry, linked(A2, session))
        assert reason is not None
        assert "forgotten" in reason
        assert "alpha" in reason
    assert registry.agents[A2].sessions == ()


def test_forgotten_agent_keeps_its_name() -> None:
    registry = given(registered(A1, "alpha"), ev.AgentForgotten(at=T0, agent=A1))
    assert registry.name_of(A1) == "alpha"


@pytest.mark.parametrize(
    "event",
    [
        state(A1, AgentState.WORKING),
        linked(A1, "s9"),
        ev.ActivityRecorded(at=T0, agent=A1, activity="ls"),
        ev.StopRequested(at=T0, agent=A1),
        ev.AgentForgotten(at=T0, agent=A1),
        ev.AgentExpired(at=T0, agent=A1),
    ],
    ids=lambda e: e.TYPE,
)
def test_events_for_a_forgotten_agent_are_refused(event: ev.Event) -> None:
    registry = given(registered(A1, "alpha"), ev.AgentForgotten(at=T0, agent=A1))
    reason = when(registry, event)
    assert reason is not None
    assert "was forgotten" in reason
    assert "alpha" in reason


# --- agent-expired -------------------------------------------------------------------------


def test_expired_agent_is_removed_and_its_sessions_are_not_ignored() -> None:
    registry = given(registered(A1, "alpha", launched_by_volee=False), linked(A1, "s1"))
    accepted(registry, ev.AgentExpired(at=T0 + 1, agent=A1))
    assert A1 not in registry.agents
    assert not registry.is_ignored(Harness.CLAUDE, "s1")
    assert registry.owner_of(Harness.CLAUDE, "s1") is None
    assert registry.name_of(A1) == "alpha"
    # Listed again, the session comes back as an agent of its own.
    accepted(registry, registered(A2, "alpha", launched_by_volee=False))
    accepted(registry, linked(A2, "s1"))
    assert registry.owner_of(Harness.CLAUDE, "s1") == A2


# --- session-released ----------------------------------------------------------------------


def test_released_session_is_free_again() -> None:
    registry = given(
        registered(A1, "alpha"), registered(A2, "beta"), linked(A1, "s1"), linked(A1, "s2")
    )
    accepted(registry, ev.SessionReleased(at=T0 + 1, agent=A1, session="s2"))
    assert registry.owner_of(Harness.CLAUDE, "s2") is None
    assert not registry.is_ignored(Harness.CLAUDE, "s2")
    # The agent keeps its earlier session, which is current again.
    assert registry.agents[A1].sessions == ("s1",)
    assert registry.agents[A1].session == "s1"
    accepted(registry, linked(A2, "s2"))
    assert registry.owner_of(Harness.CLAUDE, "s2") == A2


def test_releasing_a_session_the_agent_does_not_own_is_refused() -> None:
    registry = given(registered(A1, "alpha"), registered(A2, "beta"), linked(A2, "s1"))
    reason = when(registry, ev.SessionReleased(at=T0, agent=A1, session="s1"))
    assert reason is not None
    assert "does not belong" in reason
    assert registry.owner_of(Harness.CLAUDE, "s1") == A2


# --- smaller facts -------------------------------------------------------------------------


def test_agent_renamed_changes_the_name_everywhere() -> None:
    registry = given(registered(A1, "alpha", launched_by_volee=False))
    accepted(registry, ev.AgentRenamed(at=T0, agent=A1, name="fix the tests"))
    assert registry.agents[A1].name == "fix the tests"
    assert registry.name_of(A1) == "fix the tests"
    assert when(registry, ev.AgentRenamed(at=T0, agent=A1, name=" ")) is not None


@pytest.mark.parametrize("share", [-0.01, 1.01])
def test_context_share_outside_zero_to_one_is_refused(share: float) -> None:
    reason = when(given(registered(A1)), ev.ContextUsed(at=T0, agent=A1, share=share))
    assert reason is not None
    assert str(share) in reason


def test_workspace_updated_changes_only_the_fields_it_knows() -> None:
    registry = given(registered(A1, cwd="/src", branch="main"))
    accepted(registry, ev.WorkspaceUpdated(at=T0, agent=A1, worktree="/src/.wt/x"))
    agent = registry.agents[A1]
    assert (agent.cwd, agent.worktree, agent.branch) == ("/src", "/src/.wt/x", "main")

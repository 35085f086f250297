"""Registry rules a mutation left unnoticed: what each fact changes on an agent, and no more.

Found with ``scripts/mutation`` (docs/testing.md): each test names the rule it checks.
"""

from __future__ import annotations

from volee_desktop.core import events as ev
from volee_desktop.core.model import Location
from volee_desktop.core.states import AgentState

from .support import A1, T0, accepted, given, registered, state, when


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

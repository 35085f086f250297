"""Recovery facts on an agent: interruptions, host starts, pending restarts and their budget."""

from __future__ import annotations

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.fold import INTERRUPTION_MEMORY
from volee_desktop.core.model import Location, PendingRestart
from volee_desktop.core.states import AgentState

from .support import A1, T0, accepted, given, registered, state


def _interrupted(at: float = T0, cause: str = "machine-restarted") -> ev.InterruptionDetected:
    return ev.InterruptionDetected(at=at, agent=A1, cause=cause)


def _restart(attempt: int, at: float = T0) -> ev.RestartScheduled:
    return ev.RestartScheduled(
        at=at, agent=A1, due_at=at + 5, attempt=attempt, budget=3, reason="killed by SIGKILL"
    )


def _decided(action: str | None = "resume") -> ev.RecoveryDecided:
    return ev.RecoveryDecided(
        at=T0, agent=A1, outcome="stopped", rule=6, reason="resume_after_reboot off", action=action
    )


def test_interruption_detected_records_the_cause_and_the_time() -> None:
    registry = given(registered(A1), ev.HostStarted(at=T0, agent=A1, host_pid=10, program_pid=11))
    accepted(registry, _interrupted(at=T0 + 7, cause="host-stopped"))
    agent = registry.agents[A1]
    assert agent.interrupted == "host-stopped"
    assert agent.interruptions == (T0 + 7,)
    assert agent.pid is None  # its program is gone with the host


def test_interruption_memory_keeps_the_last_five() -> None:
    times = [T0 + 60 * n for n in range(INTERRUPTION_MEMORY + 3)]
    registry = given(registered(A1), *(_interrupted(at=t) for t in times))
    assert INTERRUPTION_MEMORY == 5
    assert registry.agents[A1].interruptions == tuple(times[-5:])


def test_host_started_clears_interrupted_action_and_restart() -> None:
    registry = given(registered(A1), _interrupted(), _decided(), _restart(1))
    agent = registry.agents[A1]
    assert (agent.interrupted, agent.action) == ("machine-restarted", "resume")
    assert agent.restart is not None
    accepted(
        registry,
        ev.HostStarted(at=T0 + 9, agent=A1, host_pid=20, program_pid=21, how="resume"),
    )
    agent = registry.agents[A1]
    assert agent.interrupted is None
    assert agent.action is None
    assert agent.restart is None
    assert (agent.host_started_at, agent.location, agent.pid) == (T0 + 9, Location.HOST, 21)
    # The interruption history stays: "interrupted twice within ten minutes" needs it.
    assert agent.interruptions == (T0,)


def test_restart_scheduled_sets_the_pending_restart_and_restarts_in_row() -> None:
    registry = given(registered(A1), _restart(1))
    accepted(registry, _restart(2, at=T0 + 10))
    agent = registry.agents[A1]
    assert agent.restart == PendingRestart(
        due_at=T0 + 15, attempt=2, budget=3, reason="killed by SIGKILL"
    )
    assert agent.restarts_in_row == 2


def test_restart_cancelled_removes_the_pending_restart_only() -> None:
    registry = given(registered(A1), _restart(2))
    accepted(registry, ev.RestartCancelled(at=T0 + 1, agent=A1, reason="replaced by attach"))
    assert registry.agents[A1].restart is None
    assert registry.agents[A1].restarts_in_row == 2


def test_restart_budget_reset_gives_the_budget_back() -> None:
    registry = given(registered(A1), _restart(1), _restart(2))
    accepted(registry, ev.RestartBudgetReset(at=T0 + 70, agent=A1))
    assert registry.agents[A1].restarts_in_row == 0


@pytest.mark.parametrize(
    "live", [AgentState.WORKING, AgentState.NEEDS_INPUT, AgentState.IDLE, AgentState.DONE]
)
def test_a_live_state_clears_the_interrupted_marker(live: AgentState) -> None:
    registry = given(registered(A1), _interrupted(), _decided())
    accepted(registry, state(A1, live, at=T0 + 1))
    assert registry.agents[A1].interrupted is None
    assert registry.agents[A1].action is None


@pytest.mark.parametrize(
    "not_running",
    [AgentState.LAUNCHING, AgentState.STOPPED, AgentState.FAILED, AgentState.LOST],
)
def test_a_state_not_seen_running_keeps_the_interrupted_marker(not_running: AgentState) -> None:
    # "stopped, marked interrupted" (recovery.md rules 3, 5, 6); launching is not seen running
    # yet, so a start that fails still shows the person the action to take.
    registry = given(registered(A1, state=AgentState.WORKING), _interrupted(), _decided())
    accepted(registry, state(A1, not_running, at=T0 + 1))
    assert registry.agents[A1].interrupted == "machine-restarted"
    assert registry.agents[A1].action == "resume"


def test_program_exited_clears_the_pid() -> None:
    registry = given(registered(A1), ev.HostStarted(at=T0, agent=A1, host_pid=1, program_pid=2))
    accepted(registry, ev.ProgramExited(at=T0 + 1, agent=A1, signal="SIGKILL"))
    assert registry.agents[A1].pid is None


def test_host_adopted_puts_the_agent_on_its_host() -> None:
    registry = given(registered(A1, launched_by_volee=True))
    accepted(registry, ev.HostAdopted(at=T0, agent=A1, host_pid=5))
    assert registry.agents[A1].location is Location.HOST


@pytest.mark.parametrize(
    ("code", "signal", "crashed", "description"),
    [
        (0, None, False, "exited with code 0"),
        (1, None, True, "exited with code 1"),
        (None, "SIGKILL", True, "killed by SIGKILL"),
        (0, "SIGTERM", True, "killed by SIGTERM"),  # a signal is never read as success
    ],
)
def test_program_exited_crash_reading(
    code: int | None, signal: str | None, crashed: bool, description: str
) -> None:
    exited = ev.ProgramExited(at=T0, agent=A1, code=code, signal=signal)
    assert exited.crashed is crashed
    assert exited.description == description

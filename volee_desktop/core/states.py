"""The eight agent states, which of them are live, and the urgency order of lists."""

from __future__ import annotations

from enum import StrEnum


class AgentState(StrEnum):
    """Where an agent is in its life (seed 002, "Agent states")."""

    LAUNCHING = "launching"
    WORKING = "working"
    NEEDS_INPUT = "needs-input"
    IDLE = "idle"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    LOST = "lost"

    @property
    def live(self) -> bool:
        """Whether a process is (believed to be) running for the agent."""
        return self in _LIVE

    @property
    def urgency(self) -> int:
        """Rank in lists: 0 is the most urgent."""
        return _URGENCY[self]


_LIVE = frozenset(
    {
        AgentState.LAUNCHING,
        AgentState.WORKING,
        AgentState.NEEDS_INPUT,
        AgentState.IDLE,
        AgentState.DONE,
    }
)

URGENCY_ORDER: tuple[AgentState, ...] = (
    AgentState.NEEDS_INPUT,
    AgentState.FAILED,
    AgentState.WORKING,
    AgentState.LAUNCHING,
    AgentState.DONE,
    AgentState.IDLE,
    AgentState.STOPPED,
    AgentState.LOST,
)
_URGENCY = {state: rank for rank, state in enumerate(URGENCY_ORDER)}


class Coarse(StrEnum):
    """The coarse categories a harness listing can tell (busy, waiting, idle, gone)."""

    BUSY = "busy"
    WAITING = "waiting"
    IDLE = "idle"
    GONE = "gone"


def coarse(state: AgentState) -> Coarse:
    """The coarse category of a rich state, as a session listing would report it."""
    if state in (AgentState.WORKING, AgentState.LAUNCHING):
        return Coarse.BUSY
    if state is AgentState.NEEDS_INPUT:
        return Coarse.WAITING
    if state in (AgentState.IDLE, AgentState.DONE):
        return Coarse.IDLE
    return Coarse.GONE

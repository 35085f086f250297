"""Agent states: which are live, and the urgency order lists use (seed 002)."""

from __future__ import annotations

import pytest

from volee_desktop.core.states import URGENCY_ORDER, AgentState, Coarse, coarse


def test_urgency_order_is_the_seeds() -> None:
    assert [s.value for s in URGENCY_ORDER] == [
        "needs-input",
        "failed",
        "working",
        "launching",
        "done",
        "idle",
        "stopped",
        "lost",
    ]
    assert [s.urgency for s in URGENCY_ORDER] == list(range(len(AgentState)))


@pytest.mark.parametrize(
    ("state", "live"),
    [
        (AgentState.LAUNCHING, True),
        (AgentState.WORKING, True),
        (AgentState.NEEDS_INPUT, True),
        (AgentState.IDLE, True),
        (AgentState.DONE, True),
        (AgentState.FAILED, False),
        (AgentState.STOPPED, False),
        (AgentState.LOST, False),
    ],
)
def test_live_states_are_the_seeds(state: AgentState, live: bool) -> None:
    assert state.live is live


@pytest.mark.parametrize(
    ("state", "category"),
    [
        (AgentState.LAUNCHING, Coarse.BUSY),
        (AgentState.WORKING, Coarse.BUSY),
        (AgentState.NEEDS_INPUT, Coarse.WAITING),
        (AgentState.IDLE, Coarse.IDLE),
        (AgentState.DONE, Coarse.IDLE),
        (AgentState.FAILED, Coarse.GONE),
        (AgentState.STOPPED, Coarse.GONE),
        (AgentState.LOST, Coarse.GONE),
    ],
)
def test_coarse_category_of_each_state(state: AgentState, category: Coarse) -> None:
    assert coarse(state) is category

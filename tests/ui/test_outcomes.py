"""A row's outcome: its plan "3/7" and its change, asked of the daemon when its turn ends."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.agent_model import OutcomeRole
from volee_desktop.app.outcomes import outcome_text
from volee_desktop.core.states import AgentState

OUTCOME = {
    "plan": {"done": 3, "total": 7},
    "change": {"files": 3, "added": 120, "removed": 14, "uncommitted": True},
    "last_message": "All tests pass now.",
}


def test_outcome_text() -> None:
    assert outcome_text(OUTCOME) == "plan 3/7 · 3 files +120 −14 (uncommitted)"
    assert outcome_text({"plan": None, "change": {"files": 1, "added": 2, "removed": 0}}) == (
        "1 file +2 −0"
    )
    assert outcome_text({"plan": None, "change": None, "last_message": "x"}) == ""
    assert outcome_text(None) == ""


def test_a_turns_end_asks_the_daemon_and_the_row_shows_it(
    qtbot: Any, controller: Any, world: World, link: FakeDaemonLink
) -> None:
    answers: dict[str, Any] = {}
    link.handlers["agents.outcome"] = lambda params: answers.get(str(params["agent"]), {})
    agent_id = world.agent("fixer")
    model = controller.model

    def row_text() -> str:
        row = model.row_of(agent_id)
        return str(model.data(model.index(row), OutcomeRole)) if row is not None else ""

    qtbot.waitUntil(lambda: any(c.method == "agents.outcome" for c in link.calls))
    assert row_text() == ""
    answers[agent_id] = {"agent": agent_id, **OUTCOME}
    asked = sum(1 for c in link.calls if c.method == "agents.outcome")
    world.state(agent_id, AgentState.DONE, "All tests pass now.")
    qtbot.waitUntil(lambda: row_text() == "plan 3/7 · 3 files +120 −14 (uncommitted)")
    assert sum(1 for c in link.calls if c.method == "agents.outcome") == asked + 1
    tip = model.data(model.index(model.row_of(agent_id)), Qt.ItemDataRole.ToolTipRole)
    assert tip.endswith("plan 3/7 · 3 files +120 −14 (uncommitted)")
    # Working again is not a turn's end: nothing is asked.
    world.state(agent_id, AgentState.WORKING)
    assert sum(1 for c in link.calls if c.method == "agents.outcome") == asked + 1

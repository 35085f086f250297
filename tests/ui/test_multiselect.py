"""Several agents at once (issue 26): Shift/Ctrl-click and Ctrl+A select, stop, resume and
forget act on the selection with its count in the confirmation, a change keeps it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.list_rows import Grouping
from volee_desktop.core.states import AgentState


def shown(controller: Any, qtbot: Any) -> Any:
    panel = controller.panel
    panel.show()
    qtbot.waitExposed(panel)
    panel.view.setFocus()
    return panel


def click(panel: Any, qtbot: Any, agent_id: str, modifier: Any) -> None:
    row = panel.rows.row_of(agent_id)
    rect = panel.view.visualRect(panel.rows.index(row, 0))
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())


def test_ctrl_a_selects_every_agent_and_stop_asks_once_with_the_count(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    ids = [world.agent(f"w{n}", AgentState.WORKING) for n in range(4)]
    stopped = world.agent("s0", AgentState.STOPPED)
    panel = shown(controller, qtbot)
    panel.set_grouping(Grouping.STATE)  # headers are not selected
    qtbot.keyClick(panel.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert sorted(panel.selected_ids()) == sorted([*ids, stopped])
    assert panel.buttons["stop"].text() == "Stop 4…"
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.stop"):
        panel.trigger("stop")
    assert recorder.confirms[-1][0] == "Stop 4 agents?"
    assert "1 of the 5 selected left out (not running)" in recorder.confirms[-1][1]
    assert sorted(c.params["agent"] for c in link.calls if c.method == "agents.stop") == sorted(ids)
    qtbot.waitUntil(lambda: panel.status.text() == "Asked 4 agents to stop.")


def test_ctrl_and_shift_click_select_and_the_selection_outlives_a_change(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    ids = [world.agent(f"a{n}", AgentState.IDLE) for n in range(5)]
    panel = shown(controller, qtbot)
    order = panel.visible_ids()
    click(panel, qtbot, order[0], Qt.KeyboardModifier.NoModifier)
    click(panel, qtbot, order[2], Qt.KeyboardModifier.ShiftModifier)
    click(panel, qtbot, order[4], Qt.KeyboardModifier.ControlModifier)
    assert panel.selected_ids() == [order[0], order[1], order[2], order[4]]
    world.activity(ids[3], "reading the code")  # a change rebuilds the rows
    world.state(order[3], AgentState.WORKING)
    panel.rows.flush()
    assert sorted(panel.selected_ids()) == sorted([order[0], order[1], order[2], order[4]])
    recorder.confirm_answer = False
    panel.trigger("forget")
    assert recorder.confirms[-1][0] == "Forget 4 agents?"
    assert "agents.forget" not in link.methods()  # no means no
    recorder.confirm_answer = True
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.forget"):
        panel.trigger("forget")
    assert len([c for c in link.calls if c.method == "agents.forget"]) == 4


def test_the_rows_menu_on_a_selection_acts_on_all_of_it(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    for n in range(3):
        world.agent(f"w{n}", AgentState.WORKING)
    panel = shown(controller, qtbot)
    qtbot.keyClick(panel.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    order = panel.visible_ids()
    panel.view.selectionModel().setCurrentIndex(
        panel.rows.index(panel.rows.row_of(order[1]), 0),
        panel.view.selectionModel().SelectionFlag.NoUpdate,
    )
    menu = panel.build_menu()
    stop = next(a for a in menu.actions() if a.text() == "Stop 3…")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.stop"):
        stop.trigger()
    assert recorder.confirms[-1][0] == "Stop 3 agents?"


def test_a_button_that_fits_none_of_the_selection_says_no_count(
    controller: Any, world: World, qtbot: Any
) -> None:
    # The trial of issue 26 (docs/trials/issue-26.md) saw a greyed "Resume 0…" over four
    # working agents: a count of none reads as an action on nothing.
    for n in range(4):
        world.agent(f"w{n}", AgentState.WORKING)
    panel = shown(controller, qtbot)
    qtbot.keyClick(panel.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert panel.buttons["stop"].text() == "Stop 4…"
    assert panel.buttons["resume"].text() == "Resume"
    assert not panel.buttons["resume"].isEnabled()

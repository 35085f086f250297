"""Allow on several agents at once (issue 26): offered only when every selected agent asks
a permission whose line is whole, each answer naming its request (verified on its screen by
the daemon as a single Allow), the count and each command in the confirmation; otherwise
Allow is off and the status line says why."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.core.states import AgentState

ASK = {
    "questions": [
        {
            "question": "Which database?",
            "header": "Database",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}],
            "multiSelect": False,
        }
    ]
}


def all_selected(controller: Any, qtbot: Any) -> Any:
    panel = controller.panel
    with qtbot.waitActive(panel):  # the shortcuts act in the active window
        panel.show()
        panel.activateWindow()
    panel.view.setFocus()
    qtbot.keyClick(panel.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    return panel


def ctrl_y(panel: Any, qtbot: Any) -> None:
    qtbot.keyClick(panel.view, Qt.Key.Key_Y, Qt.KeyboardModifier.ControlModifier)


def test_ctrl_y_on_three_permission_requests_allows_each_after_one_confirmation(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    commands = ["pytest -q", "ruff check .", "git status"]
    ids = [world.agent(f"w{n}", AgentState.WORKING) for n in range(3)]
    for agent_id, command in zip(ids, commands, strict=True):
        world.ask(agent_id, "Bash", {"command": command})
    requests = {i: link.registry.agents[i].request.id for i in ids}  # type: ignore[union-attr]
    panel = all_selected(controller, qtbot)
    allow = panel.answer_buttons["allow"]
    assert allow.isVisible()
    assert allow.isEnabled()
    assert allow.text() == "Allow 3…"
    assert not panel.answer_buttons["deny"].isVisible()  # Deny answers one at a time
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        ctrl_y(panel, qtbot)
    title, message = recorder.confirms[-1]
    assert title == "Allow 3 requests?"
    for command in commands:
        assert f"Bash: {command}" in message
    sent = [c.params for c in link.calls if c.method == "agents.allow"]
    assert {p["agent"]: p["request"] for p in sent} == requests  # each names its request
    qtbot.waitUntil(lambda: panel.status.text() == "Allowed 3 requests.")


def test_the_button_allows_too_and_no_at_the_confirmation_sends_nothing(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    ids = [world.agent(f"w{n}", AgentState.WORKING) for n in range(2)]
    for agent_id in ids:
        world.ask(agent_id, "Bash", {"command": "make"})
    panel = all_selected(controller, qtbot)
    recorder.confirm_answer = False
    qtbot.mouseClick(panel.answer_buttons["allow"], Qt.MouseButton.LeftButton)
    assert recorder.confirms[-1][0] == "Allow 2 requests?"
    assert "agents.allow" not in link.methods()
    recorder.confirm_answer = True
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        qtbot.mouseClick(panel.answer_buttons["allow"], Qt.MouseButton.LeftButton)
    assert len([c for c in link.calls if c.method == "agents.allow"]) == 2


def test_mixed_kinds_leave_allow_off_and_ctrl_y_says_why(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    a = world.agent("asker", AgentState.WORKING)
    b = world.agent("runner", AgentState.WORKING)
    world.ask(a, "AskUserQuestion", ASK)
    world.ask(b, "Bash", {"command": "pytest -q"})
    panel = all_selected(controller, qtbot)
    allow = panel.answer_buttons["allow"]
    assert allow.isVisible()
    assert not allow.isEnabled()
    ctrl_y(panel, qtbot)
    assert "different kinds (1 permission and 1 question)" in panel.status.text()
    assert panel.status.text().startswith("Allow is off for this selection")
    assert not recorder.confirms
    assert "agents.allow" not in link.methods()


def test_a_command_the_line_cannot_show_whole_leaves_allow_off(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    a = world.agent("plain", AgentState.WORKING)
    b = world.agent("sneaky", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "pytest -q"})
    world.ask(b, "Bash", {"command": "echo hi\nrm -rf ~"})
    panel = all_selected(controller, qtbot)
    assert not panel.answer_buttons["allow"].isEnabled()
    ctrl_y(panel, qtbot)
    assert "sneaky's line does not show all of it (2 lines — open to read it all)" in (
        panel.status.text()
    )
    assert not recorder.confirms
    assert "agents.allow" not in link.methods()


def test_an_agent_that_asks_nothing_in_the_selection_leaves_allow_off(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    a = world.agent("runner", AgentState.WORKING)
    world.agent("busy", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "pytest -q"})
    panel = all_selected(controller, qtbot)
    assert not panel.answer_buttons["allow"].isEnabled()
    menu = panel.build_menu()
    item = next(i for i in menu.actions() if i.text() == "Allow")
    item.trigger()  # the row's menu on the selection says why too
    assert "busy asks nothing" in panel.status.text()
    assert "agents.allow" not in link.methods()


def test_a_request_that_changed_after_the_confirmation_is_not_answered(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    ids = [world.agent(f"w{n}", AgentState.WORKING) for n in range(2)]
    for agent_id in ids:
        world.ask(agent_id, "Bash", {"command": "make"})
    panel = all_selected(controller, qtbot)

    def confirm_then_change(title: str, message: str) -> bool:
        world.ask(ids[1], "Bash", {"command": "make install"})  # a new request meanwhile
        return True

    controller.confirm = confirm_then_change
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        ctrl_y(panel, qtbot)
    sent = [c.params["agent"] for c in link.calls if c.method == "agents.allow"]
    assert sent == [ids[0]]
    qtbot.waitUntil(lambda: "1 not answered" in panel.status.text())
    assert "w1: it now asks something else" in panel.status.text()

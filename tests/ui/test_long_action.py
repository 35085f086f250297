"""An action that took long (over feedback.LONG_ACTION_S, stopping twenty agents) is told by
a notification as well as the status line (issue 26); a quick one is the status line only."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.core.states import AgentState


class Clock:
    """The controller's monotonic clock, moved by the fake daemon's answers."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def slow(link: FakeDaemonLink, clock: Clock, method: str, seconds: float) -> None:
    def handler(params: dict[str, Any]) -> Any:
        clock.now += seconds
        return {}

    link.handlers[method] = handler


def test_stopping_twenty_agents_that_took_long_notifies_with_how_long(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, sink: Any
) -> None:
    clock = Clock()
    controller.monotonic = clock
    slow(link, clock, "agents.stop", 0.75)  # 20 x 0.75 s: 15 s in all
    for n in range(20):
        world.agent(f"w{n}", AgentState.WORKING)
    panel = controller.panel
    with qtbot.waitActive(panel):
        panel.show()
        panel.activateWindow()
    panel.view.setFocus()
    qtbot.keyClick(panel.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.stop"):
        panel.trigger("stop")
    qtbot.waitUntil(lambda: any(n.title == "Asked 20 agents to stop." for n in sink.notices))
    notice = next(n for n in sink.notices if n.title == "Asked 20 agents to stop.")
    assert notice.body == "It took 15 s."
    assert panel.status.text() == "Asked 20 agents to stop."


def test_a_quick_action_says_it_in_the_status_line_only(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, sink: Any
) -> None:
    clock = Clock()
    controller.monotonic = clock
    slow(link, clock, "agents.stop", 2.0)
    a = world.agent("worker", AgentState.WORKING)
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.stop"):
        controller.panel.select(a)
        controller.panel.trigger("stop")
    qtbot.waitUntil(lambda: controller.panel.status.text() == "Asked worker to stop.")
    assert not any(n.title == "Asked worker to stop." for n in sink.notices)


def test_a_single_answer_that_took_long_notifies_too(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, sink: Any
) -> None:
    clock = Clock()
    controller.monotonic = clock
    slow(link, clock, "agents.allow", 15.0)  # the daemon waited for the dialog on screen
    a = world.agent("api-fixer", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "pytest -q"})
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        controller.panel.select(a)
        controller.panel.trigger("allow")
    title = "Allowed api-fixer: Bash: pytest -q."
    qtbot.waitUntil(lambda: any(n.title == title for n in sink.notices))
    assert next(n for n in sink.notices if n.title == title).body == "It took 15 s."

"""Notifications in the running app: shown once, summarised in a burst, actions open the agent."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.notify_policy import Kind
from volee_desktop.core.states import AgentState


def test_needs_input_shows_one_notification_and_its_action_opens_the_agent(
    controller: Any, world: World, sink: Any, qtbot: Any, recorder: Any
) -> None:
    a = world.agent("api-fixer", AgentState.WORKING)
    world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    notice = sink.notices[0]
    assert (notice.kind, notice.title) == (Kind.NEEDS_INPUT, "api-fixer asks to use Bash")
    assert notice.body.startswith("Bash (its input was not given)\nin project · waiting since ")
    with qtbot.waitSignal(controller.opened, timeout=3000) as opened:
        sink.activators[0]()
    assert opened.args[0] == a


def test_a_burst_is_one_summary_and_its_action_opens_the_list(
    controller: Any, world: World, sink: Any, qtbot: Any
) -> None:
    ids = [world.agent(f"agent-{i}", AgentState.WORKING) for i in range(5)]
    for agent in ids:
        world.state(agent, AgentState.NEEDS_INPUT, "permission for Bash")
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    assert sink.notices[0].title == "5 agents need you"
    sink.activators[0]()
    assert controller.panel.isVisible()


def test_a_stop_by_the_person_shows_nothing(
    controller: Any, world: World, sink: Any, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = world.agent("api-fixer", AgentState.NEEDS_INPUT, "permission for Bash")
    world.stop_by_person(a)
    b = world.agent("marker", AgentState.WORKING)
    world.state(b, AgentState.FAILED, "boom")  # something that does notify, to wait on
    qtbot.waitUntil(lambda: len(sink.notices) >= 1, timeout=3000)
    assert [n.agent for n in sink.notices] == [b]


def test_pause_in_the_tray_menu_silences_notifications(
    controller: Any, world: World, sink: Any, qtbot: Any
) -> None:
    controller.tray.action_pause.setChecked(True)
    a = world.agent("api-fixer", AgentState.WORKING)
    world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    controller.tray.action_pause.setChecked(False)
    b = world.agent("marker", AgentState.WORKING)
    world.state(b, AgentState.NEEDS_INPUT, "permission for Edit")
    qtbot.waitUntil(lambda: len(sink.notices) >= 1, timeout=3000)
    assert [n.agent for n in sink.notices] == [b]  # nothing for a, shown while paused

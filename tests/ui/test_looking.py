"""The app is an interactive client only while someone looks (issue 13): the list or an
agent window on screen; with only the icon showing it asks the daemon for nothing."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.core.model import Location
from volee_desktop.core.states import AgentState


def test_the_list_and_the_agent_windows_make_the_app_interactive(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, recorder: Any
) -> None:
    assert link.interactive == [False]  # attached with nothing open: only the icon
    controller.panel.show()
    qtbot.waitUntil(lambda: link.interactive[-1] is True, timeout=3000)
    a = world.agent("worker", AgentState.WORKING, location=Location.HOST)
    recorder.terminal_argv = None
    with qtbot.waitSignal(controller.opened, timeout=3000):
        controller.panel.select(a)
        controller.panel.trigger("open")
    window = controller.windows[a]
    qtbot.waitUntil(window.isVisible, timeout=3000)
    controller.panel.hide()  # the list goes, the agent's window stays: still looking
    assert controller.looking.on
    assert link.interactive == [False, True]
    window.close()
    qtbot.waitUntil(lambda: link.interactive[-1] is False, timeout=3000)
    assert link.interactive == [False, True, False]
    assert not controller.looking.on

"""Regressions found by using the tray app by hand on a real desktop (Xvfb, trayer, dunst)."""

from __future__ import annotations

from typing import Any

from volee_desktop.core.states import AgentState

from .fakes import World


def test_an_actions_error_does_not_stay_under_the_list(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    world.agent("api-fixer", AgentState.WORKING)
    panel.show_status("No terminal emulator found: set TERMINAL", transient=True)
    assert not panel.status.isHidden()
    panel.trigger("timeline")  # the next action replaces the old outcome
    assert panel.status.isHidden()
    assert panel.status.text() == ""

    panel.show_status("No terminal emulator found: set TERMINAL", transient=True)
    panel.show()  # opening the list again starts clean
    qtbot.waitExposed(panel)
    assert panel.status.isHidden()


def test_a_daemon_notice_stays_under_the_list(controller: Any, world: World, qtbot: Any) -> None:
    panel = controller.panel
    world.agent("api-fixer", AgentState.WORKING)
    controller.live.on_notice({"kind": "config-problems", "problems": ["agents.x: unknown"]})
    panel.trigger("timeline")
    panel.show()
    qtbot.waitExposed(panel)
    assert "unknown" in panel.status.text()
    assert not panel.status.isHidden()

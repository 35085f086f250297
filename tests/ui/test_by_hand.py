"""Regressions found by using the tray app by hand on a real desktop (Xvfb, trayer, dunst)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.app_link import World
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState


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


class WithdrawingSink:
    """Records what is shown and what is taken off the screen again."""

    def __init__(self) -> None:
        self.notices: list[Any] = []
        self.activators: list[Any] = []
        self.withdrawn: list[Any] = []

    async def show(self, notice: Any, activate: Any) -> bool:
        self.notices.append(notice)
        self.activators.append(activate)
        return True

    async def withdraw(self, notice: Any) -> None:
        self.withdrawn.append(notice)


@pytest.fixture
def sink() -> WithdrawingSink:
    return WithdrawingSink()


def test_a_needs_input_notification_goes_once_the_agent_was_answered(
    controller: Any, world: World, sink: WithdrawingSink, qtbot: Any
) -> None:
    a = world.agent("asker", AgentState.WORKING)
    world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")  # still true: it stays
    b = world.agent("other", AgentState.WORKING)
    world.state(b, AgentState.DONE)
    assert sink.withdrawn == []
    world.state(a, AgentState.WORKING, "Bash: touch x")  # the person said yes
    qtbot.waitUntil(lambda: sink.withdrawn == sink.notices[:1], timeout=3000)


def test_a_failed_notification_goes_once_the_agent_is_forgotten(
    controller: Any, world: World, sink: WithdrawingSink, qtbot: Any, link: Any
) -> None:
    a = world.agent("crash", AgentState.WORKING)
    world.state(a, AgentState.FAILED, "exited with code 3")
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    link.push(ev.AgentForgotten(at=world.tick(), agent=a))
    qtbot.waitUntil(lambda: sink.withdrawn == sink.notices[:1], timeout=3000)


def test_the_tooltip_says_notifications_are_paused(controller: Any, world: World) -> None:
    world.agent("asker", AgentState.NEEDS_INPUT, "permission for Bash")
    controller.tray.action_pause.setChecked(True)
    controller.tray.apply_now()
    assert controller.tray.icon.toolTip() == "1 needs you · notifications paused"
    assert controller.panel.summary() == "1 needs you · notifications paused"
    controller.tray.action_pause.setChecked(False)
    controller.tray.apply_now()
    assert controller.tray.icon.toolTip() == "1 needs you"


def test_window_titles_end_with_the_app_name_once(controller: Any, qtbot: Any) -> None:
    # On X11 Qt appends " — volee" (the display name) unless the title already ends with it:
    # "volee — agents" was shown as "volee — agents — volee".
    dialog = controller.open_settings()
    qtbot.addWidget(dialog)
    for widget in (controller.panel, dialog):
        title = widget.windowTitle()
        assert title.endswith(" — volee")
        assert title.count("volee") == 1


def test_opening_an_agent_that_needs_you_puts_the_cursor_in_the_reply_box(
    controller: Any, world: World, qtbot: Any
) -> None:
    a = world.agent("asker", AgentState.NEEDS_INPUT, "permission for Bash")
    b = world.agent("worker", AgentState.WORKING)
    controller.actions.open_agent(a)  # what the notification's Open does (no terminal: output view)
    window = controller.windows[a]
    qtbot.waitExposed(window)
    assert window.focusWidget() is window.reply
    controller.actions.open_agent(b)
    other = controller.windows[b]
    qtbot.waitExposed(other)
    assert other.focusWidget() is not other.reply

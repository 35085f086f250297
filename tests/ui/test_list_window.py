"""The list as a window a person keeps all day (issue 26): the pin, volee's own windows in
front of it, Escape and the icon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QSystemTrayIcon, QWidget

from tests.fakes.app_link import World
from volee_desktop.app.agent_model import AgentListModel
from volee_desktop.app.agent_window import AgentWindow
from volee_desktop.app.list_rows import Grouping
from volee_desktop.app.panel import AgentPanel
from volee_desktop.core.states import AgentState


def shown_popup(qtbot: Any, prefs: Path | None = None) -> AgentPanel:
    panel = AgentPanel(AgentListModel(), popup=True, prefs_path=prefs)
    qtbot.addWidget(panel)
    with qtbot.waitActive(panel):
        panel.show_near(None)
    return panel


def test_a_pinned_list_stays_when_the_person_clicks_elsewhere_and_is_remembered(
    qtbot: Any, tmp_path: Path
) -> None:
    prefs = tmp_path / "list.json"
    panel = shown_popup(qtbot, prefs)
    panel.pin.click()
    assert panel.pinned
    assert panel.isVisible()  # pinning re-flags the window: it comes straight back
    assert panel.windowFlags() & Qt.WindowType.Window == Qt.WindowType.Window
    assert not panel.windowFlags() & Qt.WindowType.Tool & ~Qt.WindowType.Window
    assert json.loads(prefs.read_text())["pinned"] is True
    other = QWidget()
    qtbot.addWidget(other)
    with qtbot.waitActive(other):
        other.show()
        other.activateWindow()
    qtbot.wait(50)  # the check runs on the next turn of the loop: give it a few
    assert panel.isVisible()
    qtbot.keyClick(panel.view, Qt.Key.Key_Escape)
    assert panel.isVisible(), "Escape does not close a pinned list"
    # The next start: still pinned, a plain window.
    again = AgentPanel(AgentListModel(), popup=True, prefs_path=prefs)
    qtbot.addWidget(again)
    assert again.pinned
    assert again.pin.isChecked()
    assert again.windowFlags() & Qt.WindowType.Tool == Qt.WindowType.Window


def test_the_list_stays_behind_the_windows_volee_opens(qtbot: Any, world: World) -> None:
    panel = shown_popup(qtbot)
    a = world.agent("api-fixer", AgentState.WORKING)
    window = AgentWindow(world.link.registry.agents[a])
    qtbot.addWidget(window)
    with qtbot.waitActive(window):
        window.show()
        window.activateWindow()
    qtbot.wait(50)
    assert panel.isVisible(), "the agent's window must not close the list"
    review = QDialog()
    qtbot.addWidget(review)
    with qtbot.waitActive(review):
        review.show()
        review.activateWindow()
    qtbot.wait(50)
    assert panel.isVisible(), "a dialog of volee's must not close the list"
    assert not panel.windowFlags() & Qt.WindowType.WindowStaysOnTopHint


def test_escape_closes_an_unpinned_list(qtbot: Any) -> None:
    panel = shown_popup(qtbot)
    qtbot.keyClick(panel.view, Qt.Key.Key_Escape)
    assert not panel.isVisible()


def test_opening_an_agent_from_the_list_keeps_the_list_and_the_icon_raises_a_pinned_one(
    controller: Any, world: World, qtbot: Any
) -> None:
    controller.has_tray = True  # the popup's behaviour, without a real tray
    panel = controller.panel
    a = world.agent("api-fixer", AgentState.IDLE)
    controller.show_list(a)
    qtbot.waitExposed(panel)
    panel.trigger("open")  # its window opens (no terminal): the list stays
    qtbot.waitUntil(lambda: a in controller.windows, timeout=3000)
    assert panel.isVisible()
    panel.set_pinned(True)
    controller.tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    assert panel.isVisible(), "the icon brings a pinned list forward, it does not close it"
    panel.set_pinned(False)
    controller.tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    assert not panel.isVisible()


def test_a_filter_finds_and_counts_agents_in_folded_groups(controller: Any, world: World) -> None:
    panel = controller.panel
    for n in range(39):
        world.agent(f"w{n}", AgentState.WORKING)
    for n in range(8):
        world.agent(f"d{n}", AgentState.DONE)
    panel.set_grouping(Grouping.STATE)
    panel.toggle_fold("state:working")
    assert len(panel.visible_ids()) == 8  # folded: the working agents are out of sight
    panel.filter.setText("working")
    assert panel.filter_label.text() == "Filtered: matching “working” (39 of 47)"
    assert len(panel.visible_ids()) == 39, "the folded group opens while the filter is set"
    panel.set_state_filter(AgentState.WORKING)
    assert "(39 of 47)" in panel.filter_label.text()
    panel.clear_filter()
    assert len(panel.visible_ids()) == 8, "the fold is back once the filter is gone"

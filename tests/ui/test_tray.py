"""The tray icon: counts, tooltip, marks, SVGs rendered at any size with a painted badge, menu."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QSystemTrayIcon

from volee_desktop.app.icons import IconCache, Svgs, resources_dir
from volee_desktop.app.summary import Mark, StateCounts, summarize
from volee_desktop.core.states import AgentState

from .fakes import World


def counts(**by_state: int) -> StateCounts:
    c = StateCounts()
    for name, n in by_state.items():
        c.states[AgentState(name.replace("_", "-"))] = n
    return c


def test_tooltip_and_marks() -> None:
    s = summarize(counts(needs_input=2, working=5, failed=1))
    assert s.tooltip == "2 need you · 5 working · 1 failed"
    assert (s.needs, s.mark) == (2, Mark.WARNING)
    s = summarize(counts(needs_input=1, working=1))
    assert s.tooltip == "1 needs you · 1 working"
    assert s.mark is Mark.WORKING
    s = summarize(counts(idle=3))
    assert (s.tooltip, s.mark) == ("3 agents idle", Mark.QUIET)
    s = summarize(counts(stopped=2))
    assert (s.tooltip, s.mark) == ("no agents running", Mark.PLAIN)
    s = summarize(counts(lost=1))
    assert s.mark is Mark.WARNING
    s = summarize(counts(working=1), connected=False, detail="no volee daemon")
    assert s.tooltip.startswith("volee: no volee daemon")


def test_svgs_are_valid_and_found() -> None:
    svgs = Svgs()
    assert svgs.valid()
    assert (resources_dir() / "volee.svg").is_file()


def _red_pixels(image: Any) -> int:
    red = 0
    for y in range(image.height()):
        for x in range(image.width()):
            c = QColor(image.pixel(x, y))
            if c.red() > 180 and c.green() < 90 and c.blue() < 90:
                red += 1
    return red


def test_icon_is_rendered_at_the_asked_size_and_scale_with_a_badge(qapp: Any) -> None:
    cache = IconCache(Svgs())
    plain = cache.icon(0, Mark.QUIET)
    badged = cache.icon(3, Mark.QUIET)
    for size, scale in ((16, 1.0), (22, 1.0), (22, 2.0), (64, 1.0)):
        pixmap = badged.pixmap(QSize(size, size), scale)
        assert pixmap.deviceIndependentSize().width() == size
        assert pixmap.width() == round(size * scale)  # drawn at device pixels: sharp
        assert _red_pixels(pixmap.toImage()) > 0
        assert _red_pixels(plain.pixmap(QSize(size, size), scale).toImage()) == 0
    assert cache.icon(3, Mark.QUIET) is badged  # cached per (count, mark)


def test_tray_reflects_live_counts(controller: Any, world: World, qtbot: Any) -> None:
    a = world.agent("a", AgentState.WORKING)
    world.agent("b", AgentState.WORKING)
    world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    controller.tray.apply_now()
    assert controller.tray.icon.toolTip() == "1 needs you · 1 working"
    assert controller.tray.summary.needs == 1
    assert controller.panel.summary() == "1 needs you · 1 working"
    world.state(a, AgentState.FAILED, "boom")
    controller.tray.apply_now()
    assert controller.tray.summary.mark is Mark.WARNING
    assert controller.tray.icon.toolTip() == "1 working · 1 failed"


def test_menu_and_left_click(controller: Any, qtbot: Any) -> None:
    texts = [a.text() for a in controller.tray.visible_entries()]
    assert texts == [
        "Open agent list",
        "Pause notifications",
        "Settings…",
        "Quit volee (agents keep running)",
    ]
    controller.tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    assert controller.panel.isVisible()
    controller.tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    assert not controller.panel.isVisible()
    with qtbot.waitSignal(controller.quit_requested):
        controller.tray.action_quit.trigger()


def test_the_popup_list_hides_when_the_person_clicks_elsewhere(qapp: Any, qtbot: Any) -> None:
    from PySide6.QtWidgets import QWidget

    from volee_desktop.app.agent_model import AgentListModel
    from volee_desktop.app.panel import AgentPanel

    panel = AgentPanel(AgentListModel(), popup=True)
    other = QWidget()
    qtbot.addWidget(panel)
    qtbot.addWidget(other)
    with qtbot.waitActive(panel):
        panel.show_near(None)
    assert panel.isVisible()
    with qtbot.waitActive(other):
        other.show()
        other.activateWindow()
    qtbot.waitUntil(lambda: not panel.isVisible(), timeout=3000)
    assert panel.hidden_at > 0


def test_daemon_notices_are_shown_in_the_list(controller: Any) -> None:
    controller.live.on_notice(
        {"kind": "config-problems", "problems": ["config.toml: agents.x: unknown setting"]}
    )
    assert "unknown setting" in controller.panel.status.text()
    assert not controller.panel.status.isHidden()

"""The tray icon: counts, tooltip, marks, SVGs rendered at any size with a painted badge, menu."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QSystemTrayIcon

from tests.fakes.app_link import World
from volee_desktop.app.icons import IconCache, Svgs, resources_dir
from volee_desktop.app.summary import Mark, StateCounts, summarize
from volee_desktop.core.states import AgentState


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
    assert (s.tooltip, s.mark) == ("3 idle", Mark.QUIET)
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
        "New agent…",
        "Pause notifications",
        "Settings…",
        "About volee…",
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


def test_agents_a_usage_limit_stopped_show_in_the_tooltip_and_the_menu_continues_them(
    controller: Any, world: World, link: Any, qtbot: Any
) -> None:
    from volee_desktop.core import events as ev
    from volee_desktop.core.model import LimitKind

    for name in ("a", "b"):
        agent_id = world.agent(name, AgentState.WORKING)
        world.state(agent_id, AgentState.IDLE, "limited: 5-hour limit")
        world.link.push(
            ev.LimitHit(
                at=world.tick(),
                agent=agent_id,
                kind=LimitKind.FIVE_HOUR,
                resets_at=world.t + 3600,
                ended=True,
            )
        )
    controller.tray.apply_now()
    assert "2 limited, resets " in controller.tray.icon.toolTip()
    assert "2 limited, resets " in controller.panel.summary()
    texts = [a.text() for a in controller.tray.visible_entries()]
    assert texts[0] == "Continue 2 limited agents now"
    with qtbot.waitSignal(controller.called, timeout=3000):
        controller.tray.action_continue.trigger()
    assert link.last("agents.continue").params == {"all": True}


def test_agents_waiting_on_a_limit_mark_the_icon_below_a_failure() -> None:
    c = counts(idle=3, working=1)
    c.limited = 3
    assert summarize(c).mark is Mark.LIMITED  # the wait shows over the working dots
    c.states[AgentState.FAILED] = 1
    assert summarize(c).mark is Mark.WARNING


def test_the_look_follows_the_setting_or_the_colour_scheme() -> None:
    from PySide6.QtCore import Qt

    from volee_desktop.app.icons import Look, look_for

    assert look_for("auto", Qt.ColorScheme.Dark) is Look.DARK_PANEL
    assert look_for("auto", Qt.ColorScheme.Light) is Look.LIGHT_PANEL
    assert look_for("auto", Qt.ColorScheme.Unknown) is Look.COLOUR
    assert look_for("light-panel", Qt.ColorScheme.Dark) is Look.LIGHT_PANEL
    assert look_for("colour", Qt.ColorScheme.Dark) is Look.COLOUR


def test_the_symbolic_icon_is_one_colour_that_stands_out_on_its_panel(qapp: Any) -> None:
    from volee_desktop.app.icons import ON_DARK, ON_LIGHT, Look

    for look, ink, panel in ((Look.DARK_PANEL, ON_DARK, 0x2B), (Look.LIGHT_PANEL, ON_LIGHT, 0xF0)):
        for scale in (1.0, 1.5, 2.0):
            image = IconCache(Svgs(), look).icon(0, Mark.QUIET).pixmap(QSize(22, 22), scale)
            drawn = image.toImage()
            assert drawn.width() == round(22 * scale)
            opaque = 0
            for y in range(drawn.height()):
                for x in range(drawn.width()):
                    c = drawn.pixelColor(x, y)
                    if c.alpha() > 200:
                        opaque += 1
                        assert abs(c.red() - ink.red()) < 8
                        assert abs(c.blue() - ink.blue()) < 8
            assert opaque > drawn.width() * 3  # the rim and the V, not a speck
            assert abs(ink.lightness() - panel) > 150


def test_a_two_digit_badge_at_16_px_has_a_legible_font_and_room_for_it(qapp: Any) -> None:
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QFontMetricsF

    from volee_desktop.app.icons import badge_layout, badge_text

    box = QRectF(0, 0, 16, 16)
    assert badge_text(12, 16) == "12"
    assert badge_text(130, 16) == "9+"
    assert badge_text(130, 44) == "99+"
    for text in ("7", "12", "9+"):
        badge, font = badge_layout(box, text)
        assert font.pixelSize() >= 9, text
        assert box.contains(badge)
        assert QFontMetricsF(font).horizontalAdvance(text) <= badge.width() * 0.93, text


def test_a_new_look_redraws_the_tray_icon(controller: Any) -> None:
    from volee_desktop.app.icons import Look

    controller.tray.apply_now()
    before = controller.tray.icon.icon().cacheKey()
    controller.tray.set_look(Look.DARK_PANEL)
    assert controller.tray.icon.icon().cacheKey() != before
    assert controller.icons.look is Look.DARK_PANEL


def test_an_unreachable_machine_is_said_and_marks_the_badge() -> None:
    counts = StateCounts()
    s = summarize(counts, unreachable=("devbox unreachable since 14:02",))
    assert (s.tooltip, s.mark) == (
        "no agents running · devbox unreachable since 14:02",
        Mark.WARNING,
    )

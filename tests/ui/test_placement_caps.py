"""Where the list opens without an icon's geometry (a StatusNotifierItem tray), and what a
notification says for a server's capabilities (issue 28). The real hosts and servers are in
test_desktops.py."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QRect, QSize

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.notify_policy import needs_input_notice
from volee_desktop.app.notifybus import NO_BUTTONS, card_body
from volee_desktop.app.wayland import GAP, on_wayland, place_unanchored

SCREEN = QRect(0, 0, 1280, 800)
LIST = QSize(420, 520)


def test_by_a_top_panels_pointer_the_list_opens_below_it_inside_the_screen() -> None:
    where = place_unanchored(LIST, SCREEN, QPoint(1259, 13))
    assert where == QPoint(1280 - 420, 13 + GAP)  # pushed in from the right edge


def test_by_a_bottom_panels_pointer_the_list_opens_above_it() -> None:
    where = place_unanchored(LIST, SCREEN, QPoint(600, 790))
    assert where == QPoint(600 - 210, 790 - GAP - 520)


def test_an_unknown_pointer_centres_the_list_never_0_0() -> None:
    centred = QPoint((1280 - 420) // 2, (800 - 520) // 2)
    assert place_unanchored(LIST, SCREEN, None) == centred
    assert place_unanchored(LIST, SCREEN, QPoint(0, 0)) == centred  # "unknown" on Wayland
    assert place_unanchored(LIST, SCREEN, QPoint(5000, 10)) == centred  # another screen's


def test_a_second_screens_area_is_kept() -> None:
    right = QRect(1280, 0, 1920, 1080)
    where = place_unanchored(LIST, right, None)
    assert right.contains(QRect(where, LIST))


def test_the_tests_run_offscreen_not_on_wayland(qapp: Any) -> None:
    assert not on_wayland()


def _notice(command: str) -> Any:
    link = FakeDaemonLink()
    world = World(link)
    agent_id = world.agent("api-fixer", cwd="/src/shop-api")
    world.ask(agent_id, "Bash", {"command": command})
    return needs_input_notice(link.registry.agents[agent_id])


LINK = 'see <a href="https://evil.example/x">the docs</a> && <b>pytest</b>'


def test_a_server_reading_markup_gets_the_command_escaped_no_tag_no_link() -> None:
    body = card_body(_notice(LINK), frozenset({"actions", "body", "body-markup"}))
    assert "<a" not in body
    assert "<b>" not in body
    assert '&lt;a href="https://evil.example/x"&gt;the docs&lt;/a&gt; &amp;&amp;' in body
    assert NO_BUTTONS not in body


def test_a_server_without_markup_gets_the_plain_characters() -> None:
    body = card_body(_notice(LINK), frozenset({"actions", "body"}))
    assert LINK in body
    assert "&lt;" not in body


def test_a_server_without_actions_is_told_where_to_answer() -> None:
    body = card_body(_notice("pytest -q"), frozenset({"body", "body-markup"}))
    assert body.endswith(NO_BUTTONS.replace("'", "'"))
    assert "pytest -q" in body


def test_a_server_that_takes_actions_but_draws_no_buttons_is_told_where_to_answer_too() -> None:
    # Issue 28's trial on sway: mako advertises "actions" (makoctl invoke) but draws no
    # buttons, and its card said nothing of how to answer.
    from volee_desktop.app.notifybus import server_caps

    mako = server_caps(frozenset({"actions", "body", "body-markup"}), "mako")
    body = card_body(_notice("pytest -q"), mako, "mako")
    assert body.endswith("Answer it in volee's agent list (its tray icon) or with mako's menu "
                         "(`makoctl menu`).")  # fmt: skip
    dunst = server_caps(frozenset({"actions", "body", "body-markup"}), "dunst")
    assert "agent list" not in card_body(_notice("pytest -q"), dunst, "dunst")


def test_a_pointer_on_a_top_panel_outside_the_work_area_counts_the_list_goes_below() -> None:
    area = QRect(0, 27, 1280, 773)  # the screen less xfce4-panel's 27 px
    where = place_unanchored(LIST, area, QPoint(1129, 13), SCREEN)
    assert where == QPoint(1280 - 420, 27)

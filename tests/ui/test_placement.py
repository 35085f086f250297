"""Where the list opens (app/placement.py): next to the tray icon, inside the free area."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize

from volee_desktop.app.placement import popup_position

AREA = QRect(0, 30, 1280, 770)  # a top panel of 30 px
SIZE = QSize(400, 500)


def test_below_a_top_panels_icon_centred_on_it() -> None:
    icon = QRect(600, 40, 22, 22)
    assert popup_position(SIZE, AREA, icon, None) == (icon.center().x() - 200, icon.bottom() + 4)


def test_above_a_bottom_panels_icon() -> None:
    area = QRect(0, 0, 1280, 800)
    icon = QRect(600, 770, 22, 22)
    assert popup_position(SIZE, area, icon, None) == (icon.center().x() - 200, 770 - 500 - 4)


def test_inside_the_area_at_its_edge() -> None:
    icon = QRect(1260, 4, 20, 20)  # the right-most icon: the list does not leave the screen
    narrow = QRect(0, 30, 600, 770)  # too narrow for the list beside the cards' column
    x, y = popup_position(SIZE, narrow, icon, None)
    assert x == narrow.right() - SIZE.width()
    assert y == 30  # pushed down into the area (the panel is not the list's)


def test_next_to_a_top_right_icon_the_list_keeps_clear_of_the_notification_cards() -> None:
    # The trial of issue 26 (Xvfb 1280×800, trayer and dunst at the top right): dunst's
    # cards (drawn from 387 px to 10 px from the edge) hid the list's filter box and its
    # requests.
    icon = QRect(1230, 4, 22, 22)
    dunst = QRect(AREA.right() - 387, AREA.top() + 10, 377, 330)
    x, y = popup_position(SIZE, AREA, icon, None)
    placed = QRect(x, y, SIZE.width(), SIZE.height())
    assert not placed.intersects(dunst), (placed, dunst)
    assert dunst.left() - placed.right() < 50  # as near the icon as that allows
    assert y == AREA.top()  # under the panel
    # Above a bottom panel's icon at the right (Plasma's cards stack there): the same.
    bottom = QRect(0, 0, 1280, 770)
    x, y = popup_position(SIZE, bottom, QRect(1230, 774, 22, 22), None)
    cards = QRect(bottom.right() - 10 - 300, 300, 300, 460)
    assert not QRect(x, y, SIZE.width(), SIZE.height()).intersects(cards)


def test_where_the_person_put_it_wins_and_without_an_icon_by_the_pointer_or_centred() -> None:
    icon = QRect(1000, 4, 22, 22)
    assert popup_position(SIZE, AREA, icon, (100, 200)) == (100, 200)
    centred = popup_position(SIZE, AREA, None, None)
    assert centred == (
        AREA.left() + (AREA.width() - 400) // 2,
        AREA.top() + (AREA.height() - 500) // 2,
    )
    by_pointer = popup_position(SIZE, AREA, None, None, QPoint(700, 700))
    assert by_pointer != centred
    assert by_pointer != (0, 0)


def test_by_the_pointer_on_a_top_right_sni_icon_the_list_keeps_clear_of_the_cards_too() -> None:
    # The trial of issue 28 on xfce4-panel (an SNI host: no icon geometry, the list goes by
    # the pointer on the icon just clicked, 1129,13): the 600 px list opened at 680,47 and
    # xfce4-notifyd's card (917-1263, 179-298) lay over its rows' requests.
    screen = QRect(0, 0, 1280, 800)
    area = QRect(0, 27, 1280, 773)  # the screen less xfce4-panel's 27 px
    size = QSize(600, 720)
    card = QRect(917, 179, 347, 120)
    x, y = popup_position(size, area, None, None, QPoint(1129, 13), screen)
    placed = QRect(x, y, size.width(), size.height())
    assert not placed.intersects(card), (placed, card)
    assert card.left() - placed.right() < 50  # as near the pointer as that allows
    assert y == area.top()  # below the panel
    # Too wide to stand beside the cards' column: by the pointer, inside the area, as before.
    wide = QSize(1000, 500)
    assert popup_position(wide, area, None, None, QPoint(1129, 13), screen) == (279, 27)
    # Away from the column (a pointer at the left, a bottom panel's): by the pointer as before.
    assert popup_position(size, area, None, None, QPoint(200, 13), screen) == (0, 27)

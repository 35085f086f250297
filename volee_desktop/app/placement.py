"""Where the list opens: next to the tray icon, inside the screen's free area.

Below a top panel's icon and above a bottom one's, centred on it, but clear of the column
at the screen's right edge where notification cards appear (dunst, xfce4-notifyd, mako,
notify-osd, Plasma all stack them there, 300 to 400 px wide: the trial of issue 26 saw
dunst's cards hide the filter box and the requests), when the list fits beside it; where
the person put the list last time if they moved it; without an icon to go by (a
StatusNotifierItem tray gives none), by the pointer (clear of the cards' column too: the
trial of issue 28 saw xfce4-notifyd's card over the rows), else centred (``app/wayland.py``).
Always inside the area (a list larger than it keeps its top-left corner in).
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication, QScreen

from .wayland import place_unanchored, pointer_known

GAP = 4  # between the icon and the list
#: The notification cards' column at the screen's right edge: dunst's default 300 px at a
#: 10 px offset (the trial's dunst, 360 wide, drew its cards 387 px from the edge),
#: xfce4-notifyd's, mako's and Plasma's up to about 400.
CARDS = 400
FALLBACK_AREA = QRect(0, 0, 1280, 800)  # no screen at all (offscreen, a headless test)


def screen_of(anchor: QRect | None) -> QScreen | None:
    """The screen the icon is on (the primary one when there is no icon, or none)."""
    screen = (
        QGuiApplication.screenAt(anchor.center())
        if anchor is not None and anchor.isValid()
        else None
    )
    return screen or QGuiApplication.primaryScreen()


def beside_cards(x: int, size: QSize, area: QRect) -> int:
    """``x`` moved left of the cards' column when a list there would reach into it and
    fits beside it, as near where it was as that allows."""
    clear = area.right() - CARDS  # the cards' column begins right of this
    if x + size.width() > clear and size.width() <= clear - area.left():
        return clear - size.width()
    return x


def popup_position(
    size: QSize,
    area: QRect,
    anchor: QRect | None,
    remembered: tuple[int, int] | None,
    pointer: QPoint | None = None,
    screen: QRect | None = None,
) -> tuple[int, int]:
    """The top-left corner of a list of ``size`` in ``area`` (the screen's free part), next
    to ``anchor`` (the tray icon), or at ``remembered`` (where the person put it); with
    neither, by ``pointer`` or centred on ``screen`` (never at 0,0)."""
    if remembered is not None:
        x, y = remembered
    elif anchor is not None and anchor.isValid():
        x = anchor.center().x() - size.width() // 2
        # Below a top panel, above a bottom one.
        y = (
            anchor.bottom() + GAP
            if anchor.center().y() < area.center().y()
            else anchor.top() - size.height() - GAP
        )
        x = beside_cards(x, size, area)
    else:
        where = place_unanchored(size, area, pointer, screen)
        x, y = where.x(), where.y()
        if pointer_known(pointer, screen or area):  # the pointer on the icon just clicked
            x = beside_cards(x, size, area)
    x = max(area.left(), min(x, area.right() - size.width()))
    y = max(area.top(), min(y, area.bottom() - size.height()))
    return x, y

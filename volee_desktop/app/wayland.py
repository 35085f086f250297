"""Where the list opens when the tray cannot say where its icon is, and what Wayland allows.

An XEmbed tray (trayer, X11 panels) gives the icon's geometry: the list opens next to it
(``ListWindow.show_near``). A StatusNotifierItem tray (waybar, KDE, GNOME's AppIndicator
extension) does not: Qt's ``QSystemTrayIcon.geometry()`` is empty there, and the click's
position the host sends (``Activate(x, y)``) is not passed on. Then the list opens next to
the pointer when its position is known (X11: the person just clicked the icon, so that is
where the icon is), else in the middle of the screen; never at 0,0.

On Wayland a client places none of its windows: ``move`` is ignored and the compositor
decides (sway tiles a new window, GNOME and Plasma centre it or place it by their rules), so
volee asks nothing there (docs/decisions.md, D13).
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication

#: How far from the pointer the list's nearest corner is.
GAP = 8


def on_wayland() -> bool:
    """Whether Qt runs on a Wayland compositor (``QT_QPA_PLATFORM=wayland``, a Wayland
    session's default)."""
    return QGuiApplication.platformName().startswith("wayland")


def pointer_known(pointer: QPoint | None, screen: QRect) -> bool:
    """Whether ``pointer`` is a real position: on ``screen`` (the panels included: the
    pointer is on the panel's icon) and not the (0, 0) a platform reports when it does not
    know (Wayland, an offscreen test)."""
    return pointer is not None and not pointer.isNull() and screen.contains(pointer)


def place_unanchored(
    size: QSize, area: QRect, pointer: QPoint | None, screen: QRect | None = None
) -> QPoint:
    """The top-left corner for a window of ``size`` on ``area`` (the screen less its panels)
    with no icon to stand by: next to ``pointer`` (below it near a top panel, above it near
    a bottom one, its centre under the pointer where it fits), else centred; inside
    ``area`` either way."""
    if pointer_known(pointer, screen or area):
        assert pointer is not None
        x = pointer.x() - size.width() // 2
        below = pointer.y() < area.center().y()
        y = pointer.y() + GAP if below else pointer.y() - GAP - size.height()
    else:
        x = area.left() + (area.width() - size.width()) // 2
        y = area.top() + (area.height() - size.height()) // 2
    x = max(area.left(), min(x, area.right() + 1 - size.width()))
    y = max(area.top(), min(y, area.bottom() + 1 - size.height()))
    return QPoint(x, y)


__all__ = ["GAP", "on_wayland", "place_unanchored", "pointer_known"]

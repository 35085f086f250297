"""The agent list as a window: placed next to the tray icon, the tray's popup (it closes
when the focus leaves volee, never for a window volee opened itself), or pinned ("Keep
open") a plain window that stays until its close button; its size and position remembered.

``AgentPanel`` (``panel.py``) is one: it adds the rows, the filter and the actions.  Where
it opens is ``placement.py``'s.
"""

from __future__ import annotations

import logging
import sys
import time

from PySide6.QtCore import QEvent, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QCursor, QMoveEvent, QResizeEvent
from PySide6.QtWidgets import QApplication, QDialog, QWidget

from .list_prefs import ListPrefs
from .placement import FALLBACK_AREA, popup_position, screen_of

log = logging.getLogger(__name__)


def own_window(widget: QWidget) -> bool:
    """Whether ``widget`` is a window volee opened itself (an agent's window, a timeline, a
    review, settings, a message): the list does not close for those."""
    if isinstance(widget, QDialog):
        return True
    # The agent's window loads with the first one opened (issue 27): none before it loads.
    windows = sys.modules.get("volee_desktop.app.agent_window")
    return windows is not None and isinstance(widget, windows.AgentWindow)


class ListWindow(QWidget):
    """A window placed next to the tray that is a popup or, pinned, a plain window."""

    hidden = Signal()
    closed = Signal()  # the person closed the window (not the popup): without a tray, quit

    def __init__(self, prefs: ListPrefs, popup: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.prefs = prefs
        self.popup = popup
        self.hidden_at = 0.0  # when it last hid itself because the person clicked elsewhere
        self._placing = False  # moves volee makes (next to the tray) are not the person's
        self._reflagging = False  # a change of window flags hides and shows: not the person's
        self.setWindowFlags(self._flags())

    def focus_first(self) -> None:
        """Where the focus goes once shown (the list's rows)."""

    def show_near(self, anchor: QRect | None) -> None:
        """Show the panel next to ``anchor`` (the tray icon), inside the screen."""
        screen = screen_of(anchor)
        area = screen.availableGeometry() if screen is not None else FALLBACK_AREA
        # Where the person put it, else next to the icon, else by the pointer (app/placement.py).
        pointer = QCursor.pos(screen) if screen is not None else None
        full = screen.geometry() if screen is not None else None
        x, y = popup_position(self.size(), area, anchor, self.prefs.pos, pointer, full)
        self._placing = True
        try:
            self.move(x, y)
            self.show()
        finally:
            self._placing = False
        self.raise_()
        self.activateWindow()
        self.focus_first()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if hasattr(self, "prefs") and self.isVisible():
            self.prefs.size = (self.width(), self.height())

    def moveEvent(self, event: QMoveEvent) -> None:
        super().moveEvent(event)
        if hasattr(self, "prefs") and self.isVisible() and not self._placing:
            self.prefs.pos = (self.x(), self.y())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if (
            getattr(self, "popup", False)  # changeEvent runs inside QWidget.__init__ too
            and event.type() == QEvent.Type.ActivationChange
            and not self.isActiveWindow()
        ):
            # Like any tray popup: clicking elsewhere closes it (checked once the new
            # active window is known: a dialog of the panel's own keeps it open).
            QTimer.singleShot(0, self._hide_if_left)

    def _hide_if_left(self) -> None:
        active = QApplication.activeWindow()
        if not self.isVisible() or active is self:
            return
        if self.pinned:
            log.info("agent list left for another window: kept open (pinned)")
            return
        if active is not None and (self.isAncestorOf(active) or own_window(active)):
            return  # a window volee opened (an agent's, a timeline, a review): it stays
        if QApplication.activePopupWidget() is not None:
            return  # the row's context menu
        self.hidden_at = time.monotonic()
        log.info("agent list hidden: the focus left volee")
        self.hide()

    @property
    def pinned(self) -> bool:
        return self.prefs.pinned

    def _flags(self) -> Qt.WindowType:
        """A popup next to the tray (no taskbar entry), or a plain window when
        there is no tray or the person pinned it.  Never on top of everything: the windows
        it opens (an agent's, a review) come in front of it."""
        if self.popup and not self.prefs.pinned:
            return Qt.WindowType.Tool
        return Qt.WindowType.Window

    def _reflag(self) -> None:
        """Apply ``_flags`` (Qt hides a window whose flags change: shown again, in place)."""
        if self.windowFlags() == self._flags():
            return
        visible, where = self.isVisible(), self.pos()
        self._reflagging = True
        try:
            self.setWindowFlags(self._flags())
            if visible:
                self.move(where)
                self.show()
        finally:
            self._reflagging = False
        if visible:
            self.raise_()
            self.activateWindow()

    def set_popup(self, popup: bool) -> None:
        """Become the tray's popup (a tray appeared) or a plain window; a popup starts hidden."""
        if popup == self.popup:
            return
        self.popup = popup
        visible = self.isVisible()
        self.setWindowFlags(self._flags())
        if popup and not self.pinned:
            self.hide()
        elif visible:
            self.show()

    def closeEvent(self, event: QCloseEvent) -> None:
        super().closeEvent(event)
        if not self.popup and event.isAccepted():
            self.closed.emit()

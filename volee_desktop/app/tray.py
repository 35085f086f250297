"""The tray icon: the badge and mark of ``summary.summarize``, a tooltip, a click and a menu.

Left click opens the agent list; right click shows the menu (open the list,
pause notifications, settings, quit).  The icon is replaced only when what it
shows changes, and at most once per event-loop turn however many events come.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QRect, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from .icons import IconCache
from .summary import TraySummary


class Tray(QObject):
    """Owns the QSystemTrayIcon and its menu; emits what the person asked for."""

    open_list = Signal()
    settings_requested = Signal()
    quit_requested = Signal()
    pause_toggled = Signal(bool)

    def __init__(self, icons: IconCache, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.icons = icons
        self.icon = QSystemTrayIcon(self)
        self.icon.setObjectName("trayIcon")
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        self.action_open = self._add("Open agent list", self.open_list.emit)
        self.action_pause = QAction("Pause notifications", self.menu)
        self.action_pause.setCheckable(True)
        self.action_pause.toggled.connect(self.pause_toggled.emit)
        self.menu.addAction(self.action_pause)
        self.action_settings = self._add("Settings…", self.settings_requested.emit)
        self.menu.addSeparator()
        self.action_quit = self._add("Quit volee (agents keep running)", self.quit_requested.emit)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self._key: tuple[int, str] | None = None
        self._pending: TraySummary | None = None
        self.summary: TraySummary | None = None
        self._coalesce = QTimer(self)
        self._coalesce.setSingleShot(True)
        self._coalesce.setInterval(0)
        self._coalesce.timeout.connect(self._apply)

    def _add(self, text: str, slot: object) -> QAction:
        action = QAction(text, self.menu)
        action.triggered.connect(slot)
        self.menu.addAction(action)
        return action

    def show(self) -> bool:
        """Show the icon; False when there is no system tray to show it in."""
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return False
        self.icon.show()
        return True

    def hide(self) -> None:
        self.icon.hide()

    def geometry(self) -> QRect | None:
        rect = self.icon.geometry()
        return rect if rect.isValid() and not rect.isEmpty() else None

    def update(self, summary: TraySummary) -> None:
        """Show ``summary`` (applied on the next loop turn: bursts of events repaint once)."""
        self._pending = summary
        if not self._coalesce.isActive():
            self._coalesce.start()

    def apply_now(self) -> None:
        self._coalesce.stop()
        self._apply()

    def _apply(self) -> None:
        summary, self._pending = self._pending, None
        if summary is None:
            return
        self.summary = summary
        if summary.icon_key != self._key:
            self._key = summary.icon_key
            self.icon.setIcon(self.icons.icon(summary.needs, summary.mark))
        if self.icon.toolTip() != summary.tooltip:
            self.icon.setToolTip(summary.tooltip)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (
            QSystemTrayIcon.ActivationReason.Trigger,
            QSystemTrayIcon.ActivationReason.DoubleClick,
        ):
            self.open_list.emit()

"""Waiting for a tray that is not there yet: a panel started after volee, or GNOME's extension.

At login the autostart entry often runs before the panel; GNOME shows no tray icon until its
AppIndicator extension is on. So when the app starts without a tray it shows the agent list as a
window and keeps watching:

- Qt's own answer, ``QSystemTrayIcon.isSystemTrayAvailable()``, asked every ``POLL_MS`` while
  the window stands in for the icon (on X11 one selection-owner lookup: an XEmbed tray such as
  trayer, xfce4-panel or a KDE/LXQt panel); never once the icon is up, so nothing wakes at rest;
- the StatusNotifier watcher appearing on the session bus (KDE, GNOME's AppIndicator
  extension, waybar), which asks Qt again at once instead of at the next poll.

``appeared`` fires once, when Qt says a tray is there; the controller then moves into it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

log = logging.getLogger(__name__)

POLL_MS = 2000
WATCHER_SERVICE = "org.kde.StatusNotifierWatcher"


def _qt_has_tray() -> bool:
    from PySide6.QtWidgets import QSystemTrayIcon

    return bool(QSystemTrayIcon.isSystemTrayAvailable())


class TrayWatcher(QObject):
    """Tells once when a system tray becomes available."""

    appeared = Signal()
    #: A StatusNotifierWatcher appeared but Qt, which picks its D-Bus tray once per process,
    #: still sees none: volee shows its icon from its next start.
    next_start = Signal()

    def __init__(
        self,
        available: Callable[[], bool] = _qt_has_tray,
        interval_ms: int = POLL_MS,
        parent: QObject | None = None,
        watch_bus: bool = True,
        bus: Any = None,
    ) -> None:
        super().__init__(parent)
        self.available = available
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check)
        self.checks = 0
        self._bus_watcher: QObject | None = None
        self._watch_bus = watch_bus
        self._bus = bus  # a QDBusConnection; None: the session bus

    @property
    def watching(self) -> bool:
        return self.timer.isActive()

    def start(self) -> None:
        if self.watching:
            return
        log.info(
            "no system tray yet: watching for one (every %g s, and for %s on D-Bus)",
            self.timer.interval() / 1000,
            WATCHER_SERVICE,
        )
        self.timer.start()
        if self._watch_bus and self._bus_watcher is None:
            self._bus_watcher = self._watch_session_bus()

    def stop(self) -> None:
        self.timer.stop()
        if self._bus_watcher is not None:
            self._bus_watcher.deleteLater()
            self._bus_watcher = None

    def check(self) -> bool:
        """Ask once; True (and ``appeared``) when a tray is there now."""
        self.checks += 1
        if not self.available():
            return False
        log.info("a system tray appeared")
        self.stop()
        self.appeared.emit()
        return True

    def _watch_session_bus(self) -> QObject | None:
        try:
            from PySide6.QtDBus import QDBusConnection, QDBusServiceWatcher
        except ImportError:
            return None
        bus = self._bus if self._bus is not None else QDBusConnection.sessionBus()
        if not bus.isConnected():
            return None
        watcher = QDBusServiceWatcher(
            WATCHER_SERVICE,
            bus,
            QDBusServiceWatcher.WatchModeFlag.WatchForRegistration,
            self,
        )
        watcher.serviceRegistered.connect(self._watcher_registered)
        return watcher

    def _watcher_registered(self, name: str) -> None:
        log.info("%s appeared on the session bus", name)
        if not self.check():
            # Qt picks its D-Bus tray once per process: on a session with no X11 tray the
            # icon shows from the next start of volee (docs/packaging.md, "GNOME").
            log.info("Qt still sees no tray; the icon shows from volee's next start")
            self.next_start.emit()

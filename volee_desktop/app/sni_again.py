"""Registering the tray's StatusNotifierItem again with a watcher that replaced another.

Qt registers its item with ``org.kde.StatusNotifierWatcher`` when the icon is shown and
again when the name is *registered* (``QDBusServiceWatcher.serviceRegistered``: a panel
restarted after a gap). A second bar that takes the name over from the first (waybar
asks for it with replacement) moves it from one owner to the other with no gap: Qt hears
nothing, and the new watcher's host never shows volee (seen: two waybars, the icon in the
older one only). Here an owner change from one owner to another registers the item again,
from Qt's own connection (named ``org.kde.StatusNotifierItem-<pid>-<n>``), as Qt does.
"""

from __future__ import annotations

import logging
import os

from PySide6.QtCore import QObject

log = logging.getLogger(__name__)

WATCHER = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
#: Qt numbers its tray icons' connections from 1; volee makes one, a few cover a remade one.
INSTANCES = 4


def register_again() -> int:
    """Register every tray item of this process with the watcher now; how many."""
    from PySide6.QtDBus import QDBus, QDBusConnection, QDBusMessage

    done = 0
    for n in range(1, INSTANCES + 1):
        conn = QDBusConnection(f"org.kde.StatusNotifierItem-{os.getpid()}-{n}")
        if not conn.isConnected():
            continue
        msg = QDBusMessage.createMethodCall(
            WATCHER, WATCHER_PATH, WATCHER, "RegisterStatusNotifierItem"
        )
        msg.setArguments([conn.baseService()])
        conn.call(msg, QDBus.CallMode.NoBlock)
        done += 1
    return done


class WatcherReplaced(QObject):
    """Registers the item again when the watcher's name passes from one owner to another."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._watcher: QObject | None = None
        try:
            from PySide6.QtDBus import QDBusConnection, QDBusServiceWatcher
        except ImportError:
            return
        bus = QDBusConnection.sessionBus()
        if not bus.isConnected():
            return
        watcher = QDBusServiceWatcher(
            WATCHER, bus, QDBusServiceWatcher.WatchModeFlag.WatchForOwnerChange, self
        )
        watcher.serviceOwnerChanged.connect(self._changed)
        self._watcher = watcher

    def _changed(self, name: str, old: str, new: str) -> None:
        if old and new:  # a gap (old or new empty) is Qt's own case
            n = register_again()
            log.info(
                "%s passed from %s to %s: the tray item registered again (%d)", name, old, new, n
            )

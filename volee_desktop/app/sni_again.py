"""Registering the tray's StatusNotifierItem again with a watcher that replaced another.

Qt registers its item with ``org.kde.StatusNotifierWatcher`` when the icon is shown and
again when the name is *registered* (``QDBusServiceWatcher.serviceRegistered``: a panel
restarted after a gap). A second bar that takes the name over from the first (waybar
asks for it with replacement) moves it from one owner to the other with no gap: Qt hears
nothing, and the new watcher's host never shows volee (seen: two waybars, the icon in the
older one only). Here an owner change from one owner to another registers the item again,
from Qt's own connection (named ``org.kde.StatusNotifierItem-<pid>-<n>``), as Qt does.

Not at once: the older bar's host follows the name too, and asks the new watcher for its
items and then for its signals. A registration that lands between the two is lost for that
host (seen under load: the icon in the new bar only), and the watcher ignores the same item
registered twice. So volee waits until the hosts have settled: ``SETTLE`` seconds with no
``StatusNotifierHostRegistered`` from the new watcher (at most ``SETTLE_MAX`` in all).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import SLOT, QObject, QTimer, Slot

log = logging.getLogger(__name__)

WATCHER = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
#: Qt numbers its tray icons' connections from 1; volee makes one, a few cover a remade one.
INSTANCES = 4
#: Seconds with no host registering with the new watcher before volee's item registers.
SETTLE = 1.0
#: Seconds from the owner change to the registration, however many hosts register.
SETTLE_MAX = 5.0


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
    """Registers the item again once the watcher's name has passed from one owner to another
    and the hosts have registered with the new one."""

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        register: Callable[[], int] = register_again,
        settle: float = SETTLE,
        settle_max: float = SETTLE_MAX,
        clock: Callable[[], float] = time.monotonic,
        watch: bool = True,
    ) -> None:
        super().__init__(parent)
        self.register = register
        self.settle = settle
        self.settle_max = settle_max
        self.clock = clock
        self.registrations = 0
        self._watcher: QObject | None = None
        self._since = 0.0  # when the watcher changed owner
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._settled)
        if watch:
            self._watch()

    def _watch(self) -> None:
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
        watcher.serviceOwnerChanged.connect(self.owner_changed)
        self._watcher = watcher
        # Every owner's signal (the name's owner changes: no sender to follow). PySide6 takes
        # the slot as SLOT()'s string; its stubs say bytes.
        slot: Any = SLOT("host_registered()")
        listening = bus.connect(
            "",
            WATCHER_PATH,
            WATCHER,
            "StatusNotifierHostRegistered",
            self,
            slot,
        )
        if not listening:
            log.warning("cannot hear hosts register: the item registers %.0f s after", self.settle)

    @property
    def pending(self) -> bool:
        """Whether a registration waits for the hosts to settle."""
        return self._timer.isActive()

    @Slot(str, str, str)
    def owner_changed(self, name: str, old: str, new: str) -> None:
        if old and new:  # a gap (old or new empty) is Qt's own case
            log.info(
                "%s passed from %s to %s: the tray item registers when hosts settle", name, old, new
            )
            self._since = self.clock()
            self._wait(self.settle)

    @Slot()
    def host_registered(self) -> None:
        """A host registered with a watcher: while settling, wait for the others too."""
        if self._timer.isActive():
            self._wait(min(self.settle, self.settle_max - (self.clock() - self._since)))
            log.info("a tray host registered: the item waits %.1f s more", self.due_in())

    def due_in(self) -> float:
        """Seconds until the pending registration (0 when none is pending)."""
        return max(0, self._timer.remainingTime()) / 1000 if self._timer.isActive() else 0.0

    def _wait(self, seconds: float) -> None:
        self._timer.start(max(0, round(1000 * seconds)))

    def _settled(self) -> None:
        n = self.register()
        self.registrations += 1
        log.info("the tray item registered again (%d) with the new watcher", n)

"""Showing notifications: desktop-notifier (D-Bus on Linux) first, the tray's balloon otherwise.

``NotificationCenter`` is the ``LiveObserver`` that feeds ``notify_policy``
(the rules) and shows what its ``Throttle`` releases, on a single-shot timer
set to the throttle's next due time (no periodic wake-ups).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QSystemTrayIcon

from volee_desktop.core.registry import Registry

from .live import Change
from .notify_policy import Notice, NotifySettings, Throttle, candidates
from .tasks import Tasks

log = logging.getLogger(__name__)

ActionCallback = Callable[[Notice], None]


class NotificationSink(Protocol):
    """Something that can show a notification; ``activate`` runs when its action is chosen."""

    async def show(self, notice: Notice, activate: Callable[[], None]) -> bool:
        """Show it; False when it could not be shown (the next sink is tried)."""
        ...


class DesktopSink:
    """desktop-notifier: D-Bus org.freedesktop.Notifications on Linux, the OS centre elsewhere."""

    def __init__(self, app_name: str = "volee", icon: Path | None = None) -> None:
        from desktop_notifier import DesktopNotifier, Icon

        self._notifier = DesktopNotifier(
            app_name=app_name, app_icon=Icon(path=icon) if icon is not None else None
        )

    async def show(self, notice: Notice, activate: Callable[[], None]) -> bool:
        from desktop_notifier import Button

        dispatched: list[bool] = []
        await self._notifier.send(
            title=notice.title,
            message=notice.body,
            buttons=[Button(title=notice.action.value, on_pressed=activate)],
            on_clicked=activate,
            on_dispatched=lambda: dispatched.append(True),
        )
        # send() logs and swallows failures; on_dispatched runs only when it worked.
        return bool(dispatched)


class BalloonSink:
    """The tray icon's own message balloon (no buttons: a click runs the action)."""

    def __init__(self, tray: QSystemTrayIcon) -> None:
        self.tray = tray
        self._activate: Callable[[], None] | None = None
        tray.messageClicked.connect(self._clicked)

    async def show(self, notice: Notice, activate: Callable[[], None]) -> bool:
        if not (self.tray.isVisible() and QSystemTrayIcon.supportsMessages()):
            return False
        self._activate = activate
        self.tray.showMessage(notice.title, notice.body, QSystemTrayIcon.MessageIcon.Information)
        return True

    def _clicked(self) -> None:
        if self._activate is not None:
            self._activate()


class NotificationCenter(QObject):
    """Turns live changes into notifications, through the policy and the throttle."""

    shown = Signal(object)  # a Notice that was shown (tests, logs)

    def __init__(
        self,
        registry: Callable[[], Registry],
        sinks: list[NotificationSink],
        on_action: ActionCallback,
        focused: Callable[[], frozenset[str]] = frozenset,
        clock: Callable[[], float] = time.time,
        tasks: Tasks | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = NotifySettings()
        self.throttle = Throttle()
        self.sinks = sinks
        self._registry = registry
        self._on_action = on_action
        self._focused = focused
        self._clock = clock
        self._tasks = tasks or Tasks()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush)

    def stop(self) -> None:
        """Show nothing more (the app is closing)."""
        self._timer.stop()
        self.throttle.clear()

    def set_settings(self, settings: NotifySettings) -> None:
        self.settings = settings
        if settings.paused:
            self.throttle.clear()
            self._timer.stop()

    # --- LiveObserver ---------------------------------------------------------------------------

    def on_reset(self, registry: Registry) -> None:
        pass  # a snapshot is the state of things, not news

    def on_change(self, change: Change) -> None:
        if not change.agents and change.mission is None:
            return
        now = self._clock()
        found = candidates(change, self.settings, self._focused(), now)
        if found:
            self.throttle.offer(found, now)
            self._schedule()

    # --- releasing ------

    def _schedule(self) -> None:
        due = self.throttle.next_due()
        if due is None:
            return
        delay = max(0, round((due - self._clock()) * 1000))
        if not self._timer.isActive() or self._timer.remainingTime() > delay:
            self._timer.start(delay)

    def flush(self) -> None:
        for notice in self.throttle.flush(self._clock(), self._registry(), self._focused()):
            self._tasks.spawn(self._show(notice), f"notify {notice.title!r}")
        self._schedule()

    async def _show(self, notice: Notice) -> None:
        def activate() -> None:
            self._on_action(notice)

        for sink in self.sinks:
            try:
                if await sink.show(notice, activate):
                    log.info(
                        "notification: %s — %s [%s]", notice.title, notice.body, notice.subject
                    )
                    self.shown.emit(notice)
                    return
            except Exception:
                log.exception("notification sink %s failed", type(sink).__name__)
        log.warning("no way to show the notification %r", notice.title)


def default_sinks(tray: QSystemTrayIcon | None, icon: Path | None) -> list[NotificationSink]:
    """desktop-notifier, then the tray balloon."""
    sinks: list[NotificationSink] = []
    try:
        sinks.append(DesktopSink(icon=icon))
    except Exception as exc:  # no backend on this platform
        log.warning("desktop notifications are not available (%s); using the tray", exc)
    if tray is not None:
        sinks.append(BalloonSink(tray))
    return sinks

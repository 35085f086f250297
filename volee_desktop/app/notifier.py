"""Showing notifications: desktop-notifier (D-Bus on Linux) first, the tray's balloon otherwise.

``NotificationCenter`` is the ``LiveObserver`` that feeds ``notify_policy``
(the rules) and shows what its ``Throttle`` releases, on a single-shot timer
set to the throttle's next due time (no periodic wake-ups).  A notification
that no longer holds (the agent was answered, stopped or forgotten; the mission
approved) is withdrawn from the screen by sinks that can (``withdraw``).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QSystemTrayIcon

from volee_desktop.core.registry import Registry

from .live import Change
from .mission_names import named_mission
from .notify_policy import Notice, NotifySettings, Throttle, candidates, still_holds
from .notifybus import BusSink, Vouch
from .tasks import Tasks

log = logging.getLogger(__name__)

#: What the person chose on a notification: ``open`` (its default action: Open, Review), an
#: answer (``allow``, ``deny``, ``option:N``) or ``reply`` with the text typed.
Activate = Callable[..., None]  # (choice: str = "open", text: str | None = None)
ActionCallback = Callable[[Notice, str, "str | None"], None]
MAX_BUTTONS = 3  # GNOME shows three; more are cut


class NotificationSink(Protocol):
    """Something that can show a notification; ``activate(choice, text)`` runs when the
    person chooses one of its actions (``activate()``: its default one)."""

    async def show(self, notice: Notice, activate: Activate) -> bool:
        """Show it; False when it could not be shown (the next sink is tried)."""
        ...


class WithdrawingSink(NotificationSink, Protocol):
    """A sink that can also take a notification it showed off the screen."""

    async def withdraw(self, notice: Notice) -> None:
        """Remove ``notice`` if it is still shown (nothing when it is not)."""
        ...


class DesktopSink:
    """desktop-notifier: D-Bus org.freedesktop.Notifications on Linux, the OS centre elsewhere."""

    def __init__(self, app_name: str = "volee", icon: Path | None = None) -> None:
        from desktop_notifier import DesktopNotifier, Icon

        self._notifier = DesktopNotifier(
            app_name=app_name, app_icon=Icon(path=icon) if icon is not None else None
        )
        self._ids: dict[Notice, str] = {}  # what is on screen, by its notification id
        self._platform_ids: dict[Notice, int] = {}  # and by the server's id (D-Bus)
        self._tasks = Tasks()

    async def show(self, notice: Notice, activate: Activate) -> bool:
        from desktop_notifier import Button, ReplyField

        dispatched: list[bool] = []

        def gone() -> None:
            self._ids.pop(notice, None)
            self._platform_ids.pop(notice, None)

        def pressed(choice: str = "open", text: str | None = None) -> None:
            # Some servers (dunst's context menu) leave the card up after an action: the
            # person answered it, so close it by the server's own id.
            platform_id = self._platform_ids.get(notice)
            gone()
            if platform_id is not None:
                self._tasks.spawn(self._close(platform_id), "close an answered notification")
            activate(choice, text)

        def press(choice: str) -> Callable[[], None]:
            return lambda: pressed(choice)

        buttons = [
            Button(title=label, on_pressed=press(choice))
            for choice, label in notice.choices[:MAX_BUTTONS]
        ]
        if len(buttons) < MAX_BUTTONS:
            buttons.append(Button(title=notice.action.value, on_pressed=pressed))
        reply = (
            ReplyField(title="Reply", button_title="Send", on_replied=lambda t: pressed("reply", t))
            if notice.reply
            else None
        )
        identifier = await self._notifier.send(
            title=notice.title,
            message=notice.body,
            buttons=buttons,
            reply_field=reply,
            on_clicked=pressed,
            on_dismissed=gone,
            on_dispatched=lambda: dispatched.append(True),
        )
        # send() logs and swallows failures; on_dispatched runs only when it worked.
        if dispatched:
            self._ids[notice] = identifier
            platform_id = self._platform_id(identifier)
            if platform_id is not None:
                self._platform_ids[notice] = platform_id
        return bool(dispatched)

    def _platform_id(self, identifier: str) -> int | None:
        """The server's own id of a notification (desktop-notifier's D-Bus backend only)."""
        backend = getattr(self._notifier, "_backend", None)
        ids = getattr(backend, "_platform_to_interface_notification_identifier", None)
        inverse = getattr(ids, "inverse", None)
        try:
            value = inverse.get(identifier) if inverse is not None else None
        except Exception:
            return None
        return value if isinstance(value, int) else None

    async def _close(self, platform_id: int) -> None:
        backend = getattr(self._notifier, "_backend", None)
        interface = getattr(backend, "interface", None)
        close = getattr(interface, "call_close_notification", None)
        if close is None:
            return
        try:
            await close(platform_id)
        except Exception as exc:  # closed already: nothing to do
            log.debug("closing notification %s: %s", platform_id, exc)

    async def withdraw(self, notice: Notice) -> None:
        identifier = self._ids.pop(notice, None)
        if identifier is not None:
            self._platform_ids.pop(notice, None)
            try:
                await self._notifier.clear(identifier)
            except KeyError:
                pass  # the server closed it meanwhile (desktop-notifier forgot its id)


class BalloonSink:
    """The tray icon's own message balloon (no buttons: a click runs the action).

    ``blocked`` says when not to use it: a StatusNotifierItem tray's balloon is a Notify
    call of Qt's own to whoever owns the notification server's name, which may be refused.
    """

    def __init__(self, tray: QSystemTrayIcon, blocked: Callable[[], bool] | None = None) -> None:
        self.tray = tray
        self.blocked = blocked or (lambda: False)
        self._activate: Activate | None = None
        tray.messageClicked.connect(self._clicked)

    async def show(self, notice: Notice, activate: Activate) -> bool:
        if not (self.tray.isVisible() and QSystemTrayIcon.supportsMessages()) or self.blocked():
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

    _sinks: list[NotificationSink] | Callable[[], list[NotificationSink]]

    @property
    def sinks(self) -> list[NotificationSink]:
        """Where a notification goes, in order (the first that shows it wins)."""
        if callable(self._sinks):
            self._sinks = self._sinks()
        sinks: list[NotificationSink] = self._sinks
        return sinks

    def __init__(
        self,
        registry: Callable[[], Registry],
        sinks: list[NotificationSink] | Callable[[], list[NotificationSink]],
        on_action: ActionCallback,
        focused: Callable[[], frozenset[str]] = frozenset,
        clock: Callable[[], float] = time.time,
        tasks: Tasks | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = NotifySettings()
        self.throttle = Throttle()
        # A callable: the sinks are made with the first notification (issue 27: what backend
        # this desktop has is asked after the first frame, not before it).
        self._sinks = sinks
        self._registry = registry
        self._on_action = on_action
        self._focused = focused
        self._clock = clock
        self._tasks = tasks or Tasks()
        # Shown notifications about one agent or mission, by subject, with the sink that
        # showed them: withdrawn once they no longer hold.
        self._on_screen: dict[str, tuple[Notice, NotificationSink]] = {}
        #: The other machine an agent is on ("devbox"; "" for this one): titles name it.
        self.machine_label: Callable[[str], str] = lambda _agent_id: ""
        #: Whether an agent's machine is unreachable: its notifications are withdrawn.
        self.unreachable: Callable[[str], bool] = lambda _agent_id: False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush)

    def stop(self) -> None:
        """Show nothing more (the app is closing)."""
        self._timer.stop()
        self.throttle.clear()
        self._on_screen.clear()

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
        if self._on_screen:
            self._withdraw_stale()
        now = self._clock()
        found = candidates(change, self.settings, self._focused(), now, self._registry())
        if found:
            self.throttle.offer(found, now)
            self._schedule()

    def _withdraw_stale(self) -> None:
        registry = self._registry()
        for subject, (notice, _sink) in list(self._on_screen.items()):
            # Not still_holds: a notification in front of the person stays until it is false.
            unreachable = notice.agent is not None and self.unreachable(notice.agent)
            if unreachable or not still_holds(notice, registry, frozenset()):
                self._take_down(subject)

    def withdraw(self, subject: str) -> None:
        """Take the notifications about ``subject`` (an agent or mission id) off the screen:
        the person opened it, or acted on it, from anywhere."""
        for key, (notice, _sink) in list(self._on_screen.items()):
            if key == subject or (notice.kind is None and subject in notice.subjects):
                self._take_down(key)

    def _take_down(self, key: str) -> None:
        notice, sink = self._on_screen.pop(key)
        withdraw = getattr(sink, "withdraw", None)
        if withdraw is not None:
            self._tasks.spawn(withdraw(notice), f"withdraw {notice.title!r}")

    def on_screen(self) -> list[Notice]:
        """The notifications shown and not withdrawn (tests, logs)."""
        return [notice for notice, _sink in self._on_screen.values()]

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

    def show_now(self, notice: Notice) -> None:
        """Show ``notice`` at once, past the policy (an action of the person's that failed)."""
        self._tasks.spawn(self._show(notice), f"notify {notice.title!r}")

    async def _show(self, notice: Notice) -> None:
        notice = named_mission(notice, self._registry())  # a worker's names its mission
        subject = notice.agent or notice.mission
        if subject is not None and (where := self.machine_label(subject)):
            notice = replace(notice, title=f"{where}: {notice.title}")  # another machine's
        key = notice.subject if notice.kind is not None else f"summary:{id(notice)}"

        def activate(choice: str = "open", text: str | None = None) -> None:
            # Chosen: it has done its job (and its answer must never go in twice).
            if key in self._on_screen:
                self._take_down(key)
            self._on_action(notice, choice, text)

        previous = self._on_screen.get(key)
        for sink in self.sinks:
            try:
                if await sink.show(notice, activate):
                    log.info(
                        "notification: %s — %s [%s]",
                        notice.title,
                        notice.body.replace("\n", " / "),
                        notice.subject or ",".join(notice.subjects),
                    )
                    if previous is not None:
                        self._take_down(key)  # one per agent: the newer replaces it
                    self._on_screen[key] = (notice, sink)
                    self.shown.emit(notice)
                    return
            except Exception:
                log.exception("notification sink %s failed", type(sink).__name__)
        log.warning("no way to show the notification %r", notice.title)


def default_sinks(
    tray: QSystemTrayIcon | None,
    icon: Path | None,
    problem: Callable[[], str | None] | None = None,
    vouch: Vouch | None = None,
    on_refused: Callable[[str | None], None] | None = None,
    exported: bool = False,
) -> list[NotificationSink]:
    """The session bus with every peer identified (Linux, given ``vouch``: notifybus.py),
    else desktop-notifier; then the tray balloon.  The balloon alone when there is no real
    backend here (macOS outside a bundle drops everything while saying it sent it).
    ``exported``: the tray is a StatusNotifierItem (its balloon goes over D-Bus too)."""
    from volee_desktop import notifycheck

    sinks: list[NotificationSink] = []
    bus: BusSink | None = None
    why = (problem or notifycheck.problem)()
    if why is not None:
        log.warning("desktop notifications cannot be shown: %s", why)
    elif sys.platform.startswith("linux") and vouch is not None:
        bus = BusSink(vouch, on_refused or (lambda _why: None), icon=icon)
        sinks.append(bus)
    else:
        try:
            sinks.append(DesktopSink(icon=icon))
        except Exception as exc:  # no backend on this platform
            log.warning("desktop notifications are not available (%s); using the tray", exc)
    if tray is not None:
        refused = bus
        blocked = (lambda: refused.refusing is not None) if refused and exported else None
        sinks.append(BalloonSink(tray, blocked))
    return sinks

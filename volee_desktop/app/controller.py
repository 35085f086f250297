"""The tray app's composition: live registry, list model, tray, panel, notifications, actions.

``AppController`` wires the widgets to a ``DaemonLink``; every person's action
becomes one daemon call, so the widgets stay free of rules and of IPC: the actions
on an agent (open, reply, stop, resume, forget, timeline, answer) in
``actions.AgentActions``, the missions' review, the settings and the notifications
here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QSystemTrayIcon, QWidget

from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .actions import AgentActions
from .agent_model import AgentListModel
from .approval import ApprovalDialog
from .attention import (
    MENU_AGENTS,
    AgentLine,
    agent_line,
    awaiting_missions,
)
from .errors import LinkError
from .focus import Focused, bring_forward
from .icons import IconCache, Svgs
from .link import DaemonLink
from .live import Change, Connection, LiveRegistry
from .looking import Looking
from .notifier import NotificationCenter, NotificationSink, default_sinks
from .notify_policy import Kind, Notice, NotifySettings
from .panel import AgentPanel
from .summary import summarize
from .tasks import Tasks
from .tray import Tray
from .traywatch import TrayWatcher

if TYPE_CHECKING:
    from volee_desktop.loginitem.base import LoginItem

log = logging.getLogger(__name__)


TerminalOpener = Callable[[str], "list[str] | None"]
Confirm = Callable[[str, str], bool]
ShowError = Callable[[str, str], None]


def _default_terminal(agent_id: str) -> list[str] | None:
    from .terminal import open_in_terminal

    return open_in_terminal(agent_id)


def _default_login_item() -> LoginItem:
    from volee_desktop.loginitem import for_this_platform

    return for_this_platform()


def _default_list_prefs() -> Path | None:
    from volee_desktop import paths

    try:
        return paths.state_dir() / "list.json"
    except Exception as exc:  # the list works without its remembered settings
        log.warning("the list's settings will not be kept: %s", exc)
        return None


@dataclass
class AppOptions:
    """The seams of the app (tests replace them; the defaults are the real things)."""

    config_path: Path
    terminal: TerminalOpener = _default_terminal
    login_item: Callable[[], LoginItem] | None = _default_login_item
    sinks: list[NotificationSink] | None = None  # None: desktop-notifier, then the balloon
    confirm: Confirm | None = None
    show_error: ShowError | None = None
    clock: Callable[[], float] = time.time
    use_tray: bool | None = None  # None: when the system has a tray (and watch for one)
    tray_watcher: Callable[[QObject], TrayWatcher] | None = None  # None: the real one
    screen_lines: int = 200
    focus: Callable[[int | None], Focused] = bring_forward  # Open on an agent in its own terminal
    list_prefs: Path | None = None  # the list's size, position and modes (None: state/list.json)


class AppController(QObject):
    """Everything the person sees, fed by one ``DaemonLink``."""

    quit_requested = Signal()
    opened = Signal(str, str)  # (agent id, how: terminal | output | reply)
    called = Signal(str)  # a daemon call finished (method); tests wait on it

    def __init__(self, options: AppOptions, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.options = options
        self.link: DaemonLink | None = None
        self.tasks = Tasks(self._task_failed)
        self.live = LiveRegistry()
        self.model = AgentListModel(self)
        self.svgs = Svgs()
        self.icons = IconCache(self.svgs)
        self.tray = Tray(self.icons, self, clock=options.clock)
        use_tray = options.use_tray
        self.tray_watcher: TrayWatcher | None = None
        if use_tray is None:
            use_tray = QSystemTrayIcon.isSystemTrayAvailable()
            if not use_tray:
                make = options.tray_watcher or (lambda parent: TrayWatcher(parent=parent))
                self.tray_watcher = make(self)
                self.tray_watcher.appeared.connect(self._tray_appeared)
                self.tray_watcher.next_start.connect(self._tray_at_next_start)
        self.has_tray = use_tray
        prefs = options.list_prefs
        if prefs is None:
            prefs = _default_list_prefs()
        self.panel = AgentPanel(self.model, popup=use_tray, prefs_path=prefs)
        self.panel.setWindowIcon(self.icons.app_icon())
        # The daemon's discovery lists often for this app only while someone looks at it.
        self.looking = Looking(self)
        self.looking.watch(self.panel)
        self.looking.changed.connect(self._looking_changed)
        self.actions = AgentActions(
            registry=lambda: self.live.registry,
            link=self._link,
            call=self._call,
            tasks=self.tasks,
            looking=self.looking,
            icon=self.icons.app_icon,
            terminal=self._open_terminal,
            screen_lines=options.screen_lines,
            confirm=self.confirm,
            show_error=self.show_error,
            keep=self._keep,
            withdraw=lambda agent_id: self.notifications.withdraw(agent_id),
            opened=self.opened.emit,
            called=self.called.emit,
            before_window=self._before_window,
            focus=options.focus,
        )
        self.windows = self.actions.windows
        self.panel.closed.connect(self._list_window_closed)
        self.approvals: dict[str, ApprovalDialog] = {}
        self.dialogs: list[QWidget] = []
        sinks = options.sinks
        if sinks is None:
            sinks = default_sinks(self.tray.icon, self.svgs.app_icon_path)
        self.notifications = NotificationCenter(
            registry=lambda: self.live.registry,
            sinks=sinks,
            on_action=self.notification_action,
            focused=self.focused_agents,
            clock=options.clock,
            tasks=self.tasks,
            parent=self,
        )
        self.load_notify_settings()

        self.live.observe(self.model)
        self.live.observe(self.notifications)
        self.live.observe(self)
        self.live.observe_connection(self._connection_changed)
        self.live.on_gap = self._resync

        self.panel.action.connect(self.actions.run)
        self.panel.answer.connect(self._answer_shown)
        self.tray.answer_requested.connect(self._answer_shown)
        self.panel.review.connect(self.review_from_list)
        self.tray.review_requested.connect(self.review)
        self.tray.agent_action.connect(self.actions.run)
        self.tray.open_list.connect(self.toggle_list)
        self.tray.quit_requested.connect(self.quit_requested.emit)
        self.tray.settings_requested.connect(self.open_settings)
        self.tray.pause_toggled.connect(self.pause_notifications)
        self._refresh_summary()

    # --- starting ------

    def show(self) -> None:
        """Show the tray icon (or, without a tray, the list as a window)."""
        self.tray.apply_now()
        if self.has_tray:
            self.tray.show()
        else:
            log.info("no system tray here: showing the agent list as a window")
            self.panel.show()
            # The list, not the filter box: a blinking cursor wakes the app twice a second.
            self.panel.view.setFocus()
            if self.tray_watcher is not None:
                self.tray_watcher.start()

    def _tray_appeared(self) -> None:
        """A panel with a tray came up after volee: move from the window into the icon."""
        self.has_tray = True
        self.panel.set_popup(True)
        self.tray.apply_now()
        self.tray.show()
        log.info("moved into the system tray: the agent list opens from the icon")

    def _tray_at_next_start(self) -> None:
        self.panel.show_status(
            "A system tray appeared (GNOME's AppIndicator extension, a panel): quit and start "
            "volee again to move into it; this window stays meanwhile."
        )

    def _list_window_closed(self) -> None:
        """Closing the window that stands in for the icon quits: no process left unseen."""
        if self.has_tray:
            return
        log.info("the agent list window was closed: quitting (agents keep running)")
        if self.tray_watcher is not None:
            self.tray_watcher.stop()
        self.quit_requested.emit()

    async def attach(self, link: DaemonLink) -> None:
        """Use ``link``: subscribe to the live feed (snapshot, then events)."""
        self.link = link
        await link.set_interactive(self.looking.on)
        await link.subscribe(self.live, None)

    def _looking_changed(self, on: bool) -> None:
        if self.link is None:
            return
        told = self.link.set_interactive(on)
        try:
            self.tasks.spawn(told, "tell the daemon who looks")
        except RuntimeError:  # the loop is closed: the app is going away, nobody to tell
            told.close()

    def _resync(self) -> None:
        if self.link is not None:
            self.tasks.spawn(self.link.subscribe(self.live, None), "resync with the daemon")

    # --- LiveObserver (the tray and the open windows) -------------------------------------------

    def on_reset(self, registry: Registry) -> None:
        self._refresh_summary()
        for agent_id, window in list(self.windows.items()):
            agent = registry.agents.get(agent_id)
            if agent is not None:
                window.set_agent(agent)
        for mission_id, dialog in self.approvals.items():
            mission = registry.missions.get(mission_id)
            if mission is not None:
                dialog.set_mission(mission, registry)

    def on_change(self, change: Change) -> None:
        if change.agents or change.mission is not None:
            self._refresh_summary()
            if log.isEnabledFor(logging.DEBUG):
                for before, after in change.agents:
                    old = before.state.value if before is not None else "new"
                    new = after.state.value if after is not None else "gone"
                    agent = after or before
                    if old != new and agent is not None:
                        log.debug("agent %s: %s -> %s", agent.name, old, new)
        for _before, after in change.agents:
            if after is not None and after.id in self.windows:
                window = self.windows[after.id]
                window.set_agent(after)
                if window.isVisible() and not window.refresh_timer.isActive():
                    # It moved (a resumed agent runs again): follow its screen, and now.
                    window.refresh_timer.start()
                    self.actions.refresh_output(after.id)
        if change.mission is not None and change.mission[1] is not None:
            dialog = self.approvals.get(change.mission[1].id)
            if dialog is not None:
                dialog.set_mission(change.mission[1], self.live.registry)

    def _connection_changed(self, connection: Connection) -> None:
        self._refresh_summary()
        if connection.notices:
            notice = connection.notices[-1]
            text = notice.get("message") or notice.get("text") or ""
            problems = notice.get("problems")
            if not text and isinstance(problems, list):
                text = "; ".join(str(p) for p in problems)
            self.panel.show_status(f"volee: {text or notice.get('kind', 'notice')}")

    def _refresh_summary(self) -> None:
        conn = self.live.connection
        missions = awaiting_missions(self.live.registry)
        summary = summarize(
            self.live.counts,
            conn.connected,
            conn.detail,
            self.notifications.settings.paused,
            missions=len(missions),
        )
        self.tray.update(summary)
        self.panel.set_summary(summary.tooltip)
        self.panel.set_missions(missions, self.options.clock())
        self.tray.set_attention(missions, self.needing_agents())

    def needing_agents(self, limit: int = MENU_AGENTS) -> list[AgentLine]:
        """The agents that need you, most urgent first (the list's own order)."""
        out: list[AgentLine] = []
        for row in range(min(self.model.rowCount(), limit)):
            agent = self.model.agent_at(row)
            if agent is None or agent.state is not AgentState.NEEDS_INPUT:
                break  # the list puts them first
            out.append(agent_line(agent))
        return out

    # --- the list ------

    def toggle_list(self) -> None:
        if not self.panel.isVisible() and time.monotonic() - self.panel.hidden_at < 0.4:
            # The click on the icon is what took the focus away and hid it: stay hidden.
            return
        if self.panel.isVisible():
            self.panel.hide()
            log.info("agent list hidden")
        else:
            self.panel.show_near(self.tray.geometry())
            log.info("agent list shown (%d agents)", self.model.rowCount())

    def show_list(self, agent_id: str | None = None) -> None:
        if self.panel.isVisible():
            self.panel.raise_()
            self.panel.activateWindow()
        else:
            self.panel.show_near(self.tray.geometry())
        log.info("agent list shown (%d agents)", self.model.rowCount())
        if agent_id is not None:
            self.panel.select(agent_id)

    def _answer_shown(self, choice: str, agent_id: str, request_id: str) -> None:
        """An answer from the list or the tray menu, to the request they showed."""
        self.actions.answer_agent(agent_id, choice, None, request_id=request_id or None)

    def _before_window(self) -> None:
        if self.has_tray:
            self.panel.hide()

    def _open_terminal(self, agent_id: str) -> list[str] | None:
        return self.options.terminal(agent_id)

    def _call(self, method: str, params: dict[str, Any]) -> None:
        async def call() -> None:
            try:
                await self._link().call(method, params)
            finally:
                self.called.emit(method)

        self.tasks.spawn(call(), method)

    def _link(self) -> DaemonLink:
        if self.link is None:
            raise LinkError("not connected to the volee daemon yet; try again in a moment")
        return self.link

    # --- missions ------

    def review_from_list(self, mission_id: str) -> None:
        if self.has_tray:
            self.panel.hide()  # a popup must not cover the dialog it opens
        self.review(mission_id)

    def review(self, mission_id: str) -> ApprovalDialog | None:
        """Open (or raise) the approval dialog of a mission."""
        mission = self.live.registry.missions.get(mission_id)
        if mission is None:
            self.show_error("Unknown mission", f"volee knows no mission {mission_id}.")
            return None
        dialog = self.approvals.get(mission_id)
        if dialog is None:
            dialog = ApprovalDialog(mission, self.live.registry)
            dialog.setWindowIcon(self.icons.app_icon())
            dialog.answer.connect(self.answer)
            dialog.diff_wanted.connect(lambda a, m=mission_id: self._read_changes(m, a, True))
            dialog.finished.connect(lambda _=0, m=mission_id: self._approval_closed(m))
            self.approvals[mission_id] = dialog
            for worker in dialog.worker_ids():
                self._read_changes(mission_id, worker, False)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        self.notifications.withdraw(mission_id)
        log.info("approval dialog of %s shown", mission_id)
        return dialog

    def _read_changes(self, mission_id: str, agent_id: str, diff: bool) -> None:
        """Ask git (through the daemon) what a worker's branch would merge."""

        async def read() -> None:
            try:
                result = await self._link().call(
                    "agents.changes", {"agent": agent_id, "diff": diff}
                )
            except LinkError as exc:
                result = {"error": str(exc).removeprefix("agents.changes: ")}
            finally:
                self.called.emit("agents.changes")
            dialog = self.approvals.get(mission_id)
            if dialog is not None and isinstance(result, dict):
                dialog.set_changes(agent_id, result)

        self.tasks.spawn(read(), f"read the change of {agent_id}")

    def _approval_closed(self, mission_id: str) -> None:
        dialog = self.approvals.pop(mission_id, None)
        if dialog is not None:
            dialog.deleteLater()

    def answer(self, params: dict[str, Any]) -> None:
        async def send() -> None:
            mission_id = str(params.get("mission"))
            dialog = self.approvals.get(mission_id)
            try:
                await self._link().call("missions.answer", dict(params))
            except LinkError as exc:
                if dialog is not None:
                    dialog.show_status(f"Not answered: {exc}")
                return
            finally:
                self.called.emit("missions.answer")
            log.info("mission %s answered: %s", mission_id, params)
            if dialog is not None:
                dialog.accept()

        self.tasks.spawn(send(), "answer the mission")

    # --- notifications ------

    def focused_agents(self) -> frozenset[str]:
        return frozenset(i for i, w in self.windows.items() if w.in_front())

    def notification_action(
        self, notice: Notice, choice: str = "open", text: str | None = None
    ) -> None:
        what = notice.action.value if choice == "open" else choice
        log.info("notification action %s on %s", what, notice.subject or "list")
        if choice != "open" and notice.agent is not None:
            if choice == "reply" and not text:
                self.actions.reply_to(notice.agent)
                return
            # The answer names the request the notification showed: never another one.
            self.actions.answer_agent(notice.agent, choice, text, request_id=notice.request)
        elif notice.kind is Kind.MISSION and notice.mission is not None:
            self.review(notice.mission)
        elif notice.kind is None or notice.agent is None:
            self.show_list()
        else:
            self.actions.open_agent(notice.agent)

    def pause_notifications(self, paused: bool) -> None:
        self.notifications.set_settings(replace(self.notifications.settings, paused=paused))
        self._refresh_summary()
        log.info("notifications %s", "paused" if paused else "resumed")

    def load_notify_settings(self) -> None:
        from volee_desktop.config import load_config

        loaded = load_config(self.options.config_path)
        self.panel.delegate.context_limit = loaded.config.agents.context_limit
        n = loaded.config.notifications
        self.notifications.set_settings(
            NotifySettings(
                needs_input=n.needs_input,
                failed=n.failed,
                lost=n.lost,
                interrupted=n.interrupted,
                mission=n.mission,
                done=n.done,
                paused=self.notifications.settings.paused,
            )
        )

    # --- settings, errors ------

    def open_settings(self) -> QWidget:
        from .settings import SettingsDialog

        dialog = SettingsDialog(
            self.options.config_path, self.options.login_item, self.options.show_error
        )
        dialog.setWindowIcon(self.icons.app_icon())
        dialog.saved.connect(self.load_notify_settings)
        self._keep(dialog)
        dialog.show()
        return dialog

    def _keep(self, widget: QWidget) -> None:
        self.dialogs.append(widget)
        widget.destroyed.connect(lambda *_: None)
        if hasattr(widget, "finished"):
            widget.finished.connect(lambda *_: self._drop(widget))

    def _drop(self, widget: QWidget) -> None:
        if widget in self.dialogs:
            self.dialogs.remove(widget)
        widget.deleteLater()

    def confirm(self, title: str, message: str) -> bool:
        if self.options.confirm is not None:
            return self.options.confirm(title, message)
        answer = QMessageBox.question(self.panel, title, message)
        return answer == QMessageBox.StandardButton.Yes

    def show_error(self, title: str, message: str) -> None:
        log.warning("%s: %s", title, message)
        if self.options.show_error is not None:
            self.options.show_error(title, message)
            return
        self.panel.show_status(f"{title}: {message}", transient=True)
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, parent=self.panel)
        self._keep(box)
        box.open()

    def _task_failed(self, what: str, exc: BaseException) -> None:
        title = exc.title if isinstance(exc, LinkError) else "Something went wrong"
        self.show_error(title, f"{what}: {exc}")

    # --- quitting ------

    def close(self) -> None:
        if self.tray_watcher is not None:
            self.tray_watcher.stop()
        self.notifications.stop()
        self.tray.hide()
        self.panel.hide()
        for window in list(self.windows.values()):
            window.close()
        for dialog in list(self.approvals.values()):
            dialog.close()
        for widget in list(self.dialogs):
            widget.close()

"""The tray app's composition: live registry, list model, tray, panel, notifications, actions.

``AppController`` wires the widgets to a ``DaemonLink``; every person's action
becomes one daemon call, so the widgets stay free of rules and of IPC: the actions
on an agent (open, reply, stop, resume, forget, timeline, answer) in
``actions.AgentActions``, those on several selected agents in ``many_run.ManyActions``,
the missions' review in ``reviews.MissionReviews``, settings, about and the questions and
errors in ``app_dialogs.AppDialogs``; each built here with what it needs.  The
notifications' routing and the tray's summary stay here.  Its seams: ``options.AppOptions``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSystemTrayIcon, QWidget

from volee_desktop.core import events as ev
from volee_desktop.core.registry import Registry

from ..ipc.methods import Method
from ..memtrim import Trimmer
from . import feedback
from .actions import AgentActions
from .agent_model import AgentListModel
from .app_dialogs import AppDialogs
from .attention import (
    MENU_AGENTS,
    AgentLine,
    MissionLine,
)
from .calls import Calls
from .errors import LinkError
from .icons import IconCache, Svgs, look_for
from .link import DaemonLink
from .list_later import LaterList
from .live import Change, Connection, LiveRegistry, MachineChanged
from .looking import Looking
from .many_run import ManyActions
from .new_agent_flow import NewAgent
from .new_agent_templates import Templates
from .notifier import NotificationCenter, default_sinks
from .notify_policy import REVIEW_CHOICE, Kind, Notice, NotifySettings
from .notify_policy import Action as NoticeAction
from .notifybus import Peer
from .options import AppOptions, default_list_prefs
from .reviews import MissionReviews
from .summary import TraySummary
from .tasks import Tasks
from .tray import Tray
from .tray_state import needing, summary_of
from .traywatch import TrayWatcher

if TYPE_CHECKING:
    from .approval import ApprovalDialog
    from .panel import AgentPanel

log = logging.getLogger(__name__)


class AppController(QObject):
    """Everything the person sees, fed by one ``DaemonLink``."""

    quit_requested = Signal()
    opened = Signal(str, str)  # (agent id, how: terminal | output | reply)
    called = Signal(str)  # a daemon call finished (method); tests wait on it

    def __init__(self, options: AppOptions, parent: QObject | None = None) -> None:
        #: How long an action took (a notification says so past feedback.LONG_ACTION_S).
        self.monotonic: Callable[[], float] = time.monotonic
        super().__init__(parent)
        self.options = options
        self.link: DaemonLink | None = None
        self.tasks = Tasks(self._task_failed)
        self.trimmer = Trimmer()  # free heap pages given back after events (memtrim.py)
        self.live = LiveRegistry(on_gap=self._resync)
        # Plans and changes for the rows, asked of the daemon as turns end (app/outcomes.py).
        self.model = AgentListModel(self, outcome=self._outcome, spawn=self.tasks.spawn)
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
        self.daemon_where = ""  # "inside the app" | "a separate process" (set by the session)
        prefs = options.list_prefs
        if prefs is None:
            prefs = default_list_prefs()
        # The list window is built when it is first shown or asked for, or once the daemon
        # answers (``build_list_soon``): not before the icon and the daemon (issue 27, item 3).
        self.later = LaterList(
            self._make_panel,
            self._summary,
            options.clock,
            prefs,
        )
        self._popup = use_tray
        # The daemon's discovery lists often for this app only while someone looks at it.
        self.looking = Looking(self)
        self.looking.changed.connect(self._looking_changed)
        self.app_dialogs = AppDialogs(
            config_path=options.config_path,
            login_item=options.login_item,
            ask=options.confirm,
            tell=options.show_error,
            parent=lambda: self.panel,
            status=lambda text, transient: self.show_status(text, transient=transient),
            icon=self.icons.app_icon,
            link=lambda: self.link,
            tasks=self.tasks,
            settings_saved=self.load_notify_settings,
            about=lambda: (self.live.connection, self.daemon_where, self.live.registry),
        )
        self.dialogs = self.app_dialogs.kept  # the windows shown until they finish
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
            keep=self.app_dialogs.keep,
            withdraw=lambda agent_id: self.notifications.withdraw(agent_id),
            opened=self.opened.emit,
            called=self.called.emit,
            before_window=self._before_window,
            focus=options.focus,
            said=self.say,
            monotonic=lambda: self.monotonic(),
            failed=self.failed,
        )
        self.windows = self.actions.windows
        sinks: Any = options.sinks
        if sinks is None:  # made with the first notification, after the first frame
            exported = not self.tray.answers
            sinks = lambda: default_sinks(  # noqa: E731
                self.tray.icon,
                self.svgs.app_icon_path,
                vouch=self.vouch,
                on_refused=self.desktop_refused,
                exported=exported,
            )
        self.warn_at: float | None = None  # [limits] warn_at: the plan's use that warns
        self.notifications = NotificationCenter(
            registry=lambda: self.live.registry,
            sinks=sinks,
            on_action=self.notification_action,
            focused=self.focused_agents,
            clock=options.clock,
            tasks=self.tasks,
            parent=self,
        )
        self.tray_icon = "auto"  # notifications.tray_icon, read by load_notify_settings
        self.load_notify_settings()
        # "auto" follows the platform's colour scheme when it changes (a dark theme turned on).
        QGuiApplication.styleHints().colorSchemeChanged.connect(
            lambda _scheme: self.tray.set_look(look_for(self.tray_icon))
        )
        calls = Calls(
            registry=lambda: self.live.registry,
            link=self._link,
            tasks=self.tasks,
            withdraw=self.notifications.withdraw,
            said=self.say,
            failed=self.failed,
            called=self.called.emit,
            monotonic=lambda: self.monotonic(),
        )
        self.reviews = MissionReviews(
            calls,
            self.icons.app_icon,
            self.show_error,
            machine=self.live.machine_name,
        )
        self.approvals = self.reviews.dialogs  # mission id -> its open approval dialog
        self.many = ManyActions(calls, lambda title, message: self.confirm(title, message))

        self.new_agent = NewAgent(
            registry=lambda: self.live.registry,
            link=self._link,
            tasks=self.tasks,
            select=self.show_list,
            templates=Templates(prefs.parent / "new_agent.json" if prefs is not None else None),
            machines=self._machines,
            icon=self.icons.app_icon,
            machine_of=lambda a: self.live.machine_name(a) or None,
            parent=self,
        )
        self.model.machine_label = self.live.machine_label  # rows name another machine
        self.notifications.machine_label = self.live.machine_label
        self.notifications.unreachable = self._unreachable
        self.live.observe(self.model)
        self.live.observe(self.model.outcomes)
        self.live.observe(self.notifications)
        self.live.observe(self)
        self.live.observe(self.reviews)
        self.live.observe(self.new_agent)  # after the model: the new agent is on the list
        self.live.observe_connection(self._connection_changed)

        self.tray.answer_requested.connect(self._answer_shown)
        # The dialog comes in front; the list stays behind it.
        self.tray.review_requested.connect(self.review)
        self.tray.agent_action.connect(self.actions.run)
        self.tray.open_list.connect(self.toggle_list)
        self.tray.new_agent_requested.connect(self.new_agent.open)
        self.tray.quit_requested.connect(self.quit_requested.emit)
        self.tray.settings_requested.connect(self.open_settings)
        self.tray.about_requested.connect(self.open_about)
        self.tray.pause_toggled.connect(self.pause_notifications)
        self.tray.continue_limited.connect(
            lambda: self._call(Method.AGENTS_CONTINUE, {"all": True})
        )
        self._refresh_summary()

    # --- the list window, built on demand ------

    @property
    def panel(self) -> AgentPanel:
        """The agent list window (built the first time it is asked for: list_later.py)."""
        return self.later.window()

    @property
    def panel_built(self) -> bool:
        return self.later.built is not None

    def _make_panel(self) -> AgentPanel:
        from .panel import AgentPanel

        panel = AgentPanel(self.model, popup=self._popup, prefs_path=self.later.prefs_path)
        panel.setWindowIcon(self.icons.app_icon())
        self.looking.watch(panel)
        panel.closed.connect(self._list_window_closed)
        panel.action.connect(self.actions.run)
        panel.many.connect(self.many.run)
        panel.answer.connect(self._answer_shown)
        panel.review.connect(self.review)
        panel.new_agent.connect(self.new_agent.open)
        return panel

    def build_list_soon(self) -> None:
        """Build the list window at the loop's next turn, so its first showing is instant."""
        self.later.soon()

    def show_status(self, text: str, transient: bool = False) -> None:
        """A line in the list's status area (kept for the list until it is built)."""
        self.later.show_status(text, transient)

    # --- starting ------

    def show(self) -> None:
        """Show the tray icon (or, without a tray, the list as a window)."""
        self.tray.apply_now()
        if self.has_tray:
            self.tray.show()
            if self.later.pinned():  # kept open: it was a window of the desktop, it is again
                self.panel.show_near(self.tray.geometry())
                log.info("agent list shown (%d agents), kept open", self.model.rowCount())
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
        self.show_status(
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
        self.load_notify_settings()  # what of config.toml the person confirmed is now known
        for agent_id, window in list(self.windows.items()):
            agent = registry.agents.get(agent_id)
            if agent is not None:
                window.set_agent(agent)

    def on_change(self, change: Change) -> None:
        self.trimmer.poke()
        if isinstance(change.event, ev.SettingsConfirmed):
            self.load_notify_settings()
            # What the daemon said waits for the person no longer does.
            notices = self.live.connection.notices
            notices[:] = [n for n in notices if n.get("kind") != "config-unconfirmed"]
        if change.agents or change.mission is not None or isinstance(change.event, MachineChanged):
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

    def _connection_changed(self, connection: Connection) -> None:
        self._refresh_summary()
        if connection.notices:
            notice = connection.notices[-1]
            text = notice.get("message") or notice.get("text") or ""
            problems = notice.get("problems")
            if not text and isinstance(problems, list):
                text = "; ".join(str(p) for p in problems)
            self.show_status(f"volee: {text or notice.get('kind', 'notice')}")

    def _refresh_summary(self) -> None:
        summary, missions = self._summary()
        self.tray.update(summary)
        self.tray.set_limited(self.live.counts.limited)
        self.later.show_summary(summary, missions)
        self.tray.set_attention(missions, self.needing_agents())

    def _summary(self) -> tuple[TraySummary, list[MissionLine]]:
        paused = self.notifications.settings.paused
        return summary_of(self.live, paused, self.warn_at, self.options.clock())

    def _unreachable(self, agent_id: str) -> bool:
        machine = self.live.machine(agent_id)
        return machine is not None and not machine.reachable

    def needing_agents(self, limit: int = MENU_AGENTS) -> list[AgentLine]:
        """The agents the tray's menu lists (tray_state.needing)."""
        return needing(self.model, self.live, limit)

    # --- the list ------

    def toggle_list(self) -> None:
        panel = self.panel
        if not panel.isVisible() and time.monotonic() - panel.hidden_at < 0.4:
            # The click on the icon is what took the focus away and hid it: stay hidden.
            return
        if panel.isVisible() and panel.pinned:
            self.show_list()  # kept open: the icon brings it forward, its close button closes
        elif panel.isVisible():
            panel.hide()
            log.info("agent list hidden")
        else:
            panel.show_near(self.tray.geometry())
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
        """A window volee opens comes in front of the list, which stays (issue 26)."""

    def _open_terminal(self, agent_id: str) -> list[str] | None:
        return self.options.terminal(agent_id)

    def _call(self, method: str, params: dict[str, Any]) -> None:
        # The words are made now: once it went through, a forgotten agent has no name.
        tell = feedback.changes(method)
        done = feedback.done_text(method, params, self.live.registry) if tell else ""
        failed = feedback.failed_text(method, params, self.live.registry) if tell else ""

        async def call() -> None:
            started = self.monotonic()
            try:
                await self._link().call(method, params)
            except LinkError as exc:
                if tell:
                    self.failed(failed, str(exc))
                raise
            finally:
                self.called.emit(method)
            if done:
                self.say(done, started)

        self.tasks.spawn(call(), method)

    def say(self, text: str, started: float | None = None) -> None:
        """What an action did, in the list's status area (until the next action or opening);
        a notification too when it took long (``started``: when it began, on ``monotonic``)."""
        log.info("%s", text)
        self.show_status(text, transient=True)
        took = self.monotonic() - started if started is not None else 0.0
        if feedback.took_long(took):
            self.notifications.show_now(
                Notice(None, text, feedback.took_text(took), NoticeAction.OPEN)
            )

    def failed(self, title: str, why: str) -> None:
        """An action that did not happen: the status area and a notification say so."""
        self.show_status(f"{title}: {why}", transient=True)
        self.notifications.show_now(Notice(None, title, why, NoticeAction.OPEN))

    async def _outcome(self, agent_id: str) -> Any:
        return await self._link().call(Method.AGENTS_OUTCOME, {"agent": agent_id})

    def _link(self) -> DaemonLink:
        if self.link is None:
            raise LinkError("not connected to the volee daemon yet; try again in a moment")
        return self.link

    # --- notifications ------

    def focused_agents(self) -> frozenset[str]:
        return frozenset(i for i, w in self.windows.items() if w.in_front())

    def notification_action(
        self, notice: Notice, choice: str = "open", text: str | None = None
    ) -> None:
        what = notice.action.value if choice == "open" else choice
        log.info("notification action %s on %s", what, notice.subject or "list")
        if choice == REVIEW_CHOICE and notice.agent is not None:
            self.actions.review_agent(notice.agent)  # a done agent's change: its Changes view
        elif choice != "open" and notice.agent is not None:
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

    async def vouch(self, pid: int, attempt: str) -> Peer:
        """Who a D-Bus peer's pid is, as the daemon identifies it (an agent's attempt is
        recorded in its timeline there); not the person when the daemon cannot say."""
        try:
            who = await self._link().call(Method.DESKTOP_PEER, {"pid": pid, "attempt": attempt})
        except LinkError as exc:
            return Peer(False, pid, f"pid {pid}, which the daemon could not identify ({exc})")
        if not isinstance(who, dict):
            return Peer(False, pid, f"pid {pid}, which the daemon could not identify")
        if who.get("kind") == "person":
            return Peer(True, pid, "the person")
        name = who.get("name") or who.get("agent") or "an agent"
        how = f": {who['how']}" if who.get("how") else ""
        return Peer(False, pid, f"agent {name} (pid {pid}{how})")

    def desktop_refused(self, why: str | None) -> None:
        """A D-Bus peer was refused (or, None, the notification server is the person's
        again): the tray's tooltip and the list say so until then."""
        self.tray.set_warning(why)
        if why is not None:
            self.show_status(f"volee: {why}")

    def pause_notifications(self, paused: bool) -> None:
        self.notifications.set_settings(replace(self.notifications.settings, paused=paused))
        self._refresh_summary()
        log.info("notifications %s", "paused" if paused else "resumed")

    def load_notify_settings(self) -> None:
        from volee_desktop.config import in_force, load_config

        loaded = load_config(self.options.config_path)
        # A value that lowers safety (needs_input = false) waits for the person's confirmation,
        # which the daemon keeps in its log (docs/trust-model.md); until then the default.
        config, _held = in_force(loaded.config, self.live.registry.confirmed_settings)
        self.later.set_context_limit(config.agents.context_limit)
        n = config.notifications
        self.warn_at = loaded.config.limits.warn_at
        self.tray_icon = n.tray_icon
        self.tray.set_look(look_for(n.tray_icon))
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

    def _machines(self) -> list[str]:
        """The other machines ``[machines]`` names (the New agent dialog offers them)."""
        from volee_desktop.config import load_config

        return sorted(load_config(self.options.config_path).config.machines)

    # --- settings, errors: what the parts of the app share ------

    def review(self, mission_id: str) -> ApprovalDialog | None:
        """Open (or raise) the approval dialog of a mission (``reviews.MissionReviews``)."""
        return self.reviews.review(mission_id)

    def answer(self, params: dict[str, Any]) -> None:
        """Send the person's answer to a mission."""
        self.reviews.answer(params)

    def open_settings(self) -> QWidget:
        return self.app_dialogs.open_settings()

    def confirm_settings(self) -> None:
        self.app_dialogs.confirm_settings()

    def open_about(self) -> QWidget:
        return self.app_dialogs.open_about()

    def confirm(self, title: str, message: str) -> bool:
        return self.app_dialogs.confirm(title, message)

    def show_error(self, title: str, message: str) -> None:
        self.app_dialogs.show_error(title, message)

    def _task_failed(self, what: str, exc: BaseException) -> None:
        title = exc.title if isinstance(exc, LinkError) else "Something went wrong"
        self.show_error(title, f"{what}: {exc}")

    # --- quitting ------

    def close(self) -> None:
        self.trimmer.close()
        if self.tray_watcher is not None:
            self.tray_watcher.stop()
        self.notifications.stop()
        self.tray.hide()
        if self.later.built is not None:
            self.later.built.hide()
        for window in list(self.windows.values()):
            window.close()
        self.reviews.close()
        self.app_dialogs.close()


__all__ = ["AppController", "AppOptions"]

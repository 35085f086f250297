"""The tray icon: the badge and mark of ``summary.summarize``, a tooltip, a click and a menu.

Left click opens the agent list; right click shows the menu: the missions that
wait for approval (Review), the agents that need you (up to ten, most urgent
first, each with its one-line request and Allow / Deny / Open, or a question's
options and Reply), the agents that failed (Resume / Open: the badge's ⚠ is never a
mystery), then open the list, pause notifications, settings, about, quit.
The icon is replaced only when what it shows changes, and at most once per
event-loop turn however many events come; the menu's top part is rebuilt only
when its entries change.
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from collections.abc import Callable

from PySide6.QtCore import QObject, QRect, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from volee_desktop.core.model import Agent
from volee_desktop.core.requests import SUMMARY_LIMIT

from .attention import (
    MENU_AGENTS,
    AgentLine,
    LineKind,
    MissionLine,
    is_answer,
    label,
    project_of,
    short,
)
from .choices import choices
from .icons import IconCache, Look
from .summary import TraySummary

log = logging.getLogger(__name__)

MENU_TEXT = 70  # characters of a request shown in the menu
FAILED = LineKind.FAILED  # an AgentLine's kind for an agent that failed (``failed_line``)
MENU_MISSIONS = 5  # missions to approve listed in the menu at most (the list has them all)


class Tray(QObject):
    """Owns the QSystemTrayIcon and its menu; emits what the person asked for."""

    open_list = Signal()
    new_agent_requested = Signal()
    settings_requested = Signal()
    about_requested = Signal()
    quit_requested = Signal()
    pause_toggled = Signal(bool)
    review_requested = Signal(str)  # a mission id
    agent_action = Signal(str, str)  # (action: open | reply, agent id)
    answer_requested = Signal(str, str, str)  # (allow | deny | option:N, agent id, request id)
    continue_limited = Signal()  # continue now every agent a usage limit stopped

    def __init__(
        self,
        icons: IconCache,
        parent: QObject | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        self.icons = icons
        self.clock = clock
        self.icon = QSystemTrayIcon(self)
        self.icon.setObjectName("trayIcon")
        if sys.platform.startswith("linux"):
            from .sni_again import WatcherReplaced

            self._replaced = WatcherReplaced(self)
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        # Whether the menu offers answers (Allow, Deny, a question's options).  Not when Qt
        # exports it on D-Bus (a StatusNotifierItem tray): any process on the session bus
        # can trigger an exported entry, and Qt does not say who did (docs/trust-model.md).
        self.answers = not menu_exported()
        if not self.answers:
            log.info(
                "the tray's menu is on D-Bus (a StatusNotifierItem): it offers Open, not Allow"
            )
        self._attention_key: tuple[object, ...] = ((), ())
        self._last_attention: tuple[list[MissionLine], list[AgentLine]] = ([], [])
        self._missions: list[MissionLine] = []
        self._mission_actions: list[QAction] = []
        self._pool: list[QMenu] = []  # one submenu per agent shown, reused
        self.menu.aboutToShow.connect(self._refresh_times)
        self._pending_attention: tuple[list[MissionLine], list[AgentLine]] | None = None
        # After the chosen entry has run (it triggers once the menu is hidden).
        self.menu.aboutToHide.connect(lambda: QTimer.singleShot(0, self._apply_pending))
        self.action_open = self._add("Open agent list", self.open_list.emit)
        self.action_new = self._add("New agent…", self.new_agent_requested.emit)
        self.action_pause = QAction("Pause notifications", self.menu)
        self.action_pause.setCheckable(True)
        self.action_pause.toggled.connect(self.pause_toggled.emit)
        self.menu.addAction(self.action_pause)
        self.action_settings = self._add("Settings…", self.settings_requested.emit)
        self.action_about = self._add("About volee…", self.about_requested.emit)
        self.menu.addSeparator()
        self.action_quit = self._add("Quit volee (agents keep running)", self.quit_requested.emit)
        self._build_attention()
        # Agents a usage limit stopped (docs/limits.md): continue them all now.
        self.action_continue = QAction("", self.menu)
        self.action_continue.setObjectName("continueLimited")
        self.action_continue.setVisible(False)
        self.action_continue.triggered.connect(self.continue_limited.emit)
        self.menu.insertAction(self.action_open, self.action_continue)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self._key: tuple[int, str] | None = None  # None: redraw on the next summary
        self._pending: TraySummary | None = None
        self.summary: TraySummary | None = None
        self.warning: str | None = None
        self._coalesce = QTimer(self)
        self._coalesce.setSingleShot(True)
        self._coalesce.setInterval(0)
        self._coalesce.timeout.connect(self._apply)

    def _add(self, text: str, slot: object) -> QAction:
        action = QAction(text, self.menu)
        action.triggered.connect(slot)
        self.menu.addAction(action)
        return action

    # --- the menu's top part: what waits on the person -------------------------------------

    def _build_attention(self) -> None:
        """The menu's top part, made once and hidden: entries are shown and renamed, never
        created or deleted per change (PySide leaks a reference to None for each QAction
        added to and removed from a menu, and a submenu deleted while open is a crash)."""
        first = self.action_open
        me = weakref.ref(self)  # no cycle tray -> menu -> slot -> tray
        self._mission_header = self._header()
        self.menu.insertAction(first, self._mission_header)
        for n in range(MENU_MISSIONS):
            item = QAction("", self.menu)
            item.setVisible(False)
            item.triggered.connect(lambda _=False, k=n: _review(me, k))
            self.menu.insertAction(first, item)
            self._mission_actions.append(item)
        self._agent_header = self._header()
        self.menu.insertAction(first, self._agent_header)
        for _n in range(MENU_AGENTS):
            sub = QMenu(self.menu)
            sub.setToolTipsVisible(True)
            sub.menuAction().setVisible(False)
            self.menu.insertAction(first, sub.menuAction())
            self._pool.append(sub)
        self._attention_separator = self.menu.insertSeparator(first)
        self._attention_separator.setVisible(False)

    def set_attention(self, missions: list[MissionLine], agents: list[AgentLine]) -> None:
        """Show these missions and agents at the top of the menu (redone only on a change,
        and never while the menu is open: the entry under the pointer stays what it says)."""
        if self.menu.isVisible():
            self._pending_attention = (missions, agents)
            return
        self._pending_attention = None
        key = (tuple(missions), tuple(agents))
        if key == self._attention_key:
            return
        self._attention_key = key
        self._last_attention = (missions, agents)
        missions = missions[:MENU_MISSIONS]
        agents = agents[:MENU_AGENTS]
        self._missions = missions
        self._mission_header.setText(
            _count(len(missions), "mission to approve", "missions to approve")
        )
        self._mission_header.setVisible(bool(missions))
        for n, item in enumerate(self._mission_actions):
            if n < len(missions):
                item.setObjectName(f"review-{missions[n].id}")
                item.setToolTip(missions[n].goal)
            item.setVisible(n < len(missions))
        failed = sum(1 for a in agents if a.kind is FAILED)
        needs = len(agents) - failed
        words = [_count(needs, "agent needs you", "agents need you")] if needs else []
        if failed:
            words.append(_count(failed, "agent failed", "agents failed"))
        self._agent_header.setText(" · ".join(words))
        self._agent_header.setVisible(bool(agents))
        for n, sub in enumerate(self._pool):
            if n < len(agents):
                self._fill(sub, agents[n])
            sub.menuAction().setVisible(n < len(agents))
        self._attention_separator.setVisible(bool(missions or agents))
        self._refresh_times()

    def set_limited(self, count: int) -> None:
        """Offer "Continue 27 limited agents now" while a usage limit holds agents."""
        self.action_continue.setText(
            "Continue the limited agent now"
            if count == 1
            else f"Continue {count} limited agents now"
        )
        self.action_continue.setVisible(count > 0)

    def _apply_pending(self) -> None:
        pending = self._pending_attention
        if pending is not None and not self.menu.isVisible():
            self.set_attention(*pending)

    def visible_entries(self) -> list[QAction]:
        """The menu's entries as shown (tests): visible, separators left out."""
        return [a for a in self.menu.actions() if a.isVisible() and not a.isSeparator()]

    def _header(self) -> QAction:
        header = QAction("", self.menu)
        header.setEnabled(False)
        header.setVisible(False)
        font = header.font()
        font.setBold(True)
        header.setFont(font)
        return header

    def _fill(self, sub: QMenu, line: AgentLine) -> None:
        sub.clear()
        sub.setTitle(label(short(line.text(), MENU_TEXT)))
        sub.setObjectName(f"agent-{line.id}")
        action = sub.menuAction()
        action.setToolTip(line.request + (f"\n{line.project}" if line.project else ""))
        me = weakref.ref(self)

        def add(text: str, name: str) -> None:
            item = sub.addAction(label(text))
            item.setObjectName(f"{name}-{line.id}")
            if is_answer(name):
                rid = line.request_id or ""
                item.triggered.connect(lambda _=False, a=line.id: _answer(me, name, a, rid))
            else:
                item.triggered.connect(lambda _=False, a=line.id: _emit(me, name, a))

        info = sub.addAction(label(short(line.request, SUMMARY_LIMIT)))
        info.setEnabled(False)
        if line.hidden:
            # Not all of it is in this line: it is read in full (the agent's window) first.
            unseen = sub.addAction(label(line.hidden))
            unseen.setEnabled(False)
        if line.project:
            where = sub.addAction(label(f"in {line.project}"))
            where.setEnabled(False)
        sub.addSeparator()
        answers = choices(line.kind, line.options)  # the list's and the window's, as entries
        if line.hidden or not self.answers:
            pass  # Open only
        elif answers:
            for choice in answers:
                add(short(choice.text, MENU_TEXT), choice.name)
            if line.kind is LineKind.QUESTION:
                add("Reply…", "reply")
        elif line.kind is FAILED:
            add("Resume", "resume")
        else:
            add("Reply…", "reply")
        add("Open", "open")

    def _refresh_times(self) -> None:
        now = self.clock()
        for item, line in zip(self._mission_actions, self._missions, strict=False):
            item.setText(label(short(line.text(now), MENU_TEXT + 20)))

    def show(self) -> bool:
        """Show the icon; False when there is no system tray to show it in."""
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return False
        self._decide_answers()
        self.icon.show()
        return True

    def _decide_answers(self) -> None:
        """Decide again whether the menu offers answers: a StatusNotifierWatcher that came up
        after volee (waybar started late) makes Qt export the menu once the icon is shown,
        and an exported menu must not offer Allow (seen: it did, until this)."""
        answers = not menu_exported()
        if answers == self.answers:
            return
        self.answers = answers
        if not answers:
            log.info("the tray's menu is on D-Bus now (a StatusNotifierItem): Open, not Allow")
        pending = self._pending_attention or self._last_attention
        self._attention_key = ((), ())  # refill every entry with the new choice
        self.set_attention(*pending)

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
        tooltip = f"{self.warning}\n{summary.tooltip}" if self.warning else summary.tooltip
        if self.icon.toolTip() != tooltip:
            self.icon.setToolTip(tooltip)

    def set_look(self, look: Look) -> None:
        """Draw the icon in ``look`` from now on (the setting or the colour scheme changed)."""
        if look is self.icons.look:
            return
        self.icons.look = look
        self._key = None  # redraw even though the badge and mark stay
        if self.summary is not None:
            self._pending = self._pending or self.summary
            self.apply_now()

    def set_warning(self, text: str | None) -> None:
        """A line above the tooltip's summary (a refused notification server), or none."""
        self.warning = text
        if self.summary is not None:
            self._pending = self._pending or self.summary
            self.apply_now()

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (
            QSystemTrayIcon.ActivationReason.Trigger,
            QSystemTrayIcon.ActivationReason.DoubleClick,
        ):
            self.open_list.emit()


#: The service whose presence makes Qt show the icon as a StatusNotifierItem and export its
#: menu on the session bus (com.canonical.dbusmenu at /MenuBar) instead of an XEmbed icon.
SNI_WATCHER = "org.kde.StatusNotifierWatcher"


def menu_exported() -> bool:
    """Whether Qt will export the tray's menu on D-Bus: on Linux when a StatusNotifierWatcher
    is on the session bus as the icon is made (Qt decides then, as this does)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        from PySide6.QtDBus import QDBusConnection
    except ImportError:
        return False
    bus = QDBusConnection.sessionBus()
    if not bus.isConnected():
        return False
    reply = bus.interface().isServiceRegistered(SNI_WATCHER)
    # Any watcher counts, whether or not a host has registered with it yet: a bar that starts
    # after volee registers its watcher first and its host a moment later, and Qt exports the
    # menu once the host is there (seen: Allow offered on D-Bus in that moment). The safe
    # side: no answers in a menu that may be exported.
    return bool(reply.isValid() and reply.value())


def failed_line(agent: Agent) -> AgentLine:
    """What the tray menu says of an agent that failed: its name and why."""
    why = agent.detail.removeprefix("failed").lstrip(" :·-") or "no reason given"
    return AgentLine(
        id=agent.id,
        name=agent.name,
        request=f"failed: {why}",
        kind=FAILED,
        project=project_of(agent),
        since=agent.state_since,
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _emit(tray: weakref.ref[Tray], name: str, agent_id: str) -> None:
    """An agent's menu entry chosen: the tray says so (if it still exists)."""
    me = tray()
    if me is not None:
        me.agent_action.emit(name, agent_id)


def _answer(tray: weakref.ref[Tray], choice: str, agent_id: str, request_id: str) -> None:
    """An answer chosen in an agent's submenu, naming the request the submenu showed."""
    me = tray()
    if me is not None:
        me.answer_requested.emit(choice, agent_id, request_id)


def _review(tray: weakref.ref[Tray], n: int) -> None:
    """The ``n``-th mission entry chosen."""
    me = tray()
    if me is not None and n < len(me._missions):
        me.review_requested.emit(me._missions[n].id)

"""The agent list: a panel near the tray with a filter box, the rows and their actions.

The panel knows nothing of the daemon: it emits ``action(name, agent_id)`` and
the app's ``Actions`` carry it out.  Keyboard: type to filter, Down/Up to move,
Enter opens, Ctrl+R reply, Ctrl+S stop, Ctrl+E resume, Ctrl+T timeline,
Ctrl+Delete forget, Ctrl+F the filter, Escape clears the filter then hides;
Ctrl+N goes to the next agent that needs you, Ctrl+Shift+F to the next failed one;
Ctrl+K compact rows, Ctrl+G the next grouping; Left folds the selected agent's group,
Right unfolds it.  While the selected agent needs you, its request shows above the
buttons with its answers: Ctrl+Y allow, Ctrl+D deny, or Alt+1… a question's options.

The list never hides what needs you: a filter (typed, or a count of the header
clicked) is said above the rows and shows the agents that need you or failed beneath
the ones it matches; closing the list clears it; opening the list selects the most
urgent agent.  Its size, position, compact mode, grouping and folds are remembered
(``ListPrefs``).
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import (
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPoint,
    QRect,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QGuiApplication,
    QHideEvent,
    QKeyEvent,
    QKeySequence,
    QMoveEvent,
    QResizeEvent,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QSizeGrip,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.model import Agent, RequestKind
from volee_desktop.core.states import AgentState

from .actions import Action
from .agent_model import AgentListModel, AgentRole, IdRole
from .attention import MissionLine, is_answer, label, short
from .delegate import AgentDelegate
from .list_prefs import ListPrefs
from .list_rows import STATE_FILTERS, Grouping, ListRows
from .texts import STATE_LABEL, action_label, can_resume, can_stop, summary_links

# (action, button text, shortcut)
ACTIONS: tuple[tuple[Action, str, str], ...] = (
    (Action.OPEN, "Open", "Return"),
    (Action.REPLY, "Reply…", "Ctrl+R"),
    (Action.STOP, "Stop", "Ctrl+S"),
    (Action.RESUME, "Resume", "Ctrl+E"),
    (Action.TIMELINE, "Timeline", "Ctrl+T"),
    (Action.FORGET, "Forget…", "Ctrl+Delete"),
)
# Answers to the selected agent's request (shown above the buttons while it needs you).
ANSWERS: tuple[tuple[str, str, str], ...] = (
    ("allow", "Allow", "Ctrl+Y"),
    ("deny", "Deny", "Ctrl+D"),
)
OPTION_KEYS = ("Alt+1", "Alt+2", "Alt+3", "Alt+4", "Alt+5", "Alt+6")
EXTRA_ACTIONS: tuple[tuple[Action, str], ...] = (
    (Action.OUTPUT, "Show recent output"),
    (Action.TERMINAL, "Attach in a terminal"),
)
# (what, shortcut, words): moving to the next agent that needs you or failed, and the
# list's modes.
JUMPS: tuple[tuple[AgentState, str, str], ...] = (
    (AgentState.NEEDS_INPUT, "Ctrl+N", "Next agent that needs you"),
    (AgentState.FAILED, "Ctrl+Shift+F", "Next failed agent"),
)
COMPACT_KEY = "Ctrl+K"
GROUP_KEY = "Ctrl+G"
GROUPINGS: tuple[tuple[Grouping, str], ...] = (
    (Grouping.NONE, "No groups"),
    (Grouping.STATE, "By state"),
    (Grouping.PROJECT, "By project"),
)
_NATIVE = QKeySequence.SequenceFormat.NativeText


def keys(shortcut: str) -> str:
    return QKeySequence(shortcut).toString(_NATIVE)


REPAINT_MS = 20_000  # "3 min" in the rows moves on while the panel is open


class AgentPanel(QWidget):
    """The list of agents, most urgent first, with a filter and per-row actions."""

    action = Signal(str, str)  # (action, agent id)
    review = Signal(str)  # a mission id: open its approval dialog
    answer = Signal(str, str, str)  # (allow | deny | option:N, agent id, the request shown)
    hidden = Signal()
    closed = Signal()  # the person closed the window (not the popup): without a tray, quit

    def __init__(
        self,
        model: AgentListModel,
        parent: QWidget | None = None,
        popup: bool = True,
        prefs_path: Path | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("agentPanel")
        self.setWindowTitle("Agents — volee")
        self.popup = popup
        self.hidden_at = 0.0  # when it last hid itself because the person clicked elsewhere
        if popup:
            self.setWindowFlags(Qt.WindowType.Tool | Qt.WindowType.WindowStaysOnTopHint)
        self.model = model
        self.prefs_path = prefs_path
        self.prefs = ListPrefs.load(prefs_path)
        self.rows = ListRows(model, self)
        self.rows.active = False  # until shown
        self.rows.folded = set(self.prefs.folded)
        self.rows.keep = self._keep_place
        self.rows.restore = self._restore_place
        self.state_filter: AgentState | None = None
        self._summary = ""
        self._placing = False  # moves volee makes (next to the tray) are not the person's

        self.header = QLabel(self)
        self.header.setObjectName("summary")
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setToolTip("Click a count to show only those agents")
        self.header.linkActivated.connect(self._header_clicked)
        # Missions waiting for approval: above the agents, each with its Review button.
        self.missions = QWidget(self)
        self.missions.setObjectName("missions")
        self.missions_layout = QVBoxLayout(self.missions)
        self.missions_layout.setContentsMargins(0, 0, 0, 0)
        self.missions_layout.setSpacing(4)
        self.missions.hide()
        self.mission_rows: dict[str, tuple[QWidget, QLabel]] = {}
        self._mission_lines: list[MissionLine] = []
        self.filter = QLineEdit(self)
        self.filter.setObjectName("filter")
        self.filter.setPlaceholderText("Filter agents (name, state, detail, folder, mission)…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter_changed)
        self.filter.installEventFilter(self)
        self.compact = QToolButton(self)
        self.compact.setObjectName("compact")
        self.compact.setText("Compact")
        self.compact.setCheckable(True)
        self.compact.setToolTip(f"One line per agent ({keys(COMPACT_KEY)})")
        self.compact.toggled.connect(self.set_compact)
        self.grouping = QComboBox(self)
        self.grouping.setObjectName("grouping")
        for grouping, words in GROUPINGS:
            self.grouping.addItem(words, grouping.value)
        self.grouping.setToolTip(f"Group the agents ({keys(GROUP_KEY)}: the next grouping)")
        self.grouping.currentIndexChanged.connect(
            lambda i: self.set_grouping(Grouping(self.grouping.itemData(i)))
        )
        # What a filter hides, said while it is set (with a way out).
        self.filter_note = QWidget(self)
        self.filter_note.setObjectName("filterNote")
        note = QHBoxLayout(self.filter_note)
        note.setContentsMargins(0, 0, 0, 0)
        self.filter_label = QLabel(self.filter_note)
        self.filter_label.setObjectName("filterLabel")
        self.filter_label.setTextFormat(Qt.TextFormat.PlainText)
        self.filter_label.setWordWrap(True)
        clear = QPushButton("Show all", self.filter_note)
        clear.setObjectName("clearFilter")
        clear.setAutoDefault(False)
        clear.setToolTip(f"Clear the filter ({keys('Esc')})")
        clear.clicked.connect(self.clear_filter)
        note.addWidget(self.filter_label, 1)
        note.addWidget(clear)
        self.filter_note.hide()

        self.view = QListView(self)
        self.view.setObjectName("agents")
        self.view.setModel(self.rows)
        self.delegate = AgentDelegate(self.view)
        self.view.setItemDelegate(self.delegate)
        self.view.setUniformItemSizes(True)  # 500 rows: no per-row size queries
        self.view.clicked.connect(self._clicked)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.doubleClicked.connect(lambda _: self.trigger(Action.OPEN))
        self.view.selectionModel().currentChanged.connect(lambda *_: self._update_buttons())
        self.rows.rebuilt.connect(self._rebuilt)
        self.rows.dataChanged.connect(lambda *_: self._update_buttons())

        self.empty = QLabel("No agents yet. Start one with `volee spawn`.", self)
        self.empty.setObjectName("empty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)

        self.buttons: dict[str, QPushButton] = {}
        self.qactions: dict[str, QAction] = {}
        bar = QHBoxLayout()
        bar.setSpacing(4)
        for name, text, shortcut in ACTIONS:
            button = QPushButton(text, self)
            button.setObjectName(f"action-{name}")
            button.setAutoDefault(False)
            button.setToolTip(f"{text.rstrip('…')} ({keys(shortcut)})")
            button.clicked.connect(lambda _=False, n=name: self.trigger(n))
            self.buttons[name] = button
            bar.addWidget(button)
            qaction = QAction(text, self)
            qaction.setShortcut(QKeySequence(shortcut))
            qaction.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            qaction.triggered.connect(lambda _=False, n=name: self.trigger(n))
            self.addAction(qaction)
            self.qactions[name] = qaction
        # The selected agent's request and its answers (Allow / Deny, or a question's options).
        self.request_bar = QWidget(self)
        self.request_bar.setObjectName("requestBar")
        rbar = QHBoxLayout(self.request_bar)
        rbar.setContentsMargins(0, 0, 0, 0)
        rbar.setSpacing(4)
        self.request_label = QLabel(self.request_bar)
        self.request_label.setObjectName("request")
        self.request_label.setTextFormat(Qt.TextFormat.PlainText)
        self.request_label.setMinimumWidth(80)
        rbar.addWidget(self.request_label, 1)
        self.answer_buttons: dict[str, QPushButton] = {}
        for answer, text, shortcut in ANSWERS:
            button = QPushButton(text, self.request_bar)
            button.setObjectName(f"answer-{answer}")
            button.setAutoDefault(False)
            button.setToolTip(f"{text} ({QKeySequence(shortcut).toString(_NATIVE)})")
            button.clicked.connect(lambda _=False, n=answer: self.trigger(n))
            rbar.addWidget(button)
            self.answer_buttons[answer] = button
            qaction = QAction(text, self)
            qaction.setShortcut(QKeySequence(shortcut))
            qaction.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            qaction.triggered.connect(lambda _=False, n=answer: self._answer(n))
            self.addAction(qaction)
            self.qactions[answer] = qaction
        for n, shortcut in enumerate(OPTION_KEYS, start=1):
            button = QPushButton(self.request_bar)
            button.setObjectName(f"answer-option:{n}")
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, k=n: self.trigger(f"option:{k}"))
            rbar.addWidget(button)
            self.answer_buttons[f"option:{n}"] = button
            qaction = QAction(f"Option {n}", self)
            qaction.setShortcut(QKeySequence(shortcut))
            qaction.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            qaction.triggered.connect(lambda _=False, k=n: self._answer(f"option:{k}"))
            self.addAction(qaction)
        self.request_bar.hide()
        self._shown_request: str | None = None  # the id of the request the bar shows
        # Return is handled by the view and the filter box (eventFilter): the filter
        # box would otherwise swallow it.
        self.qactions[Action.OPEN].setShortcut(QKeySequence())
        find = QAction("Filter", self)
        find.setShortcut(QKeySequence("Ctrl+F"))
        find.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        find.triggered.connect(self.focus_filter)
        self.addAction(find)
        for state, shortcut, words in JUMPS:
            jump = QAction(words, self)
            jump.setShortcut(QKeySequence(shortcut))
            jump.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            jump.triggered.connect(lambda _=False, s=state: self.next_in(s))
            self.addAction(jump)
            self.qactions[f"next-{state.value}"] = jump
        for shortcut, slot in (
            (COMPACT_KEY, lambda: self.compact.toggle()),
            (GROUP_KEY, self.next_grouping),
        ):
            mode = QAction(self)
            mode.setShortcut(QKeySequence(shortcut))
            mode.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            mode.triggered.connect(slot)
            self.addAction(mode)
        self.view.installEventFilter(self)

        self.status = QLabel(self)
        self.status.setObjectName("status")
        self.status.setWordWrap(True)
        self.status.hide()
        # An action's error is about that action: it goes at the next action or opening.
        self._status_transient = False

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        layout.addWidget(self.header)
        layout.addWidget(self.missions)
        top = QHBoxLayout()
        top.setSpacing(4)
        top.addWidget(self.filter, 1)
        top.addWidget(self.grouping)
        top.addWidget(self.compact)
        layout.addLayout(top)
        layout.addWidget(self.filter_note)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.request_bar)
        # A popup has no frame to pull on: a grip in its corner resizes it.
        self.grip = QSizeGrip(self)
        bar.addWidget(self.grip, 0, Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignRight)
        layout.addLayout(bar)
        self.setMinimumSize(360, 300)
        self.resize(*self.prefs.size)
        self.compact.setChecked(self.prefs.compact)
        self.grouping.setCurrentIndex(
            next(i for i, (g, _w) in enumerate(GROUPINGS) if g.value == self.prefs.grouping)
        )

        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self.view.viewport().update)
        self._repaint.timeout.connect(self._refresh_mission_times)
        self._ensure_current()

    # --- what is selected ------

    def current_agent(self) -> Agent | None:
        agent = self.view.currentIndex().data(AgentRole)
        return agent if isinstance(agent, Agent) else None

    def current_id(self) -> str | None:
        value = self.view.currentIndex().data(IdRole)
        return value if isinstance(value, str) else None

    def select(self, agent_id: str) -> bool:
        self.rows.flush()
        row = self.rows.row_of(agent_id)
        if row is None:
            return False
        self._set_row(row)
        return True

    def _set_row(self, row: int) -> None:
        index = self.rows.index(row, 0)
        self.view.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect
        )
        self.view.scrollTo(index)

    def visible_ids(self) -> list[str]:
        """The agents the filter lets through, top to bottom (not the ones shown beneath)."""
        self.rows.flush()
        return self.rows.shown_ids()

    def listed_ids(self) -> list[str]:
        """Every agent row on the list, the ones shown beneath a filter included."""
        self.rows.flush()
        return self.rows.agent_ids()

    def _agent_rows(self) -> list[int]:
        return [r for r in range(self.rows.rowCount()) if self.rows.agent_at(r) is not None]

    def _keep_place(self) -> object:
        """The selected agent, and the row at the top of the view with where it is."""
        top = self.view.indexAt(QPoint(1, 1))
        key = self.rows.key_at(top.row()) if top.isValid() else None
        offset = self.view.visualRect(top).top() if top.isValid() else 0
        return (self.current_id(), key, offset, self.view.verticalScrollBar().value())

    def _restore_place(self, place: object) -> None:
        """After a rebuild: the same agent selected, and the row that was at the top of the
        view where it was (rows moving above it do not move what the person looks at;
        setting the current row would scroll to it: not while they look elsewhere)."""
        if not isinstance(place, tuple):
            return
        agent_id, key, offset, scroll = place
        row = self.rows.row_of(agent_id) if agent_id is not None else None
        if self.isVisible():
            self.view.doItemsLayout()  # the scroll range of the new rows, now
        self.view.setAutoScroll(False)
        try:
            if row is not None:
                self.view.selectionModel().setCurrentIndex(
                    self.rows.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                )
        finally:
            self.view.setAutoScroll(True)
        bar = self.view.verticalScrollBar()
        bar.setValue(scroll)
        top = self.rows.row_of_key(key) if isinstance(key, str) else None
        if top is not None and scroll > 0:
            moved = self.view.visualRect(self.rows.index(top, 0)).top() - offset
            bar.setValue(bar.value() + moved)

    def _rebuilt(self) -> None:
        self._ensure_current()
        self._update_filter_note()

    def _scroll_to_current(self) -> None:
        current = self.view.currentIndex()
        if current.isValid():
            self.view.scrollTo(current)

    def select_most_urgent(self) -> None:
        """Select the most urgent agent on the list and scroll it into view."""
        self.rows.flush()
        rows = self._agent_rows()
        if not rows:
            return
        first = self.model.ids()
        order = {agent_id: i for i, agent_id in enumerate(first)}
        best = min(rows, key=lambda r: order.get(self.rows.agent_at(r).id, 1 << 30))  # type: ignore[union-attr]
        self._set_row(best)

    def next_in(self, state: AgentState) -> bool:
        """Move to the next agent (after the selected one, wrapping) in ``state``."""
        self.rows.flush()
        rows = [
            r
            for r in self._agent_rows()
            if (agent := self.rows.agent_at(r)) is not None and agent.state is state
        ]
        if not rows:
            self.show_status(f"No agent {STATE_LABEL[state]}.", transient=True)
            return False
        current = self.view.currentIndex().row()
        after = [r for r in rows if r > current]
        self._set_row(after[0] if after else rows[0])
        return True

    # --- modes ------

    def set_compact(self, compact: bool) -> None:
        if self.compact.isChecked() != compact:
            self.compact.setChecked(compact)  # comes back here through toggled
            return
        self.delegate.compact = compact
        self.prefs.compact = compact
        self._relayout()
        self._save_prefs()

    def set_grouping(self, grouping: Grouping) -> None:
        index = next(i for i, (g, _w) in enumerate(GROUPINGS) if g is grouping)
        if self.grouping.currentIndex() != index:
            self.grouping.setCurrentIndex(index)  # comes back here
            return
        self.prefs.grouping = grouping.value
        self.rows.set_grouping(grouping)
        self._relayout()
        self._save_prefs()

    def next_grouping(self) -> None:
        self.grouping.setCurrentIndex((self.grouping.currentIndex() + 1) % len(GROUPINGS))

    def _relayout(self) -> None:
        # Headers are shorter than full rows: sizes are uniform only without groups, or
        # when every row is one line.
        self.view.setUniformItemSizes(self.rows.grouping is Grouping.NONE or self.delegate.compact)
        self.view.doItemsLayout()
        self.view.viewport().update()
        current = self.view.currentIndex()
        if current.isValid():
            self.view.scrollTo(current)

    def toggle_fold(self, key: str) -> None:
        self.rows.toggle_fold(key)
        self.prefs.folded = sorted(self.rows.folded)
        self._save_prefs()

    def _clicked(self, index: QModelIndex) -> None:
        header = self.rows.header(index.row())
        if header is not None:
            self.toggle_fold(header.key)

    def _fold_current(self, fold: bool) -> bool:
        agent = self.current_agent()
        if agent is None or self.rows.grouping is Grouping.NONE:
            return False
        row = self.view.currentIndex().row()
        while row >= 0 and self.rows.header(row) is None:
            row -= 1
        header = self.rows.header(row)
        if header is None or header.hidden or header.folded == fold:
            return False
        self.toggle_fold(header.key)
        return True

    def _save_prefs(self) -> None:
        self.prefs.save(self.prefs_path)

    # --- filters ------

    def _header_clicked(self, link: str) -> None:
        kind, _, value = link.partition(":")
        if kind != "state":
            return
        try:
            state = AgentState(value)
        except ValueError:
            return
        self.set_state_filter(None if state is self.state_filter else state)

    def set_state_filter(self, state: AgentState | None) -> None:
        """Show only the agents in ``state`` (None: every state), as the header's counts do."""
        self.state_filter = state
        states = frozenset() if state is None else STATE_FILTERS.get(state, frozenset({state}))
        self.rows.set_states(states)
        self.header.setText(summary_links(self._summary, state))
        self._update_filter_note()
        self.select_most_urgent()

    def clear_filter(self) -> None:
        self.filter.clear()
        if self.state_filter is not None:
            self.set_state_filter(None)

    def _update_filter_note(self) -> None:
        if not self.rows.filtered:
            self.filter_note.hide()
            return
        what = []
        if self.state_filter is not None:
            what.append(
                f"only agents that {STATE_LABEL[self.state_filter]}"
                if self.state_filter is AgentState.NEEDS_INPUT
                else f"only {STATE_LABEL[self.state_filter]} agents"
            )
        if self.rows.words:
            what.append(f"matching “{' '.join(self.rows.words)}”")
        shown = len(self.rows.shown_ids())
        text = f"Filtered: {' '.join(what)} ({shown} of {self.model.rowCount()})"
        hidden = sum(self.rows.hidden_counts.values())
        if hidden:
            text += f"; {hidden} that need you or failed shown beneath"
        self.filter_label.setText(text)
        self.filter_note.show()

    # --- actions ------

    def trigger(self, name: str) -> None:
        if self.rows.flush():
            self._ensure_current()
        agent_id = self.current_id()
        if agent_id is not None and is_answer(name):
            # The answer names the request the bar shows: never one that came after it.
            self._clear_transient()
            self.answer.emit(name, agent_id, self._shown_request or "")
            return
        if agent_id is not None and (name not in self.buttons or self.buttons[name].isEnabled()):
            self._clear_transient()
            self.action.emit(name, agent_id)

    def _answer(self, name: str) -> None:
        """A shortcut for an answer: only while the selected agent offers it."""
        button = self.answer_buttons.get(name)
        if button is not None and button.isVisible() and button.isEnabled():
            self.trigger(name)

    def show_status(self, text: str, transient: bool = False) -> None:
        """Show ``text`` under the list; a transient one goes at the next action or opening."""
        self.status.setText(text)
        self.status.setVisible(bool(text))
        self._status_transient = transient and bool(text)

    def _clear_transient(self) -> None:
        if self._status_transient:
            self.show_status("")

    def summary(self) -> str:
        """The header's words (its counts are links)."""
        return self._summary

    def set_summary(self, text: str) -> None:
        self._summary = text
        self.header.setText(summary_links(text, self.state_filter))

    def _refresh_mission_times(self) -> None:
        if self._mission_lines:  # "waiting 4 min" moves on while the list is open
            self.set_missions(self._mission_lines, time.time())

    def set_missions(self, lines: list[MissionLine], now: float) -> None:
        """Show the missions that wait for approval (none: the section is hidden)."""
        self._mission_lines = lines
        wanted = {m.id for m in lines}
        for mission_id in [m for m in self.mission_rows if m not in wanted]:
            box, _label = self.mission_rows.pop(mission_id)
            self.missions_layout.removeWidget(box)
            box.deleteLater()
        for line in lines:
            row = self.mission_rows.get(line.id)
            if row is None:
                box = QWidget(self.missions)
                box.setObjectName(f"mission-{line.id}")
                box.setStyleSheet(
                    f"#mission-{line.id} {{ background: #fff4e6; border: 1px solid #ffa94d;"
                    " border-radius: 4px; }"
                )
                hbox = QHBoxLayout(box)
                hbox.setContentsMargins(8, 4, 4, 4)
                label = QLabel(box)
                label.setTextFormat(Qt.TextFormat.PlainText)
                label.setStyleSheet("color: #212529;")
                label.setWordWrap(True)  # a long goal must not widen the list
                label.setMinimumWidth(120)
                button = QPushButton("Review…", box)
                button.setObjectName(f"review-{line.id}")
                button.setAutoDefault(False)
                button.setToolTip("Review the mission's report and each worker's change")
                button.clicked.connect(lambda _=False, m=line.id: self.review.emit(m))
                hbox.addWidget(label, 1)
                hbox.addWidget(button)
                self.missions_layout.addWidget(box)
                row = self.mission_rows[line.id] = (box, label)
            row[1].setText("◆ Mission to approve: " + line.text(now))
            row[1].setToolTip(line.goal)
        self.missions.setVisible(bool(lines))

    def focus_filter(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    def _filter_changed(self, text: str) -> None:
        self.rows.set_text(text)
        self._ensure_current()
        self._update_filter_note()

    def _ensure_current(self, *_: object) -> None:
        has_rows = self.rows.rowCount() > 0
        self.view.setVisible(has_rows or self.model.rowCount() > 0)
        self.empty.setVisible(self.model.rowCount() == 0)
        current = self.view.currentIndex()
        if has_rows and (not current.isValid() or self.rows.agent_at(current.row()) is None):
            rows = self._agent_rows()
            if rows:
                self.view.setCurrentIndex(self.rows.index(rows[0], 0))
        self._update_buttons()

    def _update_buttons(self) -> None:
        agent = self.current_agent()
        self._update_request(agent)
        for button in self.buttons.values():
            button.setEnabled(agent is not None)
        if agent is None:
            return
        self.buttons[Action.STOP].setEnabled(can_stop(agent))
        self.buttons[Action.RESUME].setEnabled(can_resume(agent))
        self.buttons[Action.RESUME].setText(action_label(agent))
        self.qactions[Action.RESUME].setText(action_label(agent))

    def _update_request(self, agent: Agent | None) -> None:
        request = agent.request if agent is not None else None
        self._shown_request = None
        if agent is None or request is None or agent.state is not AgentState.NEEDS_INPUT:
            self.request_bar.hide()
            return
        self._shown_request = request.id
        answered = bool(request.answered)
        self.request_label.setText(
            f"{agent.name} asks: {request.summary or agent.detail}"
            + (f" (answered: {request.answered})" if answered else "")
        )
        self.request_label.setToolTip(request.summary)
        permission = request.kind is RequestKind.PERMISSION
        for name, _text, _shortcut in ANSWERS:
            self.answer_buttons[name].setVisible(permission)
            self.answer_buttons[name].setEnabled(not answered)
        options = request.options if request.kind is RequestKind.QUESTION else ()
        for n, key in enumerate(OPTION_KEYS, start=1):
            button = self.answer_buttons[f"option:{n}"]
            if n <= len(options):
                button.setText(label(short(options[n - 1], 24)))
                button.setToolTip(
                    f"Answer “{options[n - 1]}” ({QKeySequence(key).toString(_NATIVE)})"
                )
                button.setEnabled(not answered)
            button.setVisible(n <= len(options))
        self.request_bar.show()

    def _context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if index.isValid():
            self.view.setCurrentIndex(index)
        menu = self.build_menu()
        if menu is not None:
            menu.exec(self.view.viewport().mapToGlobal(pos))

    def build_menu(self) -> QMenu | None:
        agent = self.current_agent()
        if agent is None:
            return None
        menu = QMenu(self)
        request = agent.request if agent.state is AgentState.NEEDS_INPUT else None
        if request is not None and not request.answered:
            if request.kind is RequestKind.PERMISSION:
                answers = [(n, t, k) for n, t, k in ANSWERS]
            else:
                answers = [
                    (f"option:{n}", label(short(o, 40)), OPTION_KEYS[n - 1] if n <= 6 else "")
                    for n, o in enumerate(request.options, start=1)
                ]
            for name, text, shortcut in answers:
                item = menu.addAction(text)
                if shortcut:
                    item.setShortcut(QKeySequence(shortcut))
                item.triggered.connect(
                    lambda _=False, n=name, a=agent.id, r=request.id: self.answer.emit(n, a, r)
                )
            if answers:
                menu.addSeparator()
        for name, text, shortcut in ACTIONS:
            item = menu.addAction(text if name is not Action.RESUME else action_label(agent))
            if shortcut:
                item.setShortcut(QKeySequence(shortcut))
            item.setEnabled(self.buttons[name].isEnabled())
            item.triggered.connect(lambda _=False, n=name: self.trigger(n))
        menu.addSeparator()
        for name, text in EXTRA_ACTIONS:
            item = menu.addAction(text)
            item.triggered.connect(lambda _=False, n=name: self.trigger(n))
        return menu

    # --- keyboard ------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.KeyPress or not isinstance(event, QKeyEvent):
            return False
        key = event.key()
        if watched is self.filter:
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
                self.view.setFocus()
                self._move(key)
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.trigger(Action.OPEN)
                return True
            if key == Qt.Key.Key_Escape:
                if self.rows.filtered:
                    self.clear_filter()
                else:
                    self.hide()
                return True
        elif watched is self.view:
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.trigger(Action.OPEN)
                return True
            if key == Qt.Key.Key_Escape:
                if self.rows.filtered:
                    self.clear_filter()
                else:
                    self.hide()
                return True
            if key in (Qt.Key.Key_Left, Qt.Key.Key_Right) and not event.modifiers():
                return self._fold_current(key == Qt.Key.Key_Left)
            rows = self._agent_rows()
            if key == Qt.Key.Key_Up and (not rows or self.view.currentIndex().row() <= rows[0]):
                self.filter.setFocus()
                return True
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
                self._move(key)
                return True
            text = event.text()
            if (
                text
                and text.isprintable()
                and not event.modifiers() & ~Qt.KeyboardModifier.ShiftModifier
            ):
                # Typing in the list goes on in the filter box.
                self.filter.setFocus()
                self.filter.insert(text)
                return True
        return False

    def _move(self, key: int) -> None:
        """Up/Down/PageUp/PageDown over the agents' rows (group headers are skipped)."""
        self.rows.flush()
        rows = self._agent_rows()
        if not rows:
            return
        row = self.view.currentIndex().row()
        at = rows.index(row) if row in rows else -1
        step = {
            Qt.Key.Key_Down: 1,
            Qt.Key.Key_Up: -1,
            Qt.Key.Key_PageDown: 10,
            Qt.Key.Key_PageUp: -10,
        }
        at = max(0, min(len(rows) - 1, at + step[Qt.Key(key)]))
        self._set_row(rows[at])

    # --- showing ------

    def show_near(self, anchor: QRect | None) -> None:
        """Show the panel next to ``anchor`` (the tray icon), inside the screen."""
        screen = (
            QGuiApplication.screenAt(anchor.center())
            if anchor is not None and anchor.isValid()
            else None
        )
        screen = screen or QGuiApplication.primaryScreen()
        area = screen.availableGeometry() if screen is not None else QRect(0, 0, 1280, 800)
        size = self.size()
        if self.prefs.pos is not None:
            x, y = self.prefs.pos  # where the person put it
        elif anchor is not None and anchor.isValid():
            x = anchor.center().x() - size.width() // 2
            # Below a top panel, above a bottom one.
            y = (
                anchor.bottom() + 4
                if anchor.center().y() < area.center().y()
                else anchor.top() - size.height() - 4
            )
        else:
            x = area.right() - size.width() - 8
            y = area.bottom() - size.height() - 8
        x = max(area.left(), min(x, area.right() - size.width()))
        y = max(area.top(), min(y, area.bottom() - size.height()))
        self._placing = True
        try:
            self.move(x, y)
            self.show()
        finally:
            self._placing = False
        self.raise_()
        self.activateWindow()
        self.view.setFocus()

    def showEvent(self, event: QShowEvent) -> None:
        # Opening the list starts at the most urgent agent (select() can move it after).
        self._clear_transient()
        self.rows.set_active(True)
        self.select_most_urgent()
        # Once laid out (the view may only now have its height): keep it in sight.
        QTimer.singleShot(0, self._scroll_to_current)
        self._repaint.start()
        self.view.viewport().update()
        super().showEvent(event)

    def hideEvent(self, event: QHideEvent) -> None:
        self._repaint.stop()
        # A filter must not outlive the look it was typed for: it would hide agents that
        # need you at the next opening.
        self.clear_filter()
        self.rows.set_active(False)
        self._save_prefs()
        super().hideEvent(event)
        self.hidden.emit()

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
        if active is not None and self.isAncestorOf(active):
            return
        if QApplication.activePopupWidget() is not None:
            return  # the row's context menu
        self.hidden_at = time.monotonic()
        self.hide()

    def set_popup(self, popup: bool) -> None:
        """Become the tray's popup (a tray appeared) or a plain window; a popup starts hidden."""
        if popup == self.popup:
            return
        self.popup = popup
        visible = self.isVisible()
        self.setWindowFlags(
            Qt.WindowType.Tool | Qt.WindowType.WindowStaysOnTopHint
            if popup
            else Qt.WindowType.Window
        )
        if popup:
            self.hide()
        elif visible:
            self.show()

    def closeEvent(self, event: QCloseEvent) -> None:
        super().closeEvent(event)
        if not self.popup and event.isAccepted():
            self.closed.emit()

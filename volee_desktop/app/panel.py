"""The agent list: a panel near the tray with a filter box, the rows and their actions.

The panel knows nothing of the daemon: it emits ``action(name, agent_id)`` and
the app's ``Actions`` carry it out.  Keyboard: type to filter, Down/Up to move,
Enter opens, Ctrl+R reply, Ctrl+S stop, Ctrl+E resume, Ctrl+T timeline,
Ctrl+Delete forget, Ctrl+F the filter, Escape clears the filter then hides (not a
pinned list); Shift/Ctrl-click and Ctrl+A select several agents for stop, resume and
forget;
Ctrl+N goes to the next agent that needs you, Ctrl+Shift+F to the next failed one;
Ctrl+Shift+N (or "New…") opens the New agent dialog (app/new_agent.py);
Ctrl+K compact rows, Ctrl+G the next grouping; Left folds the selected agent's group,
Right unfolds it.  While the selected agent needs you, its request shows above the
buttons with its answers: Ctrl+Y allow, Ctrl+D deny, or Alt+1… a question's options.

The list never hides what needs you: a filter (typed, or a count of the header
clicked) is said above the rows and shows the agents that need you or failed beneath
the ones it matches; closing the list clears it; opening the list selects the most
urgent agent.  Its size, position, compact mode, grouping, folds and pin are
remembered (``ListPrefs``).  Pinned ("Keep open") it is a plain window that stays when
the person clicks elsewhere; unpinned, the tray's popup, which closes when the focus
leaves volee, never for a window volee opened itself.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6.QtCore import (
    QItemSelectionModel,
    QModelIndex,
    QPoint,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QHideEvent,
    QKeySequence,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QListView,
    QMenu,
    QSizeGrip,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.model import Agent, RequestKind
from volee_desktop.core.states import AgentState

from .action_bar import MANY, ActionBar
from .actions import Action
from .agent_model import AgentListModel, AgentRole, IdRole
from .attention import MissionLine, is_answer
from .choices import MAX_OPTIONS, PERMISSION, choices
from .delegate import AgentDelegate
from .filter_note import FilterNote, StatusLine
from .list_keys import ListKeys
from .list_menu import agent_menu, show_menu_at
from .list_place import keep_place, restore_place
from .list_prefs import ListPrefs
from .list_rows import STATE_FILTERS, Grouping, ListRows
from .list_toolbar import COMPACT_KEY, GROUP_KEY, GROUPINGS, ListToolbar
from .list_window import ListWindow
from .many_bar import show_selection
from .missions_strip import MissionsStrip
from .request_bar import RequestBar
from .shortcuts import add_shortcut, keys
from .texts import STATE_LABEL, summary_links

# (what, shortcut, words): moving to the next agent that needs you or failed, and the
# list's modes.
JUMPS: tuple[tuple[AgentState, str, str], ...] = (
    (AgentState.NEEDS_INPUT, "Ctrl+N", "Next agent that needs you"),
    (AgentState.FAILED, "Ctrl+Shift+F", "Next failed agent"),
)
NEW_KEY = "Ctrl+Shift+N"
REPAINT_MS = 20_000  # "3 min" in the rows moves on while the panel is open


class AgentPanel(ListWindow):
    """The list of agents, most urgent first, with a filter and per-row actions."""

    action = Signal(str, str)  # (action, agent id)
    review = Signal(str)  # a mission id: open its approval dialog
    answer = Signal(str, str, str)  # (allow | deny | option:N, agent id, the request shown)
    many = Signal(str, list)  # (stop | resume | forget | allow, the selected agents' ids)
    new_agent = Signal()  # open the New agent dialog

    def __init__(
        self,
        model: AgentListModel,
        parent: QWidget | None = None,
        popup: bool = True,
        prefs_path: Path | None = None,
    ):
        super().__init__(ListPrefs.load(prefs_path), popup, parent)
        self.setObjectName("agentPanel")
        self.setWindowTitle("Agents — volee")
        self.model = model
        self.prefs_path = prefs_path
        self.rows = ListRows(
            model,
            self,
            folded=set(self.prefs.folded),
            active=False,  # until shown
            keep=self._keep_place,
            restore=self._restore_place,
        )
        self.state_filter: AgentState | None = None
        self._summary = ""

        self.header = QLabel(self)
        self.header.setObjectName("summary")
        self.header.setTextFormat(Qt.TextFormat.RichText)
        # Wrapped: eight counts and a reset time are wider than a 600 px list (cut at "3 don").
        self.header.setWordWrap(True)
        self.header.setToolTip("Click a count to show only those agents")
        self.header.linkActivated.connect(self._header_clicked)
        # Missions waiting for approval: above the agents, each with its Review button.
        self.missions = MissionsStrip(self)
        self.missions.review.connect(self.review.emit)
        self.mission_rows = self.missions.rows
        self.toolbar = ListToolbar(self, self.prefs.pinned)
        self.filter = self.toolbar.filter
        self.filter.textChanged.connect(self._filter_changed)
        self.compact = self.toolbar.compact
        self.compact.toggled.connect(self.set_compact)
        self.grouping = self.toolbar.grouping
        self.grouping.currentIndexChanged.connect(
            lambda i: self.set_grouping(Grouping(self.grouping.itemData(i)))
        )
        self.pin = self.toolbar.pin
        self.pin.toggled.connect(self.set_pinned)
        # What a filter hides, said while it is set (with a way out).
        self.filter_note = FilterNote(self)
        self.filter_note.clear.connect(self.clear_filter)
        self.filter_label = self.filter_note.label

        self.view = QListView(self)
        self.view.setObjectName("agents")
        self.view.setModel(self.rows)
        self.delegate = AgentDelegate(self.view)
        self.view.setItemDelegate(self.delegate)
        self.view.setUniformItemSizes(True)  # 500 rows: no per-row size queries
        self.view.clicked.connect(self._clicked)
        # Shift/Ctrl-click and Ctrl+A select several agents (headers are not selectable).
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.doubleClicked.connect(lambda _: self.trigger(Action.OPEN))
        self.view.selectionModel().currentChanged.connect(lambda *_: self._update_buttons())
        self.view.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        self.rows.rebuilt.connect(self._rebuilt)
        self.rows.dataChanged.connect(lambda *_: self._update_buttons())

        self.new = QToolButton(self)
        self.new.setObjectName("newAgent")
        self.new.setText("New…")
        self.new.setToolTip(f"Start a new agent ({keys(NEW_KEY)})")
        self.new.clicked.connect(self.new_agent.emit)
        add_shortcut(self, NEW_KEY, self.new_agent.emit, "New agent…")
        self.empty = QLabel(f"No agents yet. Start one with New… ({keys(NEW_KEY)}).", self)
        self.empty.setObjectName("empty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)

        self.action_bar = ActionBar(self, self.trigger)
        self.buttons = self.action_bar.buttons
        self.qactions = self.action_bar.qactions
        # The selected agent's request and its answers (Allow / Deny, or a question's options).
        self.request_bar = RequestBar(self)
        self.request_bar.chosen.connect(self.trigger)
        self.request_label = self.request_bar.label
        self.answer_buttons = self.request_bar.buttons
        for choice in (*PERMISSION, *choices(RequestKind.QUESTION, [""] * MAX_OPTIONS)):
            words = choice.text or f"Option {choice.name.partition(':')[2]}"
            qaction = add_shortcut(self, choice.key, partial(self._answer, choice.name), words)
            if choice in PERMISSION:
                self.qactions[choice.name] = qaction
        self._shown_request: str | None = None  # the id of the request the bar shows
        # Return is handled by the view and the filter box (eventFilter): the filter
        # box would otherwise swallow it.
        self.qactions[Action.OPEN].setShortcut(QKeySequence())
        add_shortcut(self, "Ctrl+F", self.focus_filter, "Filter")
        for state, shortcut, words in JUMPS:
            jump = add_shortcut(self, shortcut, partial(self.next_in, state), words)
            self.qactions[f"next-{state.value}"] = jump
        add_shortcut(self, COMPACT_KEY, self.compact.toggle)
        add_shortcut(self, GROUP_KEY, self.next_grouping)
        self.keys = ListKeys(
            self.filter,
            self.view,
            open_current=lambda: self.trigger(Action.OPEN),
            escape=self.escape,
            agent_rows=self._flushed_agent_rows,
            set_row=self._set_row,
            fold=self._fold_current,
        )

        self.status = StatusLine(self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        layout.addWidget(self.header)
        layout.addWidget(self.missions)
        self.toolbar.row.insertWidget(0, self.new)
        layout.addLayout(self.toolbar.row)
        layout.addWidget(self.filter_note)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.request_bar)
        # A popup has no frame to pull on: a grip in its corner resizes it.
        self.grip = QSizeGrip(self)
        bottom = self.action_bar.row
        bottom.addWidget(self.grip, 0, Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignRight)
        layout.addLayout(bottom)
        self.setMinimumSize(360, 300)
        self.resize(*self.prefs.size)
        self.compact.setChecked(self.prefs.compact)
        self.grouping.setCurrentIndex(self.toolbar.grouping_index(self.prefs.grouping))

        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self.view.viewport().update)
        self._repaint.timeout.connect(self.missions.refresh_times)
        self._ensure_current()

    # --- what is selected ------

    def current_agent(self) -> Agent | None:
        agent = self.view.currentIndex().data(AgentRole)
        return agent if isinstance(agent, Agent) else None

    def selected_ids(self) -> list[str]:
        """The selected agents, top to bottom (the current one alone when none is)."""
        rows = sorted(i.row() for i in self.view.selectionModel().selectedIndexes())
        ids = [i for r in rows if isinstance(i := self.rows.index(r, 0).data(IdRole), str)]
        if not ids:
            current = self.current_id()
            return [current] if current is not None else []
        return ids

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

    def _agent_rows(self) -> list[int]:
        return [r for r in range(self.rows.rowCount()) if self.rows.agent_at(r) is not None]

    def _flushed_agent_rows(self) -> list[int]:
        self.rows.flush()
        return self._agent_rows()

    def _keep_place(self) -> object:
        several = len(self.view.selectionModel().selectedIndexes()) > 1
        return keep_place(self.view, self.rows, self.selected_ids() if several else [])

    def _restore_place(self, place: object) -> None:
        restore_place(self.view, self.rows, place, self.isVisible())

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
        index = self.toolbar.grouping_index(grouping.value)
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
        self.filter_note.say(
            self.state_filter,
            self.rows.words,
            self.rows.matched,
            self.model.rowCount(),
            sum(self.rows.hidden_counts.values()),
        )

    # --- actions ------

    def trigger(self, name: str) -> None:
        if self.rows.flush():
            self._ensure_current()
        agent_id = self.current_id()
        selected = self.selected_ids()
        if (name in MANY or name == "allow") and len(selected) > 1:
            self._clear_transient()
            self.many.emit(name, selected)
            return
        if agent_id is not None and is_answer(name):
            # The answer names the request the bar shows: never one that came after it.
            self._clear_transient()
            self.answer.emit(name, agent_id, self._shown_request or "")
            return
        if agent_id is not None and (name not in self.buttons or self.buttons[name].isEnabled()):
            self._clear_transient()
            self.action.emit(name, agent_id)

    def _answer(self, name: str) -> None:
        """A shortcut for an answer: only while the selected agent offers it (on a selection,
        Allow that is off still says why)."""
        button = self.answer_buttons.get(name)
        several = name == "allow" and len(self.selected_ids()) > 1
        if button is not None and button.isVisible() and (button.isEnabled() or several):
            self.trigger(name)

    def show_status(self, text: str, transient: bool = False) -> None:
        """Show ``text`` under the list; a transient one goes at the next action or opening."""
        self.status.say(text, transient)

    def _clear_transient(self) -> None:
        self.status.clear_transient()

    def summary(self) -> str:
        """The header's words (its counts are links)."""
        return self._summary

    def set_summary(self, text: str) -> None:
        self._summary = text
        self.header.setText(summary_links(text, self.state_filter))

    def set_missions(self, lines: list[MissionLine], now: float) -> None:
        """Show the missions that wait for approval (none: the strip is hidden)."""
        self.missions.set_missions(lines, now)

    def focus_filter(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    def _filter_changed(self, text: str) -> None:
        self.rows.set_text(text)
        shown = self.rows.shown_ids()
        if text.strip() and shown and self.current_id() not in shown:
            # What is typed is what the person looks for: its first match, not an agent
            # shown beneath it (Down, Return then opened that one; issue 26's trial).
            self.select(shown[0])
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
        selected = [a for i in self.selected_ids() if (a := self.model.agent(i)) is not None]
        self.action_bar.update(agent, selected)

    def _update_request(self, agent: Agent | None) -> None:
        request = agent.request if agent is not None else None
        self._shown_request = None
        selected = [a for i in self.selected_ids() if (a := self.model.agent(i)) is not None]
        if len(selected) > 1:  # the bar speaks for the selection (app/many_bar.py)
            show_selection(self.request_bar, self.request_label, self.answer_buttons, selected)
            return
        self.request_bar.reset_allow()
        if agent is None or request is None or agent.state is not AgentState.NEEDS_INPUT:
            self.request_bar.hide()
            return
        self._shown_request = request.id
        self.request_bar.show_request(
            f"{agent.name} asks: {request.summary or agent.detail}"
            + (f" (answered: {request.answered})" if request.answered else ""),
            request.summary,
            choices(request.kind, request.options),
            enabled=not request.answered,
        )

    def _context_menu(self, pos: QPoint) -> None:
        show_menu_at(self.view, pos, self.build_menu)

    def build_menu(self) -> QMenu | None:
        agent = self.current_agent()
        if agent is None:
            return None
        several = len(self.selected_ids()) > 1 and not self.request_bar.isHidden()
        return agent_menu(
            self,
            agent,
            selection_allow=self.answer_buttons["allow"] if several else None,
            bar=self.action_bar,
            trigger=self.trigger,
            answer=self.answer.emit,
        )

    # --- keyboard ------

    def escape(self) -> None:
        """Escape: clear the filter, else close the list (a pinned list stays: its close
        button closes it)."""
        if self.rows.filtered:
            self.clear_filter()
        elif not self.pinned:
            self.hide()

    # --- showing ------

    def showEvent(self, event: QShowEvent) -> None:
        if self._reflagging:
            super().showEvent(event)
            return
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
        if self._reflagging:
            super().hideEvent(event)
            return
        self._repaint.stop()
        # A filter must not outlive the look it was typed for: it would hide agents that
        # need you at the next opening.
        self.clear_filter()
        self.rows.set_active(False)
        self._save_prefs()
        super().hideEvent(event)
        self.hidden.emit()

    def set_pinned(self, pinned: bool) -> None:
        """Keep the list open as a window (remembered across starts), or make it the popup
        that closes when the person clicks elsewhere again."""
        if self.pin.isChecked() != pinned:
            self.pin.setChecked(pinned)  # comes back here through toggled
            return
        if self.prefs.pinned == pinned:
            return
        self.prefs.pinned = pinned
        self._save_prefs()
        self._reflag()

    def focus_first(self) -> None:
        self.view.setFocus()

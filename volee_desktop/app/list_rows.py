"""What the list shows, row by row: agents grouped (by state or project), folded, filtered.

``ListRows`` sits over ``AgentListModel`` (every agent, most urgent first) and lays
out the rows the view paints: group headers with their counts, the agents of each
group in the model's urgency order, and, while a filter is set, the agents that need
you or have failed that the filter left out, beneath it ("and 2 that need you,
filtered out"): a filter never hides what needs you.  A folded group keeps showing
those too; while a filter is set every group is open (a fold must not hide what the
filter found: "working" folded said "0 of 47" while 39 matched).

The layout is rebuilt at most once per turn of the event loop (a burst of a thousand
events is one rebuild) and at most ten times a second (200 events/s move rows 200 times),
only while the list is on screen (``set_active``), keeping the current row and the scroll
position; ``flush()`` rebuilds at once.  Between a change and the rebuild a row still
shows its agent's latest data: rows hold agent ids, not copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)

from volee_desktop.core.model import Agent
from volee_desktop.core.states import AgentState

from .agent_model import AgentListModel, AgentRole, IdRole, MachineRole, MissionRole, SearchRole
from .texts import STATE_LABEL, plural_state, search_text

GroupRole = Qt.ItemDataRole.UserRole + 10

Index = QModelIndex | QPersistentModelIndex

#: States a filter never hides and a fold never folds away.
ALWAYS_SHOWN = frozenset({AgentState.NEEDS_INPUT, AgentState.FAILED})
#: The header's counts filter to these states ("43 working" counts launching ones too).
STATE_FILTERS: dict[AgentState, frozenset[AgentState]] = {
    AgentState.WORKING: frozenset({AgentState.WORKING, AgentState.LAUNCHING}),
}
HIDDEN_KEY = "hidden:"
MIN_INTERVAL = 0.1  # seconds between two rebuilds while events stream in


class Grouping(StrEnum):
    """How the list groups its agents."""

    NONE = "none"
    STATE = "state"
    PROJECT = "project"
    MACHINE = "machine"  # the machine each agent is on (docs/machines.md)


@dataclass(frozen=True)
class GroupHeader:
    """A group's header row: its words, how many agents it holds, whether it is folded."""

    key: str
    title: str
    count: int
    folded: bool = False
    path: str = ""  # a project group's folder
    hidden: bool = False  # the "filtered out" section under a filter
    shown_folded: int = 0  # agents shown although folded (they need you or failed)

    def text(self) -> str:
        if self.hidden:
            return self.title
        n = f"{self.count}"
        if self.folded and self.shown_folded:
            n = f"{self.count}, {self.count - self.shown_folded} folded"
        return f"{self.title} ({n})"


def hidden_words(n: int, state: AgentState) -> str:
    """ "2 that need you", "1 failed": what a filter left out, beneath it."""
    if state is AgentState.NEEDS_INPUT:
        return f"{n} that {'needs' if n == 1 else 'need'} you"
    return plural_state(n, state)


def project_key(agent: Agent) -> tuple[str, str, str]:
    """(key, title, path) of an agent's project: its repository, else its folder."""
    folder = agent.worktree or agent.cwd
    if agent.repo:
        name = agent.repo.rstrip("/").rsplit("/", 1)[-1] or agent.repo
        return f"repo:{agent.repo}", name, agent.repo
    if folder:
        name = folder.rstrip("/").rsplit("/", 1)[-1] or folder
        return f"folder:{folder}", name, folder
    return "folder:", "no folder", ""


def state_key(agent: Agent) -> tuple[str, str, str]:
    """By state, in the rows' words: a turn that ended on a denial is grouped as "denied",
    not among the done ones (the header counts it so too)."""
    if agent.outcome:
        return f"state:{agent.outcome}", agent.outcome, ""
    state = AgentState.WORKING if agent.state is AgentState.LAUNCHING else agent.state
    return f"state:{state.value}", STATE_LABEL[state], ""


def machine_key(label: str) -> tuple[str, str, str]:
    """(key, title, path) of the machine a row names (``devbox``, ``devbox unreachable since
    14:02``; empty: this machine)."""
    if not label:
        return "machine:", "this machine", ""
    name = label.split(" ", 1)[0]  # a machine's name has no space (docs/machines.md)
    return f"machine:{name}", label, ""


class ListRows(QAbstractListModel):
    """The rows the list's view paints (see the module's docstring)."""

    rebuilt = Signal()

    def __init__(
        self,
        source: AgentListModel,
        parent: QObject | None = None,
        *,
        folded: set[str] | None = None,
        active: bool = True,
        keep: Callable[[], object] | None = None,
        restore: Callable[[object], None] | None = None,
    ) -> None:
        """``folded``: the groups folded at first; ``active``: rebuilt as the source changes
        (not while the list is hidden); ``keep`` and ``restore``: the panel's place
        (selection, scroll), kept across a rebuild."""
        super().__init__(parent)
        self.source = source
        self.grouping = Grouping.NONE
        self.folded: set[str] = set(folded or ())
        self.words: list[str] = []
        self.states: frozenset[AgentState] = frozenset()  # empty: every state
        self._rows: list[tuple[str, str]] = []  # ("a", agent id) | ("g", group key)
        self._groups: dict[str, GroupHeader] = {}
        self._row_of: dict[str, int] = {}
        self.hidden_counts: dict[AgentState, int] = {}
        self.matched = 0  # agents the filter lets through (all of them, folded or not)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.flush)
        self._dirty = False
        self.active = active
        self._last = 0.0  # monotonic time of the last rebuild
        self.keep = keep
        self.restore = restore
        for signal in (
            source.rowsInserted,
            source.rowsRemoved,
            source.rowsMoved,
            source.modelReset,
            source.layoutChanged,
        ):
            signal.connect(self.schedule)
        source.dataChanged.connect(self._source_data)
        self.rebuild()

    # --- settings ------

    @property
    def filtered(self) -> bool:
        return bool(self.words or self.states)

    def set_grouping(self, grouping: Grouping) -> None:
        if grouping is not self.grouping:
            self.grouping = grouping
            self.flush(force=True)

    def set_text(self, text: str) -> None:
        words = text.lower().split()
        if words != self.words:
            self.words = words
            self.flush(force=True)

    def set_states(self, states: frozenset[AgentState]) -> None:
        if states != self.states:
            self.states = states
            self.flush(force=True)

    def toggle_fold(self, key: str) -> None:
        if key.startswith(HIDDEN_KEY):
            return
        self.folded.symmetric_difference_update({key})
        self.flush(force=True)

    # --- building ------

    def set_active(self, active: bool) -> None:
        """On screen (rebuild as things change) or not (rebuild when shown again)."""
        self.active = active
        if not active:
            # A rebuild still pending would run on a list nobody shows, maybe after its view
            # was deleted (the app closing): a crash at random in the tests (SIGSEGV).
            self._timer.stop()
        elif self._dirty:
            self.flush()

    @property
    def pending(self) -> bool:
        """Whether a rebuild is scheduled (its timer runs)."""
        return self._timer.isActive()

    def schedule(self, *_: object) -> None:
        self._dirty = True
        if self.active and not self._timer.isActive():
            wait = self._last + MIN_INTERVAL - time.monotonic()
            self._timer.start(max(0, round(wait * 1000)))

    def flush(self, force: bool = False) -> bool:
        """Rebuild now if anything changed since the last rebuild (``force``: anyway);
        whether it did."""
        self._timer.stop()
        if not (self._dirty or force):
            return False
        self._last = time.monotonic()
        place = self.keep() if self.keep is not None else None
        self.beginResetModel()
        self.rebuild()
        self.endResetModel()
        if self.restore is not None:
            self.restore(place)
        self.rebuilt.emit()
        return True

    def _accepts(self, agent: Agent) -> bool:
        if self.states and agent.state not in self.states:
            return False
        if self.words:
            mission = self.source.registry.missions.get(agent.mission) if agent.mission else None
            haystack = search_text(agent, mission)
            return all(w in haystack for w in self.words)
        return True

    def rebuild(self) -> None:
        self._dirty = False
        agents = [a for a in (self.source.agent_at(r) for r in range(self.source.rowCount())) if a]
        shown: list[Agent] = []
        hidden: list[Agent] = []
        for agent in agents:
            if self._accepts(agent):
                shown.append(agent)
            elif agent.state in ALWAYS_SHOWN:
                hidden.append(agent)
        rows: list[tuple[str, str]] = []
        groups: dict[str, GroupHeader] = {}
        if self.grouping is Grouping.NONE:
            rows = [("a", a.id) for a in shown]
        else:
            source = self.source
            keyer: Callable[[Agent], tuple[str, str, str]] = {
                Grouping.STATE: state_key,
                Grouping.PROJECT: project_key,
                Grouping.MACHINE: lambda a: machine_key(source.machine_label(a.id)),
            }[self.grouping]
            members: dict[str, list[Agent]] = {}
            titles: dict[str, tuple[str, str]] = {}
            for agent in shown:  # urgency order: groups come in the order of their first
                key, title, path = keyer(agent)
                members.setdefault(key, []).append(agent)
                titles.setdefault(key, (title, path))
            for key, group in members.items():
                folded = key in self.folded and not self.filtered
                visible = [a for a in group if not folded or a.state in ALWAYS_SHOWN]
                title, path = titles[key]
                groups[key] = GroupHeader(
                    key,
                    title,
                    len(group),
                    folded=folded,
                    path=path,
                    shown_folded=len(visible) if folded else 0,
                )
                rows.append(("g", key))
                rows.extend(("a", a.id) for a in visible)
        self.matched = len(shown)
        self.hidden_counts = {}
        for agent in hidden:
            self.hidden_counts[agent.state] = self.hidden_counts.get(agent.state, 0) + 1
        if hidden:
            words = " and ".join(
                hidden_words(n, state)
                for state, n in sorted(self.hidden_counts.items(), key=lambda kv: kv[0].urgency)
            )
            key = HIDDEN_KEY + "filtered"
            groups[key] = GroupHeader(key, f"and {words}, filtered out", len(hidden), hidden=True)
            rows.append(("g", key))
            rows.extend(("a", a.id) for a in hidden)
        self._rows = rows
        self._groups = groups
        self._row_of = {f"{kind}:{ident}": i for i, (kind, ident) in enumerate(rows)}

    def _source_data(self, top: QModelIndex, bottom: QModelIndex, *_: object) -> None:
        if self._dirty:
            return  # the rebuild repaints everything
        for r in range(top.row(), bottom.row() + 1):
            agent = self.source.agent_at(r)
            if agent is None:
                continue
            row = self._row_of.get(f"a:{agent.id}")
            if row is None:
                if self.filtered or self.grouping is not Grouping.NONE:
                    self.schedule()  # it may enter the filter, or change groups
                continue
            if self.filtered or self.grouping is not Grouping.NONE:
                self.schedule()  # its group or the filter's verdict may have changed
            idx = self.index(row)
            self.dataChanged.emit(idx, idx)

    # --- queries ------

    def agent_ids(self) -> list[str]:
        """The agents on the list, top to bottom (filtered-out ones beneath included)."""
        return [ident for kind, ident in self._rows if kind == "a"]

    def shown_ids(self) -> list[str]:
        """The agents the filter and the folds let through (not the ones shown beneath)."""
        out = []
        for kind, ident in self._rows:
            if kind == "g" and ident.startswith(HIDDEN_KEY):
                break
            if kind == "a":
                out.append(ident)
        return out

    def row_of(self, agent_id: str) -> int | None:
        return self._row_of.get(f"a:{agent_id}")

    def key_at(self, row: int) -> str | None:
        """What a row shows, as a key that outlives rebuilds ("a:<agent>", "g:<group>")."""
        if 0 <= row < len(self._rows):
            kind, ident = self._rows[row]
            return f"{kind}:{ident}"
        return None

    def row_of_key(self, key: str) -> int | None:
        return self._row_of.get(key)

    def group_row(self, key: str) -> int | None:
        return self._row_of.get(f"g:{key}")

    def header(self, row: int) -> GroupHeader | None:
        if 0 <= row < len(self._rows) and self._rows[row][0] == "g":
            return self._groups.get(self._rows[row][1])
        return None

    def agent_at(self, row: int) -> Agent | None:
        if 0 <= row < len(self._rows) and self._rows[row][0] == "a":
            return self.source.agent(self._rows[row][1])
        return None

    def groups(self) -> list[GroupHeader]:
        return [self._groups[ident] for kind, ident in self._rows if kind == "g"]

    # --- QAbstractListModel ------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: Index) -> Qt.ItemFlag:
        flags = super().flags(index)
        if self.header(index.row()) is not None:
            return Qt.ItemFlag.ItemIsEnabled
        return flags

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        kind, ident = self._rows[index.row()]
        if kind == "g":
            header = self._groups.get(ident)
            if header is None:
                return None
            if role == GroupRole:
                return header
            if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
                return header.text()
            if role == Qt.ItemDataRole.ToolTipRole:
                return header.path or header.text()
            return None
        row = self.source.row_of(ident)
        if row is None:
            return None
        if role == IdRole:
            return ident
        if role in (AgentRole, MissionRole, SearchRole, MachineRole):
            return self.source.data(self.source.index(row), role)
        if role < Qt.ItemDataRole.UserRole:
            return self.source.data(self.source.index(row), role)
        return None

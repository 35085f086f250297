"""The agent list as a Qt model: most urgent first, updated row by row from the live feed.

Rows are kept in ``Registry.by_urgency`` order.  An event moves, inserts,
removes or repaints only the rows of the agents it changed (no model reset per
event), so the list stays smooth with hundreds of agents; ``list_rows.ListRows``
lays out what the list shows (groups, folds, filters) over it.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from volee_desktop.core.model import Agent
from volee_desktop.core.registry import Registry
from volee_desktop.core.tables import urgency_key

from .live import Change
from .outcomes import Get, OutcomeStore, Spawn
from .texts import context_text, detail_text, search_text, state_label, tooltip_text

AgentRole = Qt.ItemDataRole.UserRole + 1
IdRole = Qt.ItemDataRole.UserRole + 2
SearchRole = Qt.ItemDataRole.UserRole + 3
MissionRole = Qt.ItemDataRole.UserRole + 4
OutcomeRole = Qt.ItemDataRole.UserRole + 5  # "plan 3/7 · 3 files +120 −14" (app/outcomes.py)
MachineRole = Qt.ItemDataRole.UserRole + 6  # "devbox" / "devbox unreachable since 14:02" / ""

Index = QModelIndex | QPersistentModelIndex


class AgentListModel(QAbstractListModel):
    """Every agent, most urgent first; a ``LiveObserver``."""

    agent_changed = Signal(str)  # an agent's row changed (its id): dialogs showing it refresh

    def __init__(
        self,
        parent: QObject | None = None,
        outcome: Get | None = None,
        spawn: Spawn | None = None,
    ) -> None:
        """``outcome`` asks the daemon what an agent's work came to, run with ``spawn``
        (``outcomes.OutcomeStore``; None: the rows say none)."""
        super().__init__(parent)
        self._rows: list[Agent] = []
        self._keys: list[tuple[int, float, str]] = []
        self._index: dict[str, int] = {}
        self.registry = Registry()
        self.clock: Callable[[], float] = time.time
        #: The other machine an agent is on, as its row says it ("" for this machine).
        self.machine_label: Callable[[str], str] = lambda _agent_id: ""
        # What each agent's work came to (plan, change), as the daemon said.
        self.outcomes = OutcomeStore(self, outcome, spawn)
        self.outcomes.changed.connect(self._outcome_changed)

    def _outcome_changed(self, agent_id: str) -> None:
        row = self._index.get(agent_id)
        if row is not None:
            idx = self.index(row)
            self.dataChanged.emit(idx, idx)

    # --- LiveObserver -------------------------------------------------------------------------

    def on_reset(self, registry: Registry) -> None:
        self.beginResetModel()
        self.registry = registry
        self._rows = registry.by_urgency()
        self._keys = [urgency_key(a) for a in self._rows]
        self._reindex(0)
        self.endResetModel()

    def on_change(self, change: Change) -> None:
        for before, after in change.agents:
            if after is None:
                if before is not None:
                    self._remove(before.id)
            elif after.id in self._index:
                self._update(after)
            else:
                self._insert(after)
            changed = after or before
            if changed is not None:
                self.agent_changed.emit(changed.id)
        if change.mission is not None and change.mission[1] is not None:
            # Rows show their mission's goal: repaint the mission's agents.
            mission_id = change.mission[1].id
            for row, agent in enumerate(self._rows):
                if agent.mission == mission_id:
                    idx = self.index(row)
                    self.dataChanged.emit(idx, idx)

    # --- row bookkeeping ------

    def _reindex(self, start: int, stop: int | None = None) -> None:
        end = len(self._rows) if stop is None else min(stop, len(self._rows))
        if start == 0 and stop is None:
            self._index = {}
        for i in range(start, end):
            self._index[self._rows[i].id] = i

    def _insert(self, agent: Agent) -> None:
        key = urgency_key(agent)
        row = bisect.bisect_left(self._keys, key)
        self.beginInsertRows(QModelIndex(), row, row)
        self._rows.insert(row, agent)
        self._keys.insert(row, key)
        self._reindex(row)
        self.endInsertRows()

    def _remove(self, agent_id: str) -> None:
        row = self._index.get(agent_id)
        if row is None:
            return
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._rows[row]
        del self._keys[row]
        del self._index[agent_id]
        self._reindex(row)
        self.endRemoveRows()

    def _update(self, agent: Agent) -> None:
        old = self._index[agent.id]
        key = urgency_key(agent)
        if key == self._keys[old]:
            self._rows[old] = agent
            idx = self.index(old)
            self.dataChanged.emit(idx, idx)
            return
        # Where it goes among the other rows (positions as if it were taken out).
        keys = self._keys
        new = bisect.bisect_left(keys, key, 0, old) if key < keys[old] else None
        if new is None:
            new = bisect.bisect_left(keys, key, old + 1) - 1
        if new == old:
            self._rows[old] = agent
            self._keys[old] = key
            idx = self.index(old)
            self.dataChanged.emit(idx, idx)
            return
        dest = new if new < old else new + 1
        self.beginMoveRows(QModelIndex(), old, old, QModelIndex(), dest)
        del self._rows[old]
        del self._keys[old]
        self._rows.insert(new, agent)
        self._keys.insert(new, key)
        lo, hi = min(old, new), max(old, new) + 1
        self._reindex(lo, hi)
        self.endMoveRows()
        idx = self.index(new)
        self.dataChanged.emit(idx, idx)

    # --- queries ------

    def agent_at(self, row: int) -> Agent | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def row_of(self, agent_id: str) -> int | None:
        return self._index.get(agent_id)

    def agent(self, agent_id: str) -> Agent | None:
        row = self._index.get(agent_id)
        return self._rows[row] if row is not None else None

    def ids(self) -> list[str]:
        return [a.id for a in self._rows]

    # --- QAbstractListModel -------------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        agent = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return agent.name
        if role == MachineRole:
            return self.machine_label(agent.id)
        if role == AgentRole:
            return agent
        if role == IdRole:
            return agent.id
        if role == MissionRole:
            return self.registry.missions.get(agent.mission) if agent.mission else None
        if role == SearchRole:
            mission = self.registry.missions.get(agent.mission) if agent.mission else None
            where = self.machine_label(agent.id)
            return f"{search_text(agent, mission)} {where}".rstrip()
        if role == Qt.ItemDataRole.AccessibleTextRole:
            said = f"{agent.name}, {state_label(agent)}, {detail_text(agent)}"
            where = self.machine_label(agent.id)
            said = f"{said}, on {where}" if where else said
            return f"{said}, {context_text(agent)}" if agent.context_share is not None else said
        if role == OutcomeRole:
            return self.outcomes.text(agent.id)
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = tooltip_text(agent, self.clock())
            outcome = self.outcomes.text(agent.id)
            return f"{tip}\n{outcome}" if outcome else tip
        return None

"""Where the person is in the list (the selected agents, the row at the top of the view and
where it is) kept across a rebuild of its rows: rows moving above it do not move what the
person looks at."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QPoint
from PySide6.QtWidgets import QListView

from .agent_model import IdRole
from .list_rows import ListRows


def keep_place(view: QListView, rows: ListRows, selected: list[str]) -> object:
    """The current agent, the row at the top of the view with where it is, the scroll and
    ``selected`` (the agents of a multi-selection; [] for one)."""
    top = view.indexAt(QPoint(1, 1))
    key = rows.key_at(top.row()) if top.isValid() else None
    offset = view.visualRect(top).top() if top.isValid() else 0
    current = view.currentIndex().data(IdRole)
    agent_id = current if isinstance(current, str) else None
    return (agent_id, key, offset, view.verticalScrollBar().value(), selected)


def restore_place(view: QListView, rows: ListRows, place: object, shown: bool) -> None:
    """After a rebuild: the same agent selected, and the row that was at the top of the view
    where it was (setting the current row would scroll to it: not while the person looks
    elsewhere); ``shown``: whether the list is on screen (then laid out at once)."""
    if not isinstance(place, tuple):
        return
    agent_id, key, offset, scroll, selected = place
    row = rows.row_of(agent_id) if agent_id is not None else None
    if shown:
        view.doItemsLayout()  # the scroll range of the new rows, now
    view.setAutoScroll(False)
    try:
        if row is not None:
            view.selectionModel().setCurrentIndex(
                rows.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
            )
        reselect(view, rows, selected)
    finally:
        view.setAutoScroll(True)
    bar = view.verticalScrollBar()
    bar.setValue(scroll)
    top = rows.row_of_key(key) if isinstance(key, str) else None
    if top is not None and scroll > 0:
        moved = view.visualRect(rows.index(top, 0)).top() - offset
        bar.setValue(bar.value() + moved)


def reselect(view: QListView, rows: ListRows, ids: list[str]) -> None:
    """Select these agents again after a rebuild (a multi-selection outlives changes)."""
    model = view.selectionModel()
    for agent_id in ids:
        row = rows.row_of(agent_id)
        if row is not None:
            model.select(rows.index(row, 0), QItemSelectionModel.SelectionFlag.Select)

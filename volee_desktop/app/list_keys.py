"""The list's keys in its filter box and its rows: Down/Up/PageDown/PageUp move over the
agents (from the filter box too: Down goes to the first agent in view, the way back from
Up on the first row, not one past the selected one), Return opens, Escape clears the
filter then closes, Left and Right fold and unfold the selected agent's group, Up on the
first row goes back to the filter box, and typing in the rows goes on in the filter box."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLineEdit, QListView

MOVES = (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp)
STEPS = {Qt.Key.Key_Down: 1, Qt.Key.Key_Up: -1, Qt.Key.Key_PageDown: 10, Qt.Key.Key_PageUp: -10}
ENTER = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


def step(rows: list[int], row: int, key: int) -> int:
    """The agent's row a move key goes to from ``row`` over ``rows`` (the agents' rows, not
    empty; from a row that is not one of them, as from before the first)."""
    at = rows.index(row) if row in rows else -1
    return rows[max(0, min(len(rows) - 1, at + STEPS[Qt.Key(key)]))]


class ListKeys(QObject):
    """An event filter on the filter box and the view that does what their keys mean."""

    def __init__(
        self,
        box: QLineEdit,
        view: QListView,
        *,
        open_current: Callable[[], None],
        escape: Callable[[], None],
        agent_rows: Callable[[], list[int]],
        set_row: Callable[[int], None],
        fold: Callable[[bool], bool],
    ) -> None:
        super().__init__(box)
        self.box = box
        self.view = view
        self.open_current = open_current
        self.escape = escape
        self.agent_rows = agent_rows  # the agents' rows, top to bottom (headers skipped)
        self.set_row = set_row  # select that row alone and show it
        self.fold = fold  # True: fold the current agent's group; False: unfold; done?
        box.installEventFilter(self)
        view.installEventFilter(self)

    def move(self, key: int) -> None:
        """Up/Down/PageUp/PageDown over the agents' rows (group headers are skipped)."""
        rows = self.agent_rows()
        if rows:
            self.set_row(step(rows, self.view.currentIndex().row(), key))

    def to_first_in_view(self) -> None:
        """Down from the filter box: the first agent whose row is in view (the top one)."""
        rows = self.agent_rows()
        model = self.view.model()
        shown = [r for r in rows if self.view.visualRect(model.index(r, 0)).top() >= 0]
        if rows:
            self.set_row(shown[0] if shown else rows[0])

    def at_first(self) -> bool:
        """Whether the current row is the first agent's (or there is none): Up goes to the
        filter box."""
        rows = self.agent_rows()
        return not rows or self.view.currentIndex().row() <= rows[0]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.KeyPress or not isinstance(event, QKeyEvent):
            return False
        key = event.key()
        if watched is self.box:
            if key in MOVES:
                self.view.setFocus()
                if key == Qt.Key.Key_Down:
                    self.to_first_in_view()
                else:
                    self.move(key)
                return True
            return self._open_or_escape(key)
        if watched is not self.view:
            return False
        if self._open_or_escape(key):
            return True
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right) and not event.modifiers():
            return self.fold(key == Qt.Key.Key_Left)
        if key == Qt.Key.Key_Up and self.at_first():
            self.box.setFocus()
            return True
        if key in MOVES:
            self.move(key)
            return True
        text = event.text()
        if (
            text
            and text.isprintable()
            and not event.modifiers() & ~Qt.KeyboardModifier.ShiftModifier
        ):
            # Typing in the list goes on in the filter box.
            self.box.setFocus()
            self.box.insert(text)
            return True
        return False

    def _open_or_escape(self, key: int) -> bool:
        if key in ENTER:
            self.open_current()
            return True
        if key == Qt.Key.Key_Escape:
            self.escape()
            return True
        return False

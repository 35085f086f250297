"""The row above the list's agents: the filter box, the grouping, Compact and Keep open (the
panel puts its New… first and connects each to what it does)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QToolButton, QWidget

from .list_rows import Grouping
from .shortcuts import keys

COMPACT_KEY = "Ctrl+K"
GROUP_KEY = "Ctrl+G"
GROUPINGS: tuple[tuple[Grouping, str], ...] = (
    (Grouping.NONE, "No groups"),
    (Grouping.STATE, "By state"),
    (Grouping.PROJECT, "By project"),
    (Grouping.MACHINE, "By machine"),
)


class ListToolbar:
    """The widgets (made on ``owner``) and ``row``, the layout that holds them."""

    def __init__(self, owner: QWidget, pinned: bool) -> None:
        self.filter = QLineEdit(owner)
        self.filter.setObjectName("filter")
        self.filter.setAccessibleName("Filter agents")  # a screen reader does not say placeholders
        # Short: Qt cuts a placeholder wider than the box (the tooltip says what it matches).
        self.filter.setPlaceholderText("Filter agents…")
        self.filter.setToolTip("Filter agents by name, state, detail, folder or mission")
        self.filter.setClearButtonEnabled(True)
        self.compact = QToolButton(owner)
        self.compact.setObjectName("compact")
        self.compact.setText("Compact")
        self.compact.setCheckable(True)
        self.compact.setToolTip(f"One line per agent ({keys(COMPACT_KEY)})")
        self.grouping = QComboBox(owner)
        self.grouping.setObjectName("grouping")
        for grouping, words in GROUPINGS:
            self.grouping.addItem(words, grouping.value)
        self.grouping.setToolTip(f"Group the agents ({keys(GROUP_KEY)}: the next grouping)")
        self.pin = QToolButton(owner)
        self.pin.setObjectName("pin")
        self.pin.setText("Keep open")
        self.pin.setCheckable(True)
        self.pin.setChecked(pinned)
        self.pin.setToolTip(
            "Keep the list open as a window: it stays when you click elsewhere and closes "
            "with its close button"
        )
        self.row = QHBoxLayout()
        self.row.setSpacing(4)
        self.row.addWidget(self.filter, 1)
        self.row.addWidget(self.grouping)
        self.row.addWidget(self.compact)
        self.row.addWidget(self.pin)

    def grouping_index(self, value: str) -> int:
        """The grouping box's entry of a grouping (by its value)."""
        return next(i for i, (g, _w) in enumerate(GROUPINGS) if g.value == value)

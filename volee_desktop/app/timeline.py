"""An agent's timeline (``agents.timeline``): its events in order, volee's decisions stand out."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

# Interruptions, restarts and volee's recovery decisions: what the person looks for.
NOTABLE = frozenset(
    {
        "interruption-detected",
        "recovery-decided",
        "restart-scheduled",
        "restart-cancelled",
        "program-exited",
        "stop-requested",
        "host-started",
        "host-adopted",
    }
)


def when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def entry_text(entry: dict[str, Any]) -> str:
    """The daemon's sentence for an entry, or a readable fallback from its fields."""
    text = entry.get("text")
    if isinstance(text, str) and text:
        return text
    skip = {"seq", "at", "type", "agent", "text"}
    return ", ".join(f"{k}={v}" for k, v in entry.items() if k not in skip and v not in (None, ""))


class TimelineDialog(QDialog):
    """The events of one agent, oldest first."""

    def __init__(self, name: str, entries: list[dict[str, Any]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("timeline")
        self.setWindowTitle(f"Timeline of {name} — volee")
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["When", "What", "Detail"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        bold = QFont()
        bold.setBold(True)
        for entry in entries:
            kind = str(entry.get("type", ""))
            at = entry.get("at")
            item = QTreeWidgetItem(
                [when(at) if isinstance(at, int | float) else "", kind, entry_text(entry)]
            )
            item.setToolTip(2, entry_text(entry))
            if kind in NOTABLE:
                for col in range(3):
                    item.setFont(col, bold)
                if kind in ("interruption-detected", "recovery-decided"):
                    item.setForeground(1, QBrush(QColor("#e8590c")))
            self.tree.addTopLevelItem(item)
        for col in range(2):
            self.tree.resizeColumnToContents(col)
        last = self.tree.topLevelItem(len(entries) - 1) if entries else None
        if last is not None:
            self.tree.scrollToItem(last)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        count = QLabel(f"{len(entries)} events, oldest first", self)
        layout.addWidget(count)
        layout.addWidget(self.tree, 1)
        layout.addWidget(buttons)
        self.resize(820, 440)

    def rows(self) -> list[tuple[str, str]]:
        """(type, text) of every row, for tests."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None:
                out.append((item.text(1), item.text(2)))
        return out

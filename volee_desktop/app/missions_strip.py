"""The missions waiting for approval, above the list's agents: one framed line each ("◆ Mission
to approve: …, waiting 4 min") with its Review… button; hidden while none waits."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .attention import MissionLine


class MissionsStrip(QWidget):
    """A line and a Review… button per mission to approve; ``review(mission id)``."""

    review = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("missions")
        self.column = QVBoxLayout(self)
        self.column.setContentsMargins(0, 0, 0, 0)
        self.column.setSpacing(4)
        self.hide()
        self.rows: dict[str, tuple[QWidget, QLabel]] = {}
        self.lines: list[MissionLine] = []

    def refresh_times(self) -> None:
        if self.lines:  # "waiting 4 min" moves on while the list is open
            self.set_missions(self.lines, time.time())

    def set_missions(self, lines: list[MissionLine], now: float) -> None:
        """Show the missions that wait for approval (none: the strip is hidden)."""
        self.lines = lines
        wanted = {m.id for m in lines}
        for mission_id in [m for m in self.rows if m not in wanted]:
            box, _label = self.rows.pop(mission_id)
            self.column.removeWidget(box)
            box.deleteLater()
        for line in lines:
            row = self.rows.get(line.id)
            if row is None:
                row = self.rows[line.id] = self._row(line)
            row[1].setText("◆ Mission to approve: " + line.text(now))
            row[1].setToolTip(line.goal)
        self.setVisible(bool(lines))

    def _row(self, line: MissionLine) -> tuple[QWidget, QLabel]:
        box = QWidget(self)
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
        self.column.addWidget(box)
        return box, label

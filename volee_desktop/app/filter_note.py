"""The list's two notes: what a filter hides, said above the rows while it is set, with a
way out ("Filtered: only failed agents matching “docs” (3 of 60); 2 that need you or failed
shown beneath" and Show all), and the status line under them (what an action did or why
not, what the daemon said)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from volee_desktop.core.states import AgentState

from .shortcuts import keys
from .texts import STATE_LABEL


class FilterNote(QWidget):
    """The note and its Show all button (``clear``); hidden while nothing is filtered."""

    clear = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("filterNote")
        note = QHBoxLayout(self)
        note.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel(self)
        self.label.setObjectName("filterLabel")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        clear = QPushButton("Show all", self)
        clear.setObjectName("clearFilter")
        clear.setAutoDefault(False)
        clear.setToolTip(f"Clear the filter ({keys('Esc')})")
        clear.clicked.connect(self.clear.emit)
        note.addWidget(self.label, 1)
        note.addWidget(clear)
        self.hide()

    def say(
        self, state: AgentState | None, words: list[str], matched: int, total: int, hidden: int
    ) -> None:
        """The filter: only ``state`` (None: every state), matching ``words``; ``matched`` of
        ``total`` agents; ``hidden``: those that need you or failed, shown beneath."""
        what = []
        if state is not None:
            what.append(
                f"only agents that {STATE_LABEL[state]}"
                if state is AgentState.NEEDS_INPUT
                else f"only {STATE_LABEL[state]} agents"
            )
        if words:
            what.append(f"matching “{' '.join(words)}”")
        text = f"Filtered: {' '.join(what)} ({matched} of {total})"
        if hidden:
            text += f"; {hidden} that need you or failed shown beneath"
        self.label.setText(text)
        self.show()


class StatusLine(QLabel):
    """The line under the rows; a transient text (an action's) goes at the next action or
    opening of the list (``clear_transient``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("status")
        self.setWordWrap(True)
        self.hide()
        self.transient = False

    def say(self, text: str, transient: bool = False) -> None:
        self.setText(text)
        self.setVisible(bool(text))
        self.transient = transient and bool(text)

    def clear_transient(self) -> None:
        if self.transient:
            self.say("")

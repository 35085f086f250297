"""The bar that shows what an agent asks and its answers, in the list and (``boxed``) in the
agent window: a line and a button per ``choices.Choice`` (at most ``MAX_OPTIONS`` options).
A click is ``chosen(name)``, the one place the bar emits: whoever hosts it turns the name
into the answer it sends.  The tray menu and the notifications offer the same ``choices``.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QStyle, QWidget

from .attention import label, short
from .choices import ALLOW, DENY, MAX_OPTIONS, PERMISSION, Choice
from .shortcuts import keys


class ElidedLabel(QLabel):
    """One line cut at its end with "…" when it is wider than the label (the whole text stays
    ``text()``, the tooltip says it all): never a line clipped mid-word by a button."""

    def painted_text(self) -> str:
        width = self.contentsRect().width()
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, width)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        # On the leading side; the words read the way they are written (the "…" at their end).
        painter.setLayoutDirection(Qt.LayoutDirection.LayoutDirectionAuto)
        lead = QStyle.visualAlignment(self.layoutDirection(), Qt.AlignmentFlag.AlignLeft)
        flags = lead | Qt.AlignmentFlag.AlignAbsolute | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(self.contentsRect(), int(flags), self.painted_text())


class RequestBar(QWidget):
    """A line saying what the agent asks and a button per choice; ``chosen(name)`` on a click.

    ``boxed``: the agent window's framed box (the line wraps, Allow stands out); else the
    list's plain bar, whose buttons name their shortcuts.
    """

    chosen = Signal(str)  # allow | deny | option:N

    def __init__(self, parent: QWidget | None = None, *, boxed: bool = False) -> None:
        super().__init__(parent)
        self.boxed = boxed
        self.option_width = 28 if boxed else 24  # characters of an option on its button
        layout = QHBoxLayout(self)
        # The list's bar is one line, cut at its end; the agent window's box wraps.
        self.label = QLabel(self) if boxed else ElidedLabel(self)
        self.label.setObjectName("request")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        if boxed:
            self.setObjectName("requestBox")
            # A QWidget subclass paints its style sheet's background only when asked to.
            self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
            self.setStyleSheet(
                "#requestBox { background: #fff4e6; border: 1px solid #ffa94d;"
                " border-radius: 4px; }"
            )
            layout.setContentsMargins(8, 4, 4, 4)
            self.label.setWordWrap(True)
            self.label.setStyleSheet("color: #212529;")
        else:
            self.setObjectName("requestBar")
            layout.setContentsMargins(0, 0, 0, 0)
            layout.setSpacing(4)
            self.label.setMinimumWidth(80)
        layout.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for choice in (
            *PERMISSION,
            *(Choice(f"option:{n}", "", "") for n in range(1, MAX_OPTIONS + 1)),
        ):
            button = QPushButton(choice.text, self)
            button.setObjectName(f"answer-{choice.name}")
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, n=choice.name: self._choose(n))
            layout.addWidget(button)
            self.buttons[choice.name] = button
        self.reset_allow()
        self.hide()

    def _choose(self, name: str) -> None:
        self.chosen.emit(name)

    def reset_allow(self) -> None:
        """Allow as a single request offers it (a selection renames it: app/many_bar.py)."""
        allow = self.buttons[ALLOW.name]
        allow.setText(ALLOW.text)
        if self.boxed:
            allow.setStyleSheet(
                "QPushButton { background: #2f9e44; color: white; font-weight: bold;"
                " padding: 3px 10px; }"
            )
            self.buttons[DENY.name].setToolTip(
                "Deny; what you typed in the reply box is sent as the reason"
            )
        else:
            for choice in PERMISSION:
                self.buttons[choice.name].setToolTip(f"{choice.text} ({keys(choice.key)})")

    def show_request(self, text: str, tip: str, offered: Sequence[Choice], enabled: bool) -> None:
        """Say ``text`` (``tip`` on hover) with a button per ``offered`` choice, each on when
        ``enabled`` (an answered request still says what it asked)."""
        self.label.setText(text)
        if not self.boxed:
            self.label.setToolTip(tip)
        names = {c.name for c in offered}
        for choice in PERMISSION:
            self.buttons[choice.name].setVisible(choice.name in names)
            self.buttons[choice.name].setEnabled(enabled)
        options = [c for c in offered if c.name.startswith("option:")][:MAX_OPTIONS]
        for n in range(1, MAX_OPTIONS + 1):
            button = self.buttons[f"option:{n}"]
            if n <= len(options):
                option = options[n - 1]
                button.setText(label(short(option.text, self.option_width)))
                button.setToolTip(
                    option.text if self.boxed else f"Answer “{option.text}” ({keys(option.key)})"
                )
                button.setEnabled(enabled)
            button.setVisible(n <= len(options))
        self.show()

    def offered(self, name: str) -> bool:
        """Whether the bar shows ``name`` and takes it now (a shortcut answers only then)."""
        button = self.buttons.get(name)
        return button is not None and button.isVisible() and button.isEnabled()

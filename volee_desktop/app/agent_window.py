"""One agent in front of the person: its recent output (read-only) and a reply box."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QFontDatabase, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.model import Agent

from .texts import STATE_COLOUR, STATE_LABEL


class AgentWindow(QWidget):
    """Shows ``agents.screen`` for one agent and sends what the person types (``agents.send``)."""

    send = Signal(str, str)  # agent id, text
    refresh = Signal(str)  # agent id
    closed = Signal(str)

    def __init__(self, agent: Agent, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowFlag(Qt.WindowType.Window)
        self.agent_id = agent.id
        self.setObjectName("agentWindow")
        self.title = QLabel(self)
        self.title.setObjectName("title")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.output = QPlainTextEdit(self)
        self.output.setObjectName("output")
        self.output.setReadOnly(True)
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.output.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.output.setPlaceholderText("Loading the agent's recent output…")
        self.reload = QPushButton("Refresh", self)
        self.reload.clicked.connect(lambda: self.refresh.emit(self.agent_id))
        self.reply = QLineEdit(self)
        self.reply.setObjectName("reply")
        self.reply.setPlaceholderText("Reply to the agent (Enter sends)…")
        self.reply.returnPressed.connect(self._send)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("send")
        self.send_button.clicked.connect(self._send)
        self.status = QLabel(self)
        self.status.setObjectName("status")
        self.status.setWordWrap(True)

        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.reload)
        bottom = QHBoxLayout()
        bottom.addWidget(self.reply, 1)
        bottom.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.status)
        layout.addLayout(bottom)
        self.resize(760, 480)
        self.refresh_timer = QTimer(self)
        self.refresh_timer.setSingleShot(True)
        self.set_agent(agent)

    def set_agent(self, agent: Agent) -> None:
        colour = STATE_COLOUR[agent.state]
        detail = f" · {agent.detail}" if agent.detail else ""
        self.setWindowTitle(f"{agent.name} — volee")
        self.title.setText(
            f"<b>{_html(agent.name)}</b> &nbsp;<span style='color:{colour}'><b>"
            f"{STATE_LABEL[agent.state]}</b></span>{_html(detail)}"
        )

    def set_screen(self, text: str) -> None:
        bar = self.output.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        self.output.setPlainText(text)
        if at_end:
            self.output.moveCursor(QTextCursor.MoveOperation.End)

    def show_status(self, text: str) -> None:
        self.status.setText(text)

    def focus_reply(self) -> None:
        self.reply.setFocus()

    def in_front(self) -> bool:
        """Whether the person has this agent in front of them (then it is not notified)."""
        return self.isVisible() and self.isActiveWindow()

    def _send(self) -> None:
        text = self.reply.text().strip()
        if text:
            self.send.emit(self.agent_id, text)

    def sent(self) -> None:
        self.reply.clear()
        self.show_status("Sent.")

    def closeEvent(self, event: QCloseEvent) -> None:
        self.closed.emit(self.agent_id)
        super().closeEvent(event)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

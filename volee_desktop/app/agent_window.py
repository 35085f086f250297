"""One agent in front of the person: its screen as its terminal shows it, what it asks, a reply box.

The screen is the daemon's rendered terminal (``agents.output``: the host's PTY
through a terminal emulator), in a fixed-width font, followed live while the
window is shown (a refresh a second, painted only when the screen changed);
the last screen of an agent that ended stays.  While the agent needs you, its
request is shown above the screen with its answers: Allow / Deny (the reply
box's text is the reason of a Deny) or a question's options (the reply box's
text is an answer of your own).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QFontDatabase, QHideEvent, QShowEvent, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.model import Agent, RequestKind
from volee_desktop.core.states import AgentState

from .attention import label, short
from .texts import STATE_COLOUR, STATE_LABEL

FOLLOW_MS = 1000  # a shown window asks for the screen once a second
MAX_OPTIONS = 6


class AgentWindow(QWidget):
    """Shows an agent's screen and request; sends what the person types or chooses."""

    send = Signal(str, str)  # agent id, text
    # agent id, choice (allow, deny, option:N, reply), text ("" if none), the request shown
    answer = Signal(str, str, str, str)
    refresh = Signal(str)  # agent id
    closed = Signal(str)

    def __init__(self, agent: Agent, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowFlag(Qt.WindowType.Window)
        self.agent_id = agent.id
        self.agent = agent
        self.setObjectName("agentWindow")
        self.title = QLabel(self)
        self.title.setObjectName("title")
        self.title.setTextFormat(Qt.TextFormat.RichText)

        self.request_box = QWidget(self)
        self.request_box.setObjectName("requestBox")
        self.request_box.setStyleSheet(
            "#requestBox { background: #fff4e6; border: 1px solid #ffa94d; border-radius: 4px; }"
        )
        rlayout = QHBoxLayout(self.request_box)
        rlayout.setContentsMargins(8, 4, 4, 4)
        self.request_label = QLabel(self.request_box)
        self.request_label.setObjectName("request")
        self.request_label.setTextFormat(Qt.TextFormat.PlainText)
        self.request_label.setWordWrap(True)
        self.request_label.setStyleSheet("color: #212529;")
        rlayout.addWidget(self.request_label, 1)
        self.answer_buttons: dict[str, QPushButton] = {}
        names = [("allow", "Allow"), ("deny", "Deny")]
        names += [(f"option:{n}", "") for n in range(1, MAX_OPTIONS + 1)]
        for choice, text in names:
            button = QPushButton(text, self.request_box)
            button.setObjectName(f"answer-{choice}")
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, c=choice: self._answer(c))
            rlayout.addWidget(button)
            self.answer_buttons[choice] = button
        self.answer_buttons["allow"].setStyleSheet(
            "QPushButton { background: #2f9e44; color: white; font-weight: bold;"
            " padding: 3px 10px; }"
        )
        self.answer_buttons["deny"].setToolTip(
            "Deny; what you typed in the reply box is sent as the reason"
        )
        self.request_box.hide()

        self.output = QPlainTextEdit(self)
        self.output.setObjectName("output")
        self.output.setReadOnly(True)
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.output.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.output.setPlaceholderText("Loading the agent's screen…")
        self.output.setStyleSheet(
            "QPlainTextEdit { background: #1e2227; color: #dee2e6; selection-background-color: "
            "#4dabf7; }"
        )
        self.reload = QPushButton("Refresh", self)
        self.reload.setToolTip("The screen follows the agent by itself; this asks for it now")
        self.reload.clicked.connect(lambda: self.refresh.emit(self.agent_id))
        self.reply = QLineEdit(self)
        self.reply.setObjectName("reply")
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
        layout.addWidget(self.request_box)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.status)
        layout.addLayout(bottom)
        self.resize(900, 560)
        self.version: int | None = None  # the screen shown (agents.output's version)
        self.live = True
        self.refresh_timer = QTimer(self)  # follows the screen while the window is shown
        self.refresh_timer.setInterval(FOLLOW_MS)
        self.refresh_timer.timeout.connect(lambda: self.refresh.emit(self.agent_id))
        self.set_agent(agent)

    # --- the agent and its request ------

    def set_agent(self, agent: Agent) -> None:
        self.agent = agent
        colour = STATE_COLOUR[agent.state]
        detail = f" · {agent.detail}" if agent.detail else ""
        self.setWindowTitle(f"{agent.name} — volee")
        self.title.setText(
            f"<b>{_html(agent.name)}</b> &nbsp;<span style='color:{colour}'><b>"
            f"{STATE_LABEL[agent.state]}</b></span>{_html(detail)}"
        )
        request = agent.request if agent.state is AgentState.NEEDS_INPUT else None
        open_request = request is not None and not request.answered
        if request is None:
            self.request_box.hide()
        else:
            what = request.summary or agent.detail
            if request.question and request.question not in what:
                what = f"{request.question}\n{what}"
            self.request_label.setText(
                f"{agent.name} asks: {what}"
                + (f"  (answered: {request.answered})" if request.answered else "")
            )
            permission = request.kind is RequestKind.PERMISSION
            self.answer_buttons["allow"].setVisible(permission)
            self.answer_buttons["deny"].setVisible(permission)
            options = request.options if request.kind is RequestKind.QUESTION else ()
            for n in range(1, MAX_OPTIONS + 1):
                button = self.answer_buttons[f"option:{n}"]
                if n <= len(options):
                    button.setText(label(short(options[n - 1], 28)))
                    button.setToolTip(options[n - 1])
                button.setVisible(n <= len(options))
            for button in self.answer_buttons.values():
                button.setEnabled(open_request)
            self.request_box.show()
        kind = request.kind if open_request and request is not None else None
        self.reply.setPlaceholderText(
            "The reason, if you deny (then press Deny)…"
            if kind is RequestKind.PERMISSION
            else "Or type an answer of your own (Enter sends)…"
            if kind is RequestKind.QUESTION
            else "Reply to the agent (Enter sends)…"
        )

    def _answer(self, choice: str) -> None:
        text = self.reply.text().strip() if choice == "deny" else ""
        self.answer.emit(self.agent_id, choice, text, self._request_id())

    def _request_id(self) -> str:
        request = self.agent.request if self.agent.state is AgentState.NEEDS_INPUT else None
        return request.id if request is not None else ""

    def answered(self) -> None:
        self.reply.clear()

    # --- the screen ------

    def set_screen(self, text: str, version: int | None = None, live: bool = True) -> bool:
        """Show the agent's screen; False when it was unchanged (``version`` as shown)."""
        if version is not None and version == self.version and live == self.live:
            return False
        self.version = version
        self.live = live
        bar = self.output.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        self.output.setPlainText(text)
        if at_end:
            self.output.moveCursor(QTextCursor.MoveOperation.End)
        if not live:
            self.refresh_timer.stop()  # an ended agent's screen no longer changes
            self.show_status("Its program ended: this is the last screen it showed.")
        return True

    def show_status(self, text: str) -> None:
        self.status.setText(text)

    def focus_reply(self) -> None:
        self.reply.setFocus()

    def in_front(self) -> bool:
        """Whether the person has this agent in front of them (then it is not notified)."""
        return self.isVisible() and self.isActiveWindow()

    def _send(self) -> None:
        text = self.reply.text().strip()
        if not text:
            return
        request = self.agent.request if self.agent.state is AgentState.NEEDS_INPUT else None
        if request is not None and not request.answered:
            if request.kind is RequestKind.PERMISSION:
                # Never typed into a permission dialog: it would answer it by accident.
                self.show_status("Allow or Deny first; what you typed is the reason of a Deny.")
                return
            if request.kind is RequestKind.QUESTION:
                self.answer.emit(self.agent_id, "reply", text, request.id)
                return
        self.send.emit(self.agent_id, text)

    def sent(self) -> None:
        self.reply.clear()
        self.show_status("Sent.")

    # --- following while shown ------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.live:
            self.refresh_timer.start()

    def hideEvent(self, event: QHideEvent) -> None:
        self.refresh_timer.stop()
        super().hideEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.refresh_timer.stop()
        self.closed.emit(self.agent_id)
        super().closeEvent(event)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

"""One agent in front of the person: its screen as its terminal shows it, what it asks, a reply box.

The screen is the daemon's rendered terminal (``agents.output``: the host's PTY
through a terminal emulator), in a fixed-width font, followed live while the
window is shown (a refresh a second, painted only when the screen changed);
the last screen of an agent that ended stays.  While the agent needs you, its
request is shown above the screen with its answers: Allow / Deny (the reply
box's text is the reason of a Deny) or a question's options (the reply box's
text is an answer of your own).

Keys, wherever the focus is (the reply box included): Ctrl+Y allow, Ctrl+D deny (what
the reply box holds is the reason: type it, then Ctrl+D), Alt+1… a question's options,
Ctrl+R the reply box, Ctrl+S stop, Ctrl+E resume, Ctrl+T the timeline; the same keys as
the list's.  The reply box is emptied once an answer went in.  The screen follows its
last rows (a dialog's options are there) unless the person scrolled up; a request
opening brings them back into view.

Keys that are not a line of text have buttons under the screen: Esc, Shift+Tab (Claude
Code's mode) and one per numbered option of the dialog on screen: of a dialog no request
answers (a menu, a trust prompt) the daemon types it (``agents.keys``) once it sees that
option on the screen; of the open permission's own dialog the option is its answer (1.
Yes: allow, 2. Yes, and don't ask again: allow always, No: deny), given and checked on
the screen like Allow.

Beside the Screen, its Conversation (``conversation.py``) and its Changes (``changes_view.py``:
the branch's diff against its base, line comments sent as one message, Merge, Discard, Open
folder), read when the tab is first shown.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QObject, QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QFontMetricsF,
    QHideEvent,
    QKeyEvent,
    QKeySequence,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.model import Agent, RequestKind
from volee_desktop.core.requests import full_text, visible
from volee_desktop.core.states import AgentState
from volee_desktop.harness.dialogs import Dialog, dialog_for, find_dialog

from .attention import label, short
from .changes_view import ChangesView
from .choices import MAX_OPTIONS, OPTION_KEYS, PERMISSION, choices, option_answers
from .conversation import ConversationView
from .placement import FALLBACK_AREA
from .request_bar import RequestBar
from .termfont import terminal_font
from .texts import detail_text, readable_screen, state_colour, state_label

FOLLOW_MS = 1000  # a shown window asks for the screen once a second
#: The columns of an agent's PTY (the hosts' default; ``agents.output`` says its ``cols``).
SCREEN_COLS = 120
#: (choice or action, shortcut): the list's keys (panel.py), here wherever the focus is.
KEYS: tuple[tuple[str, str], ...] = (
    *((c.name, c.key) for c in PERMISSION),
    *((f"option:{n}", key) for n, key in enumerate(OPTION_KEYS, start=1)),
    ("stop", "Ctrl+S"),
    ("resume", "Ctrl+E"),
    ("timeline", "Ctrl+T"),
    ("reply", "Ctrl+R"),
)


#: What a permission dialog's option button does, in its tooltip.
_ANSWER_WORDS = {
    "allow": "Allow",
    "allow-always": "Allow, and do not ask again",
    "deny": "Deny (what the reply box holds is the reason)",
}


class AgentWindow(QWidget):
    """Shows an agent's screen and request; sends what the person types or chooses."""

    send = Signal(str, str)  # agent id, text
    # agent id, choice (allow, deny, option:N, reply), text ("" if none), the request shown
    answer = Signal(str, str, str, str)
    refresh = Signal(str)  # agent id
    action = Signal(str, str)  # (stop | resume | timeline, agent id): as the list's
    keys = Signal(str, str)  # (agent id, esc | shift-tab | option:N): ``agents.keys``
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

        self.request_box = RequestBar(self, boxed=True)
        self.request_box.chosen.connect(self._answer)
        self.request_label = self.request_box.label
        self.answer_buttons = self.request_box.buttons

        self.output = QPlainTextEdit(self)
        self.output.setObjectName("output")
        self.output.setAccessibleName("The agent's screen")
        self.output.setReadOnly(True)
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.output.setFont(terminal_font())
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
        self.reply.setAccessibleName("Reply to the agent")
        self.reply.returnPressed.connect(self._send)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("send")
        self.send_button.clicked.connect(self._send)
        self.status = QLabel(self)
        self.status.setObjectName("status")
        self.status.setWordWrap(True)

        # Keys that are not a line of text, and the options of a dialog no request answers.
        self.keys_bar = QHBoxLayout()
        self.key_buttons: dict[str, QPushButton] = {}
        for key, text, tip in (
            ("esc", "Esc", "Type Esc (cancel a dialog, interrupt the turn)"),
            ("shift-tab", "Shift+Tab", "Type Shift+Tab (Claude Code: the next permission mode)"),
            *(
                (f"option:{n}", str(n), f"Pick the dialog's option {n}")
                for n in range(1, MAX_OPTIONS + 1)
            ),
        ):
            button = QPushButton(text, self)
            button.setObjectName(f"key-{key}")
            button.setAutoDefault(False)
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, k=key: self._press(k))
            self.keys_bar.addWidget(button)
            self.key_buttons[key] = button
            if key.startswith("option:"):
                button.hide()
        self.keys_bar.addStretch(1)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.reload)
        bottom = QHBoxLayout()
        bottom.addWidget(self.reply, 1)
        bottom.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.request_box)
        # Its Screen (the terminal) and its Conversation (the harness's transcript).
        self.conversation = ConversationView(self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.output, "Screen")
        self.tabs.addTab(self.conversation, "Conversation")
        # Its Changes: the branch's diff against its base, comments, merge or discard.
        self.changes = ChangesView(agent.id, agent.name, self)
        self.changes.folder = agent.worktree or agent.cwd or ""
        self.tabs.addTab(self.changes, "Changes")
        self.tabs.currentChanged.connect(lambda _i: self._follow_conversation())
        layout.addWidget(self.tabs, 1)
        layout.addLayout(self.keys_bar)
        layout.addWidget(self.status)
        layout.addLayout(bottom)
        self.resize(900, 560)
        self.shortcuts: dict[str, QAction] = {}
        for name, shortcut in KEYS:
            qaction = QAction(name, self)
            qaction.setShortcut(QKeySequence(shortcut))
            qaction.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            qaction.triggered.connect(lambda _=False, n=name: self._key(n))
            self.addAction(qaction)
            self.shortcuts[name] = qaction
        # The reply box would take Ctrl+D (delete) and Ctrl+Y (redo) for itself.
        self._taken = {QKeySequence(k)[0].toCombined() for _n, k in KEYS}  # type: ignore[index]
        self.reply.installEventFilter(self)
        self.output.installEventFilter(self)
        # Following the screen's end: until the person scrolls up, and again at a request.
        self.follow = True
        self._filling = False
        bar = self.output.verticalScrollBar()
        bar.rangeChanged.connect(lambda *_: self._keep_end())
        bar.valueChanged.connect(self._scrolled)
        self._open_request: str | None = None
        self._options_text = ""  # the screen the option buttons were read from
        self._option_answers: dict[int, str | None] = {}  # the open permission's options
        self.cols = SCREEN_COLS  # the PTY's width the window was made wide enough for
        self._fitted: int | None = None  # the width it set (None: not yet, or resized since)
        self.version: int | None = None  # the screen shown (agents.output's version)
        self.live = True
        self.refresh_timer = QTimer(self)  # follows the screen while the window is shown
        self.refresh_timer.setInterval(FOLLOW_MS)
        self.refresh_timer.timeout.connect(lambda: self.refresh.emit(self.agent_id))
        self.set_agent(agent)

    # --- the agent and its request ------

    def set_agent(self, agent: Agent) -> None:
        self.agent = agent
        self.changes.folder = agent.worktree or agent.cwd or ""
        colour = state_colour(agent)
        said = detail_text(agent) if agent.state is not AgentState.NEEDS_INPUT else agent.detail
        said = said.removeprefix(f"{state_label(agent)}: ")
        detail = f" · {said}" if said else ""
        self.setWindowTitle(f"{agent.name} — volee")
        self.title.setText(
            f"<b>{_html(agent.name)}</b> &nbsp;<span style='color:{colour}'><b>"
            f"{state_label(agent)}</b></span>{_html(detail)}"
        )
        request = agent.request if agent.state is AgentState.NEEDS_INPUT else None
        open_request = request is not None and not request.answered
        shown = request.id if open_request and request is not None else None
        if shown is not None and shown != self._open_request:
            self.follow = True  # a dialog opened: its options are the screen's last rows
            QTimer.singleShot(0, self._keep_end)
        self._open_request = shown
        if request is None:
            self.request_box.hide()
        else:
            # All of it, every line (the notification and the menu show one): read here.
            what = visible(full_text(request)) or agent.detail
            if request.question and request.question not in what:
                what = f"{request.question}\n{what}"
            self.request_box.show_request(
                f"{agent.name} asks: {what}"
                + (f"  (answered: {request.answered})" if request.answered else ""),
                what,
                choices(request.kind, request.options),
                enabled=open_request,
            )
        if self._options_text:
            self._show_options(self._options_text)  # the request opened or was answered
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
        """An answer went in: the reason (or the reply) typed for it goes."""
        self.reply.clear()

    def _key(self, name: str) -> None:
        """A shortcut: an answer while its button is offered, else the list's action."""
        if name == "reply":
            self.focus_reply()
            return
        if name in self.answer_buttons:
            if self.request_box.offered(name):
                self._answer(name)
            return
        self.action.emit(name, self.agent_id)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.keyCombination().toCombined() in self._taken
        ):
            event.ignore()  # not the box's own: the window's shortcut gets it
            return True
        return False

    # --- the screen ------

    def fit_columns(self, cols: int, area: QRect | None = None) -> None:
        """As wide as the agent's PTY line (``cols`` of the screen's font: Claude Code draws
        120 and cuts a dialog's option at the right in less), within the screen's ``area``."""
        self.cols = cols
        out = self.output
        text = QFontMetricsF(out.font()).horizontalAdvance("M" * cols)
        text += 2 * out.document().documentMargin() + 2  # and the cursor's pixel or two
        bar = out.verticalScrollBar()
        room = (
            0 if bar.isVisible() else out.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        )
        chrome = self.width() - out.viewport().width()
        if area is None:
            screen = self.screen()
            area = screen.availableGeometry() if screen is not None else FALLBACK_AREA
        width = min(math.ceil(text) + room + chrome, area.width())
        self.resize(width, min(self.height(), area.height()))
        self._fitted = self.width()

    def set_screen(
        self, text: str, version: int | None = None, live: bool = True, cols: int | None = None
    ) -> bool:
        """Show the agent's screen; False when it was unchanged (``version`` as shown).
        ``cols``: its PTY's width; the window widens to it unless the person resized it."""
        if cols is not None and cols != self.cols and self._fitted == self.width():
            self.fit_columns(cols)
        if version is not None and version == self.version and live == self.live:
            return False
        self.version = version
        self.live = live
        self._filling = True
        try:
            bar = self.output.verticalScrollBar()
            value = bar.value()
            self.output.setPlainText(readable_screen(text))
            if not self.follow:
                bar.setValue(value)  # where the person scrolled to
        finally:
            self._filling = False
        self._keep_end()
        self._show_options(text if live else "")
        if not live:
            self.refresh_timer.stop()  # an ended agent's screen no longer changes
            self.show_status("Its program ended: this is the last screen it showed.")
        return True

    def _show_options(self, text: str) -> None:
        """A button per numbered option of the dialog on screen.  A dialog no request
        answers (a menu, a trust prompt): the button types the option (``agents.keys``).  The
        open permission's own dialog: each option is its answer (allow, allow always, deny),
        given by the answer's call, checked on the screen and recorded like Allow; one volee
        does not give ("switch to auto mode") is greyed."""
        self._options_text = text
        request = self.agent.request if self.agent.state is AgentState.NEEDS_INPUT else None
        lines = text.splitlines()
        dialog: Dialog | None = None
        self._option_answers = {}
        if request is None and lines:
            dialog = find_dialog(lines)
        elif request is not None and not request.answered and lines:
            if request.kind is RequestKind.PERMISSION:  # a question's are in its request box
                found = dialog_for(lines, request)
                dialog = found if isinstance(found, Dialog) else None
            if dialog is not None:
                self._option_answers = option_answers(dialog, request)
        options = {o.number: o.label for o in dialog.options} if dialog is not None else {}
        for n in range(1, MAX_OPTIONS + 1):
            button = self.key_buttons[f"option:{n}"]
            if n in options:
                answer = self._option_answers.get(n, "")
                button.setText(label(short(f"{n}. {options[n]}", 28)))
                button.setEnabled(answer is not None)
                button.setToolTip(
                    f"Pick “{options[n]}” (typed once the daemon sees it)"
                    if request is None
                    else f"{_ANSWER_WORDS[answer]}: “{options[n]}” (checked on its screen, "
                    "like Allow)"
                    if answer
                    else f"“{options[n]}”: volee does not give this answer; answer it in its "
                    f"terminal (volee attach {self.agent.name})"
                )
            button.setVisible(n in options)

    def _press(self, key: str) -> None:
        """A key button: the open permission's answer for its option, else the key typed."""
        number = int(key.removeprefix("option:")) if key.startswith("option:") else 0
        answer = self._option_answers.get(number) if self._option_answers else None
        if answer:
            self._answer(answer)
        elif not self._option_answers or not number:
            self.keys.emit(self.agent_id, key)

    def _keep_end(self) -> None:
        """Show the screen's last rows while following (the window or its request box
        resized, new text)."""
        if self.follow:
            bar = self.output.verticalScrollBar()
            filling, self._filling = self._filling, True  # (it runs inside set_screen too)
            try:
                bar.setValue(bar.maximum())
            finally:
                self._filling = filling

    def _scrolled(self, value: int) -> None:
        if not self._filling:  # the person scrolled: follow again once back at the end
            self.follow = value >= self.output.verticalScrollBar().maximum() - 2

    def at_end(self) -> bool:
        """Whether the screen's last row is in view."""
        bar = self.output.verticalScrollBar()
        return bar.value() >= bar.maximum()

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

    def _follow_conversation(self) -> None:
        shown = self.isVisible() and self.tabs.currentWidget() is self.conversation
        self.conversation.follow(shown)
        if self.tabs.currentWidget() is self.changes and self.changes.result is None:
            self.changes.load()  # read once when first shown; Refresh reads it again

    def show_changes(self) -> None:
        """Bring the Changes tab forward (read again)."""
        if self.tabs.currentWidget() is self.changes:
            self.changes.load()
        else:
            self.changes.result = None
            self.tabs.setCurrentWidget(self.changes)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._fitted is None:  # laid out, not yet on the screen: the PTY's width
            self.fit_columns(self.cols)
        if self.live:
            self.refresh_timer.start()
        self._follow_conversation()

    def hideEvent(self, event: QHideEvent) -> None:
        self.refresh_timer.stop()
        self.conversation.follow(False)
        super().hideEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.refresh_timer.stop()
        self.conversation.follow(False)
        self.closed.emit(self.agent_id)
        super().closeEvent(event)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

"""The approval dialog of a mission awaiting approval: goal, report, workers' evidence, the choice.

Each worker's row says what its branch would merge (files changed, lines added
and removed, from ``agents.changes``); its files are the row's children, and
"Show the diff" (or a double click) shows the diff itself, read on demand.

Choosing the approving option answers with exactly that option; any other
option, or a typed reply, answers with that text (the daemon then sends the
mission back to reporting).  The dialog emits ``answer(params)``; the app
calls ``missions.answer`` with them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontDatabase,
    QSyntaxHighlighter,
    QTextCharFormat,
)
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.model import Delivery, Message, Mission, MissionStatus, PushState, Verdict
from volee_desktop.core.registry import Registry

VERDICT_COLOUR = {
    Verdict.DELIVERED: "#2f9e44",
    Verdict.NOT_DELIVERED: "#e8590c",
    Verdict.NEEDS_HUMAN: "#e8590c",
    Verdict.FAILED: "#e03131",
    Verdict.LOST: "#ae3ec9",
}


def evidence_text(delivery: Delivery | None) -> str:
    """The delivery evidence in words: commits, pushed, pull request at tip, clean tree."""
    if delivery is None:
        return "no evidence read yet"
    parts = [f"{delivery.commits} commit{'s' if delivery.commits != 1 else ''}"]
    if delivery.merged_into_base:
        parts.append("merged into " + (delivery.base or "base"))
    parts.append(
        {
            PushState.PUSHED: "pushed",
            PushState.UNPUSHED: "not pushed",
            PushState.NO_REMOTE: "no remote",
            PushState.UNKNOWN: "push unknown",
        }[delivery.pushed]
    )
    pr = delivery.pull_request
    if pr is not None:
        at_tip = delivery.pull_request_at_tip is not None
        parts.append(f"PR #{pr.number} {pr.state}" + ("" if at_tip else " (not at the tip)"))
    elif delivery.pull_request_known:
        parts.append("no pull request")
    if delivery.clean is True:
        parts.append("clean tree")
    elif delivery.clean is False:
        parts.append("uncommitted changes")
    if delivery.branch:
        parts.append(f"branch {delivery.branch}")
    return ", ".join(parts)


def change_text(changes: dict[str, Any]) -> str:
    """``3 files, +12 −4`` (what ``agents.changes`` found), or why it is not known."""
    if changes.get("error"):
        return f"unknown: {changes['error']}"
    files = changes.get("files") or []
    if not files:
        return "no change to merge"
    n = len(files)
    return (
        f"{n} file{'s' if n != 1 else ''}, +{changes.get('added', 0)} −{changes.get('removed', 0)}"
    )


def file_change_text(f: dict[str, Any]) -> str:
    if f.get("added") is None:
        return "binary"
    moved = f" (from {f['from']})" if f.get("from") else ""
    return f"+{f['added']} −{f['removed']}{moved}"


class DiffHighlighter(QSyntaxHighlighter):
    """Colours a unified diff: added lines green, removed red, hunks and files dim."""

    def highlightBlock(self, text: str) -> None:
        colour = None
        if text.startswith(("+++", "---", "diff --git", "index ")):
            colour, bold = "#495057", True
        elif text.startswith("@@"):
            colour, bold = "#1c7ed6", False
        elif text.startswith("+"):
            colour, bold = "#2b8a3e", False
        elif text.startswith("-"):
            colour, bold = "#c92a2a", False
        if colour is None:
            return
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(colour))
        if bold:
            fmt.setFontWeight(QFont.Weight.Bold)
        self.setFormat(0, len(text), fmt)


def report_of(mission: Mission, registry: Registry) -> Message | None:
    return registry.messages.get(mission.report) if mission.report else None


class ApprovalDialog(QDialog):
    """Approve (or answer) a mission's report."""

    answer = Signal(dict)  # params for missions.answer
    diff_wanted = Signal(str)  # a worker's id: fetch its diff (agents.changes with diff)

    def __init__(self, mission: Mission, registry: Registry, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("approval")
        self.mission_id = mission.id
        self.setWindowTitle("Review mission — volee")
        self.goal = QLabel(self)
        self.goal.setObjectName("goal")
        self.goal.setWordWrap(True)
        self.goal.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # The machine the mission is on, when it is another one: its workers' branches and
        # the merge are there (the window title says it too, but not every desktop shows it).
        self.where = QLabel(self)
        self.where.setObjectName("machine")
        self.where.setWordWrap(True)
        self.where.hide()
        self.banner = QLabel(self)
        self.banner.setObjectName("banner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("color: #e8590c; font-weight: bold;")
        self.report = QTextBrowser(self)
        self.report.setObjectName("report")
        self.report.setOpenExternalLinks(True)
        self.workers = QTreeWidget(self)
        self.workers.setObjectName("workers")
        self.workers.setColumnCount(4)
        self.workers.setHeaderLabels(["Worker", "Verdict", "Change", "Evidence"])
        self.workers.setRootIsDecorated(True)  # a worker's changed files are its children
        self.workers.setWordWrap(True)
        self.workers.itemDoubleClicked.connect(lambda item, _c: self._diff_of(item))
        self.workers.currentItemChanged.connect(lambda *_: self._selection_changed())
        self.show_diff = QPushButton("Show the &diff", self)
        self.show_diff.setObjectName("showDiff")
        self.show_diff.setAutoDefault(False)
        self.show_diff.setEnabled(False)
        self.show_diff.setToolTip("The change the selected worker's branch would merge (from git)")
        self.show_diff.clicked.connect(lambda: self._diff_of(self.workers.currentItem()))
        self.diff_title = QLabel(self)
        self.diff_title.setObjectName("diffTitle")
        self.diff_title.setTextFormat(Qt.TextFormat.PlainText)
        self.diff_title.hide()
        self.diff = QPlainTextEdit(self)
        self.diff.setObjectName("diff")
        self.diff.setReadOnly(True)
        self.diff.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._highlight = DiffHighlighter(self.diff.document())
        self.diff.hide()
        self.changes: dict[str, dict[str, Any]] = {}  # agents.changes per worker
        self._diff_agent: str | None = None
        self.question = QLabel(self)
        self.question.setWordWrap(True)
        self.options_row = QHBoxLayout()
        self.option_buttons: dict[str, QPushButton] = {}
        self.reply = QLineEdit(self)
        self.reply.setObjectName("reply")
        self.reply.setAccessibleName("Reply to the coordinator")
        self.reply.setPlaceholderText("Or write a reply to the coordinator (Enter sends)…")
        self.reply.returnPressed.connect(self._typed)
        self.send = QPushButton("Send reply", self)
        self.send.setAutoDefault(False)
        self.send.clicked.connect(self._typed)
        self.status = QLabel(self)
        self.status.setWordWrap(True)

        reply_row = QHBoxLayout()
        reply_row.addWidget(self.reply, 1)
        reply_row.addWidget(self.send)
        layout = QVBoxLayout(self)
        layout.addWidget(self.goal)
        layout.addWidget(self.where)
        layout.addWidget(self.banner)
        layout.addWidget(QLabel("<b>The coordinator's report</b>", self))
        layout.addWidget(self.report, 2)
        workers_row = QHBoxLayout()
        workers_row.addWidget(QLabel("<b>Workers</b> and the change each would merge", self), 1)
        workers_row.addWidget(self.show_diff)
        layout.addLayout(workers_row)
        layout.addWidget(self.workers, 2)
        layout.addWidget(self.diff_title)
        layout.addWidget(self.diff, 3)
        layout.addWidget(self.question)
        layout.addLayout(self.options_row)
        layout.addLayout(reply_row)
        layout.addWidget(self.status)
        self.resize(760, 680)
        self._options: tuple[str, ...] = ()
        self._approving: str | None = None
        self.set_mission(mission, registry)

    def set_machine(self, name: str) -> None:
        """Name the other machine the mission is on ("": this one, nothing said)."""
        self.setWindowTitle(
            f"Review mission on {name} — volee" if name else "Review mission — volee"
        )
        self.where.setText(
            f"<b>On {_html(name)}:</b> its workers' changes are read there, and approving "
            f"merges them there, in {_html(name)}'s repositories."
            if name
            else ""
        )
        self.where.setVisible(bool(name))

    def set_mission(self, mission: Mission, registry: Registry) -> None:
        """Show the mission as it is now (called again when it changes while open)."""
        self.goal.setText(f"<b>Goal:</b> {_html(mission.goal)}")
        message = report_of(mission, registry)
        self.report.setMarkdown(message.body if message is not None else "*No report yet.*")
        waiting = mission.status is MissionStatus.AWAITING_APPROVAL
        self.banner.setText(
            ""
            if waiting
            else f"This report no longer waits for you: the mission is {mission.status.value}"
            + (f" ({mission.reason})" if mission.reason else "")
            + "."
        )
        self.banner.setVisible(not waiting)
        self.workers.clear()
        agents = registry.mission_agents(mission.id)
        ids = list(mission.assessments) + [
            a.id for a in agents if a.id not in mission.assessments and a.id != mission.coordinator
        ]
        for agent_id in ids:
            agent = registry.agents.get(agent_id)
            name = agent.name if agent is not None else registry.name_of(agent_id) or agent_id
            assessment = mission.assessments.get(agent_id)
            delivery = (assessment.evidence if assessment else None) or (
                agent.delivery if agent is not None else None
            )
            verdict = assessment.verdict.value if assessment else "not judged yet"
            item = QTreeWidgetItem([name, verdict, "", evidence_text(delivery)])
            item.setData(0, Qt.ItemDataRole.UserRole, agent_id)
            if assessment is not None:
                item.setForeground(1, QBrush(QColor(VERDICT_COLOUR[assessment.verdict])))
                item.setToolTip(1, assessment.reason or verdict)
            item.setToolTip(3, evidence_text(delivery))
            self.workers.addTopLevelItem(item)
            self._show_change(item, self.changes.get(agent_id))
        for col in (0, 1, 2):
            self.workers.resizeColumnToContents(col)
        self.workers.expandAll()
        first = self.workers.topLevelItem(0)
        if self.workers.currentItem() is None and first is not None:
            self.workers.setCurrentItem(first)

        options = message.options if message is not None else ()
        approving = message.approving if message is not None else None
        if options != self._options or approving != self._approving:
            self._set_options(options, approving)
        self.question.setText(
            "Choose an answer:" if options else "The report asks no question; reply below."
        )
        for button in self.option_buttons.values():
            button.setEnabled(waiting)
        self.reply.setEnabled(waiting)
        self.send.setEnabled(waiting)

    def _set_options(self, options: tuple[str, ...], approving: str | None) -> None:
        for button in self.option_buttons.values():
            self.options_row.removeWidget(button)
            button.deleteLater()
        self.option_buttons = {}
        self._options, self._approving = options, approving
        for option in options:
            button = QPushButton(option, self)
            button.setAutoDefault(False)
            if option == approving:
                button.setObjectName("approve")
                button.setStyleSheet(
                    "QPushButton { background: #2f9e44; color: white; font-weight: bold;"
                    " padding: 4px 12px; }"
                )
                button.setToolTip("Approve: volee merges every worker's work")
            button.clicked.connect(lambda _=False, o=option: self.choose(o))
            self.options_row.addWidget(button)
            self.option_buttons[option] = button
        self.options_row.addStretch(1)

    # --- each worker's change ------

    def _rows(self) -> list[QTreeWidgetItem]:
        items = (self.workers.topLevelItem(i) for i in range(self.workers.topLevelItemCount()))
        return [item for item in items if item is not None]

    def worker_ids(self) -> list[str]:
        return [str(item.data(0, Qt.ItemDataRole.UserRole)) for item in self._rows()]

    def set_changes(self, agent_id: str, changes: dict[str, Any]) -> None:
        """What ``agents.changes`` said of a worker: files, lines added and removed (or
        ``{"error": ...}`` when git could not tell); with ``diff``, the diff itself."""
        self.changes[agent_id] = changes
        for item in self._rows():
            if item.data(0, Qt.ItemDataRole.UserRole) == agent_id:
                self._show_change(item, changes)
        self.workers.resizeColumnToContents(2)
        self.workers.expandAll()
        if "diff" in changes and self._diff_agent == agent_id:
            self._show_diff(changes)
        self._selection_changed()

    def _show_change(self, item: QTreeWidgetItem, changes: dict[str, Any] | None) -> None:
        item.takeChildren()
        if changes is None:
            item.setText(2, "reading git…")
            return
        item.setText(2, change_text(changes))
        item.setToolTip(2, str(changes.get("error") or change_text(changes)))
        for f in changes.get("files") or []:
            child = QTreeWidgetItem([f"{f.get('path', '')}   {file_change_text(f)}"])
            child.setData(0, Qt.ItemDataRole.UserRole, item.data(0, Qt.ItemDataRole.UserRole))
            item.addChild(child)
            child.setFirstColumnSpanned(True)

    def _selection_changed(self) -> None:
        agent = self._agent_of(self.workers.currentItem())
        changes = self.changes.get(agent) if agent else None
        self.show_diff.setEnabled(bool(changes and changes.get("files")))

    def _agent_of(self, item: QTreeWidgetItem | None) -> str | None:
        if item is None:
            return None
        value = item.data(0, Qt.ItemDataRole.UserRole)
        return value if isinstance(value, str) else None

    def _diff_of(self, item: QTreeWidgetItem | None) -> None:
        agent = self._agent_of(item)
        if agent is None:
            return
        self._diff_agent = agent
        changes = self.changes.get(agent, {})
        if "diff" in changes:
            self._show_diff(changes)
        else:
            self.diff.setPlainText("Reading the diff from git…")
            self.diff.show()
            self.diff_title.hide()
            self.diff_wanted.emit(agent)

    def _show_diff(self, changes: dict[str, Any]) -> None:
        text = str(changes.get("diff") or "(no change)")
        if changes.get("truncated"):
            text += "\n… (cut: the diff is longer; see it with git)"
        self.diff.setPlainText(text)
        self.diff.show()
        agent = str(changes.get("agent") or self._diff_agent or "")
        name = next(
            (i.text(0) for i in self._rows() if i.data(0, Qt.ItemDataRole.UserRole) == agent),
            agent,
        )
        self.diff_title.setText(
            f"{name}: what merging {changes.get('branch', 'its branch')} into "
            f"{changes.get('base', 'the base')} brings"
        )
        self.diff_title.show()

    @property
    def approving(self) -> str | None:
        return self._approving

    def choose(self, option: str) -> None:
        """Answer with one of the report's options (exactly as written)."""
        self.answer.emit({"mission": self.mission_id, "option": option})

    def _typed(self) -> None:
        text = self.reply.text().strip()
        if text:
            self.answer.emit({"mission": self.mission_id, "text": text})

    def show_status(self, text: str) -> None:
        self.status.setText(text)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

"""The Changes tab of an agent window: its branch's diff against its base, line comments, and
what a person does next with it.

The files and the diff are the daemon's ``agents.changes`` (``git diff base...branch``: the
commits a merge takes), shown with the approval dialog's parts (``change_text``,
``file_change_text``, ``DiffHighlighter``); a file's part of the diff is shown when it is
picked.  A comment is typed on the diff's current line and kept as ``path:line: text``; "Send
comments" sends them all to the agent as one message (``agents.send``).  Its uncommitted
files are listed, marked (a merge would not take them); when the base moved since the branch
left it, the view says so and offers to ask the agent to rebase (volee never rebases itself).  Merge
(``agents.merge``, or squashed), Discard (``agents.discard``: the daemon first says what would
be lost, with ``dry_run``) and Open folder (``$VISUAL``, else the desktop's file manager) each
say what they do and ask first; a refusal of the daemon is shown in the view.  Open PR
(``agents.open_pr``: the missions' forge code pushes the branch and opens its pull request on
GitHub) first asks the daemon what it would do (``dry_run``), so no remote, a forge that is not
GitHub or no token is said before anything is asked; the pull request's address is shown.
"""

from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QBrush, QColor, QDesktopServices, QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..ipc.methods import Method
from .approval import DiffHighlighter, change_text, file_change_text
from .errors import LinkError

Call = Callable[[Method, dict[str, Any]], Awaitable[Any]]
Spawn = Callable[[Coroutine[Any, Any, None], str], object]
Confirm = Callable[[str, str, tuple[str, ...]], str | None]
HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
UNCOMMITTED = "uncommitted:"  # a file row's data: a file of its folder not in a commit
NOT_COMMITTED = (
    "Not committed: a merge takes only its commits. Ask the agent to commit it (or see it in "
    "its folder)."
)
PR_TIP = (
    "Push its branch to its remote and open a pull request into the base (GitHub, with the "
    "token in the keyring: docs/missions.md)"
)


def unquote(path: str) -> str:
    """A path as git prints it: C-quoted (``"na\\303\\257ve.py"``) when it is not plain ASCII."""
    if len(path) < 2 or not path.startswith('"') or not path.endswith('"'):
        return path
    raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1", "replace").decode("utf-8", "replace")


def _strip(path: str) -> str:
    path = unquote(path)
    return path[2:] if path[:2] in ("a/", "b/") else path


def split_diff(diff: str) -> dict[str, str]:
    """A unified diff cut per file (from ``diff --git``), keyed by the new path (the old one
    for a deleted file), as ``agents.changes`` names its files."""
    parts: dict[str, str] = {}
    path = None
    lines: list[str] = []

    def close() -> None:
        if path is not None:
            parts[path] = "\n".join(lines)

    for line in diff.splitlines():
        if line.startswith("diff --git "):
            close()
            lines = []
            rest = line[11:]
            cut = rest.rfind(' "b/') if rest.endswith('"') else rest.rfind(" b/")
            path = _strip(rest[cut + 1 :]) if cut >= 0 else rest
        elif line.startswith("+++ ") and path is not None and line[4:] != "/dev/null":
            path = _strip(line[4:])
        lines.append(line)
    close()
    return parts


def line_places(text: str) -> list[int | None]:
    """For each line of one file's diff, its line in the new file (a removed line: its line
    in the old one, negated); None for the headers."""
    places: list[int | None] = []
    old = new = 0
    in_hunk = False
    for line in text.splitlines():
        match = HUNK.match(line)
        if match:
            old, new, in_hunk = int(match[1]), int(match[2]), True
            places.append(None)
        elif not in_hunk or line.startswith("\\"):
            places.append(None)
        elif line.startswith("-"):
            places.append(-old)
            old += 1
        else:
            places.append(new)
            new += 1
            if not line.startswith("+"):
                old += 1
    return places


def comments_message(comments: list[str]) -> str:
    return "Comments on your change:\n" + "\n".join(comments)


def ask(parent: QWidget, title: str, text: str, buttons: tuple[str, ...]) -> str | None:
    """A question with the given buttons (and Cancel); the button chosen, or None."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    made = [(box.addButton(b, QMessageBox.ButtonRole.AcceptRole), b) for b in buttons]
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    return next((b for button, b in made if button is clicked), None)


class ChangesView(QWidget):
    """Review one agent's change: files, diff, line comments, merge, discard, open folder."""

    def __init__(self, agent_id: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("changes")
        self.agent_id = agent_id
        self.name = name
        self.folder = ""
        self.call: Call | None = None
        self.spawn: Spawn | None = None
        self.confirm: Confirm = lambda title, text, buttons: ask(self, title, text, buttons)
        self.open_folder_with: Callable[[str], str] = open_folder
        self.result: dict[str, Any] | None = None
        self.parts: dict[str, str] = {}
        self.comments: list[str] = []
        self._places: list[int | None] = []
        self._path = ""

        self.summary = QLabel("Reading the change from git…", self)
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.files = QTreeWidget(self)
        self.files.setObjectName("files")
        self.files.setHeaderLabels(["File", "Change"])
        self.files.setRootIsDecorated(False)
        self.files.currentItemChanged.connect(lambda *_: self._show_file())
        self.diff = QPlainTextEdit(self)
        self.diff.setObjectName("diff")
        self.diff.setReadOnly(True)
        self.diff.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._highlight = DiffHighlighter(self.diff.document())
        self.diff.cursorPositionChanged.connect(self._where_changed)
        self.comment = QLineEdit(self)
        self.comment.setObjectName("comment")
        self.comment.returnPressed.connect(self.add_comment)
        self.add = QPushButton("Add comment", self)
        self.add.setAutoDefault(False)
        self.add.clicked.connect(self.add_comment)
        self.comment_list = QListWidget(self)
        self.comment_list.setObjectName("comments")
        self.comment_list.setMaximumHeight(90)
        self.send_comments = QPushButton("Send comments", self)
        self.send_comments.setObjectName("sendComments")
        self.send_comments.setEnabled(False)
        self.send_comments.clicked.connect(self.send)
        self.status = QLabel(self)
        self.status.setObjectName("changesStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.status.setOpenExternalLinks(True)  # a pull request's address

        self.buttons: dict[str, QPushButton] = {}
        actions = QHBoxLayout()
        for key, text, tip, slot in (
            ("merge", "Merge…", "Merge its branch into the base branch", self.merge),
            ("pr", "Open PR…", PR_TIP, self.open_pr),
            ("discard", "Discard…", "Remove its worktree and branch", self.discard),
            (
                "folder",
                "Open folder",
                "Open its folder ($VISUAL, else the file manager)",
                self.open,
            ),
            ("rebase", "Ask it to rebase…", "Ask the agent to rebase on the base", self.rebase),
            ("refresh", "Refresh", "Read the change from git again", self.load),
        ):
            button = QPushButton(text, self)
            button.setObjectName(f"changes-{key}")
            button.setAutoDefault(False)
            button.setToolTip(tip)
            button.clicked.connect(slot)
            actions.addWidget(button)
            self.buttons[key] = button
        self.buttons["rebase"].hide()  # shown when the base moved: volee never rebases itself
        actions.addStretch(1)

        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.files)
        split.addWidget(self.diff)
        split.setSizes([220, 600])
        comment_row = QHBoxLayout()
        comment_row.addWidget(self.comment, 1)
        comment_row.addWidget(self.add)
        comment_row.addWidget(self.send_comments)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addLayout(comment_row)
        layout.addWidget(self.comment_list)
        layout.addLayout(actions)
        layout.addWidget(self.status)
        self._where_changed()

    # --- the change ------------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        if self.spawn is None:
            coro.close()
            return
        self.spawn(coro, what)

    async def _call(self, method: Method, params: dict[str, Any]) -> Any:
        if self.call is None:
            raise LinkError("not connected to the volee daemon")
        return await self.call(method, params)

    def load(self) -> None:
        """Ask for the change and its diff (``agents.changes`` with ``diff``)."""

        async def read() -> None:
            try:
                result = await self._call(
                    Method.AGENTS_CHANGES, {"agent": self.agent_id, "diff": True}
                )
            except LinkError as exc:
                self.set_changes({"error": str(exc)})
                return
            self.set_changes(result if isinstance(result, dict) else {})

        self._run(read(), f"read the change of {self.agent_id}")

    def set_changes(self, result: dict[str, Any]) -> None:
        self.result = result
        self.files.clear()
        self.parts = split_diff(str(result.get("diff") or ""))
        if result.get("error"):
            self.summary.setText(f"No change to show: {result['error']}")
        else:
            self.summary.setText(
                f"<b>{change_text(result)}</b> — what merging {result.get('branch', '?')} "
                f"into {result.get('base', '?')} brings (committed work only)"
                + (" · the diff is cut: see the rest with git" if result.get("truncated") else "")
            )
        for f in result.get("files") or []:
            item = QTreeWidgetItem([str(f.get("path", "")), file_change_text(f)])
            item.setData(0, Qt.ItemDataRole.UserRole, str(f.get("path", "")))
            self.files.addTopLevelItem(item)
        uncommitted = [str(p) for p in result.get("uncommitted") or []]
        for path in uncommitted:  # in its folder, not in a commit: a merge leaves them
            item = QTreeWidgetItem([path, "uncommitted"])
            item.setData(0, Qt.ItemDataRole.UserRole, UNCOMMITTED + path)
            item.setForeground(1, QBrush(QColor("#e8590c")))
            item.setToolTip(0, NOT_COMMITTED)
            self.files.addTopLevelItem(item)
        notes = []
        if uncommitted:
            n = len(uncommitted)
            notes.append(f"{n} uncommitted file{'s' if n != 1 else ''} a merge would not take")
        moved = int(result.get("base_moved") or 0)
        if moved:
            notes.append(
                f"{result.get('base')} moved {moved} commit{'s' if moved != 1 else ''} since "
                f"{result.get('branch')} left it"
            )
        if notes:
            self.summary.setText(self.summary.text() + "<br>" + "; ".join(notes))
        self.buttons["rebase"].setVisible(moved > 0)
        self.files.resizeColumnToContents(0)
        first = self.files.topLevelItem(0)
        if first is not None:
            self.files.setCurrentItem(first)
        else:
            self.diff.setPlainText("")
        has = bool(result.get("files"))
        self.buttons["merge"].setEnabled(has)
        self.buttons["pr"].setEnabled(has)

    def _show_file(self) -> None:
        item = self.files.currentItem()
        self._path = str(item.data(0, Qt.ItemDataRole.UserRole)) if item is not None else ""
        if self._path.startswith(UNCOMMITTED):
            self._path, text = "", NOT_COMMITTED
        else:
            text = self.parts.get(self._path, "(binary or no textual diff)")
        self._places = line_places(text)
        self.diff.setPlainText(text)

    def show_file(self, path: str) -> None:
        for i in range(self.files.topLevelItemCount()):
            item = self.files.topLevelItem(i)
            if item is not None and item.data(0, Qt.ItemDataRole.UserRole) == path:
                self.files.setCurrentItem(item)

    # --- comments --------------------------------------------------------------------------

    def place(self) -> str | None:
        """``path:42`` of the diff's current line (``path:42 (removed)``), or None."""
        row = self.diff.textCursor().blockNumber()
        at = self._places[row] if 0 <= row < len(self._places) else None
        if at is None or not self._path:
            return None
        return f"{self._path}:{at}" if at > 0 else f"{self._path}:{-at} (removed line)"

    def _where_changed(self) -> None:
        where = self.place()
        self.comment.setPlaceholderText(
            f"Comment on {where} (Enter adds it)"
            if where
            else "Click a line of the diff, then type a comment on it"
        )
        self.add.setEnabled(where is not None)

    def add_comment(self) -> None:
        where, text = self.place(), self.comment.text().strip()
        if where is None or not text:
            return
        self.comments.append(f"{where}: {text}")
        self.comment_list.addItem(self.comments[-1])
        self.comment.clear()
        self.send_comments.setEnabled(True)
        self.send_comments.setText(f"Send {len(self.comments)} comment(s)")

    def send(self) -> None:
        if not self.comments:
            return
        message = comments_message(self.comments)
        if self.confirm("Send comments", f"Send this to {self.name}?\n\n{message}", ("Send",)):
            self._act(Method.AGENTS_SEND, {"agent": self.agent_id, "text": message}, "sent")

    # --- what happens next -----------------------------------------------------------------

    def rebase(self) -> None:
        r = self.result or {}
        base, branch = r.get("base", "the base"), r.get("branch", "your branch")
        message = (
            f"{base} moved since {branch} left it: please rebase {branch} on {base}, resolve "
            "any conflicts, run the tests and commit."
        )
        if self.confirm("Ask to rebase", f"Send this to {self.name}?\n\n{message}", ("Send",)):
            self._act(Method.AGENTS_SEND, {"agent": self.agent_id, "text": message}, "asked")

    def merge(self) -> None:
        r = self.result or {}
        branch, base = r.get("branch", "its branch"), r.get("base", "the base")
        chosen = self.confirm(
            "Merge",
            f"Merge {branch} into {base} ({change_text(r)})?\n\nMerge: a fast-forward when "
            f"{base} has not moved, else a merge commit. Squash: one commit. A conflict is "
            "aborted: nothing is left half-merged. Its uncommitted changes are not merged.",
            ("Merge", "Squash and merge"),
        )
        if chosen:
            params = {"agent": self.agent_id, "squash": chosen.startswith("Squash")}
            self._act(Method.AGENTS_MERGE, params, "merged")

    def discard(self) -> None:
        async def ask_first() -> None:
            try:
                said = await self._call(
                    Method.AGENTS_DISCARD, {"agent": self.agent_id, "dry_run": True}
                )
            except LinkError as exc:
                self.refused(f"Not discarded: {exc}")
                return
            text = str(said.get("text", "")) if isinstance(said, dict) else ""
            if self.confirm("Discard", f"{text}.\n\nThis cannot be undone.", ("Discard",)):
                self._act(Method.AGENTS_DISCARD, {"agent": self.agent_id}, "discarded")

        self._run(ask_first(), f"discard {self.agent_id}")

    def open_pr(self) -> None:
        async def ask_first() -> None:
            try:
                said = await self._call(
                    Method.AGENTS_OPEN_PR, {"agent": self.agent_id, "dry_run": True}
                )
            except LinkError as exc:
                self.refused(f"No pull request: {exc}")
                return
            said = said if isinstance(said, dict) else {}
            text = f"Open PR {said.get('title', '')!r}: {said.get('text', '')}?"
            if self.confirm("Open PR", text, ("Open PR",)):
                self._act(Method.AGENTS_OPEN_PR, {"agent": self.agent_id}, "opened")

        self._run(ask_first(), f"open the pull request of {self.agent_id}")

    def _act(self, method: Method, params: dict[str, Any], done: str) -> None:
        async def act() -> None:
            try:
                result = await self._call(method, params)
            except LinkError as exc:
                self.refused(f"Not {done}: {exc}")
                return
            said = result if isinstance(result, dict) else {}
            if said.get("merged") is False:
                self.refused(str(said.get("text") or "not merged"))
                return
            if done == "asked":
                self.say(f"Asked {self.name} to rebase; Refresh once it is done.")
                return
            if done == "sent":
                self.comments.clear()
                self.comment_list.clear()
                self.send_comments.setEnabled(False)
                self.send_comments.setText("Send comments")
                self.say(f"Sent your comments to {self.name} as one message.")
                return
            self.say(str(said.get("text") or done).capitalize() + ".")
            if done == "opened":  # its address as a link
                url = html.escape(str(said.get("url") or ""))
                if url.startswith("https://"):
                    link = f'<a href="{url}">{url}</a>'
                    self.status.setText(html.escape(self.status.text()).replace(url, link))
                return
            if done == "merged":
                self.load()
            else:
                for key in ("merge", "discard", "folder"):
                    self.buttons[key].setEnabled(False)

        self._run(act(), f"{method} {self.agent_id}")

    def open(self) -> None:
        if not self.folder or not os.path.isdir(self.folder):
            self.refused(f"{self.name}'s folder {self.folder or '(none)'} is not there")
            return
        self.say(self.open_folder_with(self.folder))

    def say(self, text: str) -> None:
        self.status.setStyleSheet("")
        self.status.setText(text)

    def refused(self, text: str) -> None:
        self.status.setStyleSheet("color: #c92a2a;")
        self.status.setText(text)


_EDITORS: list[subprocess.Popen[bytes]] = []  # editors started: kept, to be reaped


def open_folder(folder: str) -> str:
    """Open the folder in ``$VISUAL`` (a graphical editor), else the desktop's file manager."""
    visual = os.environ.get("VISUAL", "").strip()
    if visual:
        try:
            editor = subprocess.Popen([*shlex.split(visual), folder], start_new_session=True)
            _EDITORS[:] = [p for p in _EDITORS if p.poll() is None] + [editor]  # reaped later
            return f"Opened {folder} in {visual}."
        except OSError as exc:
            return f"Could not start $VISUAL ({visual}): {exc}"
    if QDesktopServices.openUrl(QUrl.fromLocalFile(folder)):
        return f"Opened {folder} with the desktop's file manager."
    return f"Nothing opened {folder}: set $VISUAL to your editor"

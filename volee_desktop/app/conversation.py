"""An agent's conversation in its window: prompts, volee's messages, replies, tool calls, errors.

The entries are the daemon's ``agents.log`` (the harness's own transcript, never the screen).
The view asks only for what it does not have yet (``start`` = the entries it shows), page by
page, through the ``fetch`` coroutine its window is given, so a 5,000-entry conversation
opens without the GUI thread reading or parsing anything, and is laid out ``SLICE`` entries a
loop turn (the longest stall stays tens of ms: bench/conversation.py); while shown it follows
the agent every ``FOLLOW_MS``.  Replies are rendered as Markdown; a tool call is one line (the
first line of its result after it) and clicking it shows its whole input and result below;
errors are red.  Ctrl+F searches.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

FOLLOW_MS = 2000
#: Entries laid out in one go while a page is shown (each is about 1 ms on this machine).
SLICE = 25
Fetch = Callable[[int], Awaitable[dict[str, Any]]]
Spawn = Callable[[Coroutine[Any, Any, None], str], object]
LABEL = {"user": "You", "volee": "volee", "assistant": "Agent", "error": "Error"}
COLOUR = {"user": "#1971c2", "volee": "#7048e8", "assistant": "#2b8a3e", "error": "#c92a2a"}


def entry_html(index: int, entry: dict[str, Any]) -> str:
    """The HTML of one entry that is not a reply (replies are inserted as Markdown)."""
    kind = str(entry.get("kind"))
    text = html.escape(str(entry.get("text") or ""))
    if kind == "tool":
        mark, colour = ("✗", "#c92a2a") if entry.get("error") else ("›", "#495057")
        line = f'<a href="tool:{index}" style="color:{colour}">{mark} {text}</a>'
        result = entry.get("result")
        if isinstance(result, str):
            first = next((r for r in result.splitlines() if r.strip()), "(no output)")
            line += f'<br><span style="color:#868e96">&nbsp;&nbsp;{html.escape(first[:200])}</span>'
        return f'<p style="margin-left:16px; font-family:monospace">{line}</p>'
    head = f'<b style="color:{COLOUR.get(kind, "#000")}">{LABEL.get(kind, kind)}</b>'
    body = text.replace("\n", "<br>")
    if kind == "error":
        body = f'<span style="color:#c92a2a">{body}</span>'
    return f"<p>{head}<br>{body}</p>"


def tool_detail(entry: dict[str, Any]) -> str:
    """A tool call's whole input and result, as text."""
    data = entry.get("input")
    shown = data if isinstance(data, str) else json.dumps(data, indent=2, ensure_ascii=False)
    result = entry.get("result")
    said = "(no result yet)" if result is None else str(result)
    failed = " (failed)" if entry.get("error") else ""
    return f"{entry.get('tool')}\n\ninput:\n{shown}\n\nresult{failed}:\n{said}"


class ConversationView(QWidget):
    """The Conversation tab of an agent window."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("conversation")
        self.entries: list[dict[str, Any]] = []
        self.fetch: Fetch | None = None
        self.spawn: Spawn | None = None
        self._busy = False
        self.browser = QTextBrowser(self)
        self.browser.setObjectName("conversationText")
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self._clicked)
        self.browser.setPlaceholderText("Loading the conversation…")
        self.detail = QPlainTextEdit(self)
        self.detail.setObjectName("toolDetail")
        self.detail.setReadOnly(True)
        self.detail.hide()
        self.search = QLineEdit(self)
        self.search.setObjectName("search")
        self.search.setPlaceholderText("Find in the conversation (Enter: next)")
        self.search.returnPressed.connect(self.find_next)
        self.search.hide()
        self.notice = QLabel(self)
        self.notice.setObjectName("notice")
        self.notice.setWordWrap(True)
        self.notice.hide()
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.browser)
        split.addWidget(self.detail)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search)
        layout.addWidget(split, 1)
        layout.addWidget(self.notice)
        find = QShortcut(QKeySequence.StandardKey.Find, self)
        find.activated.connect(self.start_search)
        self.timer = QTimer(self)
        self.timer.setInterval(FOLLOW_MS)
        self.timer.timeout.connect(self.load)

    # --- entries ---------------------------------------------------------------------------

    def add(self, entries: list[dict[str, Any]]) -> None:
        """Append entries at the end (the view stays where the person scrolled, unless at the
        bottom: then it follows)."""
        bar = self.browser.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.browser.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        for entry in entries:
            index = len(self.entries)
            self.entries.append(entry)
            if entry.get("kind") == "assistant":
                cursor.insertHtml(f'<p><b style="color:{COLOUR["assistant"]}">Agent</b></p>')
                cursor.insertBlock()
                cursor.insertMarkdown(str(entry.get("text") or ""))
                cursor.insertBlock()
            else:
                cursor.insertHtml(entry_html(index, entry))
                cursor.insertBlock()
        if at_bottom:
            bar.setValue(bar.maximum())

    def show_notice(self, text: str | None) -> None:
        self.notice.setText(text or "")
        self.notice.setVisible(bool(text))

    def _clicked(self, url: QUrl) -> None:
        target = url.toString()
        if not target.startswith("tool:"):
            return
        index = int(target.removeprefix("tool:"))
        if 0 <= index < len(self.entries):
            self.detail.setPlainText(tool_detail(self.entries[index]))
            self.detail.show()

    # --- search ----------------------------------------------------------------------------

    def start_search(self) -> None:
        self.search.show()
        self.search.setFocus()
        self.search.selectAll()

    def find_next(self) -> bool:
        """Select the next match (from the top again after the last); False: none."""
        text = self.search.text()
        if not text:
            return False
        if self.browser.find(text):
            return True
        self.browser.moveCursor(QTextCursor.MoveOperation.Start)
        return self.browser.find(text)

    # --- loading ---------------------------------------------------------------------------

    def follow(self, on: bool) -> None:
        """Follow the agent while shown (``on``), and load what is new now."""
        if on:
            self.timer.start()
            self.load()
        else:
            self.timer.stop()

    def load(self) -> None:
        """Ask the daemon for the entries after those shown (one request at a time)."""
        if self.fetch is None or self.spawn is None or self._busy:
            return
        self._busy = True
        self.spawn(self._load(self.fetch), "the conversation")

    async def _load(self, fetch: Fetch) -> None:
        try:
            while True:
                page = await fetch(len(self.entries))
                if page.get("start") != len(self.entries):
                    # The transcript was replaced (read again from its start): show it anew.
                    self.entries = []
                    self.browser.clear()
                    if page.get("start") != 0:
                        page = await fetch(0)
                got = list(page.get("entries") or [])
                for i in range(0, len(got), SLICE):
                    # A page holds up to 1,000 entries (about a second of layout): in slices,
                    # the loop turns between them and the first screen is drawn at once.
                    self.add(got[i : i + SLICE])
                    await asyncio.sleep(0)
                self.show_notice(page.get("notice"))
                if page.get("next") is None:
                    return
        except Exception as exc:  # the link's errors: shown, and tried again on the next tick
            self.show_notice(f"No conversation: {exc}")
        finally:
            self._busy = False

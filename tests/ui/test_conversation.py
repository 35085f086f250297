"""The Conversation view of an agent window: entries from ``agents.log``, page by page."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from PySide6.QtCore import QUrl

from tests.fakes.conversation import FakeLog
from volee_desktop.app.conversation import SLICE, ConversationView, tool_detail
from volee_desktop.core.model import Agent, Harness

ENTRIES: list[dict[str, Any]] = [
    {"kind": "user", "text": "make the tests pass", "at": None},
    {
        "kind": "tool",
        "text": "Bash: pytest -q",
        "at": None,
        "tool": "Bash",
        "input": {"command": "pytest -q"},
        "result": "3 failed\nlong output",
        "error": True,
    },
    {"kind": "assistant", "text": "Fixed **two** of them.\n\n- a\n- b", "at": None},
    {"kind": "error", "text": "API Error: 400 refused", "at": None},
]


def _run(coro: Coroutine[Any, Any, None], _name: str) -> None:
    asyncio.run(coro)


def view_of(entries: list[dict[str, Any]]) -> tuple[ConversationView, FakeLog]:
    view = ConversationView()
    fake = FakeLog(entries)
    view.fetch = fake
    view.spawn = _run
    return view, fake


def test_loads_every_page_renders_replies_as_markdown_and_marks_errors(qtbot: Any) -> None:
    view, fake = view_of(list(ENTRIES))
    qtbot.addWidget(view)
    view.load()
    assert fake.calls == [0, 2]
    text = view.browser.toPlainText()
    assert "make the tests pass" in text
    assert "Bash: pytest -q" in text
    assert "3 failed" in text  # the first line of the result
    assert "long output" not in text  # the rest on demand
    assert "**two**" not in text  # Markdown, rendered
    assert "Fixed two of them." in text
    assert "API Error: 400 refused" in view.browser.toHtml()
    assert "#c92a2a" in view.browser.toHtml()


def test_a_page_of_a_thousand_entries_is_laid_out_in_slices_between_loop_turns(
    qtbot: Any,
) -> None:
    entries = [{"kind": "user", "text": f"prompt {n}", "at": None} for n in range(1000)]
    view = ConversationView()
    qtbot.addWidget(view)
    fake = FakeLog(entries, page=1000)
    seen: list[int] = []

    async def watch() -> None:
        loading = asyncio.ensure_future(view._load(fake))
        while not loading.done():
            seen.append(len(view.entries))
            await asyncio.sleep(0)

    asyncio.run(watch())
    assert fake.calls == [0]
    assert len(view.entries) == 1000
    # The loop turned while the page was laid out: the GUI thread was never held for it all.
    assert [n for n in seen if 0 < n < 1000][:2] == [SLICE, 2 * SLICE]
    assert "prompt 999" in view.browser.toPlainText()


def test_following_asks_only_for_what_is_new(qtbot: Any) -> None:
    view, fake = view_of(list(ENTRIES[:2]))
    qtbot.addWidget(view)
    view.load()
    fake.entries.append(ENTRIES[2])
    view.load()
    assert fake.calls == [0, 2]
    assert len(view.entries) == 3


def test_a_tool_call_opens_its_whole_input_and_result(qtbot: Any) -> None:
    view, _ = view_of(list(ENTRIES))
    qtbot.addWidget(view)
    view.load()
    assert view.detail.isHidden()
    view.browser.anchorClicked.emit(QUrl("tool:1"))
    assert not view.detail.isHidden()
    assert view.detail.toPlainText() == tool_detail(ENTRIES[1])
    assert "long output" in view.detail.toPlainText()
    assert "result (failed)" in view.detail.toPlainText()


def test_search_finds_and_wraps_around(qtbot: Any) -> None:
    view, _ = view_of(list(ENTRIES))
    qtbot.addWidget(view)
    view.load()
    view.start_search()
    view.search.setText("pytest")
    assert view.find_next()
    assert view.find_next()  # from the top again
    view.search.setText("nowhere at all")
    assert not view.find_next()


def test_a_replaced_transcript_is_shown_anew(qtbot: Any) -> None:
    view, fake = view_of(list(ENTRIES))
    qtbot.addWidget(view)
    view.load()

    async def shorter(start: int) -> dict[str, Any]:
        fake.calls.append(start)
        return {"start": 0, "entries": ENTRIES[:1], "next": None, "notice": "cut"}

    view.fetch = shorter
    view.load()
    assert len(view.entries) == 1
    assert view.notice.text() == "cut"


def test_the_agent_window_has_conversation_and_changes_tabs(qtbot: Any) -> None:
    from volee_desktop.app.agent_window import AgentWindow

    window = AgentWindow(Agent(id="ag_1", name="a", harness=Harness.CLAUDE))
    qtbot.addWidget(window)
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == [
        "Screen",
        "Conversation",
        "Changes",
    ]
    fake = FakeLog(list(ENTRIES))
    window.conversation.fetch = fake
    window.conversation.spawn = _run
    window.show()
    window.tabs.setCurrentWidget(window.conversation)
    assert fake.calls == [0, 2]
    assert window.conversation.timer.isActive()
    window.hide()
    assert not window.conversation.timer.isActive()

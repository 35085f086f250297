"""A fake ``agents.log`` for the Conversation view's tests, page by page."""

from __future__ import annotations

from typing import Any


class FakeLog:
    """``agents.log`` with pages of ``page`` entries (two, or the daemon's 1,000); ``calls``
    records each request's start."""

    def __init__(self, entries: list[dict[str, Any]], page: int = 2) -> None:
        self.entries = entries
        self.page = page
        self.calls: list[int] = []

    async def __call__(self, start: int) -> dict[str, Any]:
        self.calls.append(start)
        page = self.entries[start : start + self.page]
        end = start + len(page)
        return {
            "start": start,
            "entries": page,
            "next": end if end < len(self.entries) else None,
            "notice": None,
        }

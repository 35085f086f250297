"""Threads: the direct thread of a set of parties, found or opened, and a message posted into
a thread (the agents runner posts into a direct one, and so does ``messages.post`` outside a
mission)."""

from __future__ import annotations

from typing import Any

from ..core import events as ev
from ..core.ids import MESSAGE, THREAD
from ..core.model import MessageKind, ThreadKind
from ..core.registry import Registry
from .ids import fresh


def direct_thread(
    registry: Registry, parties: tuple[str, ...], at: float
) -> tuple[str, list[ev.Event]]:
    """The direct thread of exactly ``parties`` (in any order), and the event opening it when
    there is none yet (with the parties in the order given), not yet committed."""
    wanted = set(parties)
    for t in registry.threads.values():
        if t.kind is ThreadKind.DIRECT and set(t.parties) == wanted:
            return t.id, []
    thread = fresh(THREAD)
    return thread, [ev.ThreadOpened(at=at, thread=thread, kind=ThreadKind.DIRECT, parties=parties)]


def posted(
    thread: str,
    sender: str,
    recipients: tuple[str, ...],
    body: str,
    at: float,
    kind: MessageKind = MessageKind.TEXT,
    **more: Any,
) -> ev.MessagePosted:
    """A new message (with a fresh id) in ``thread``, not yet committed; ``more`` are the
    other fields of ``MessagePosted`` (references, reply_to, options, approving)."""
    return ev.MessagePosted(
        at=at,
        message=fresh(MESSAGE),
        thread=thread,
        sender=sender,
        recipients=recipients,
        kind=kind,
        body=body,
        **more,
    )

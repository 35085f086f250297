"""The ``machines`` push of one app feed: what changed of each other machine since that feed's
last push, never the whole list again.

A feed remembers, per machine, the registry copy it was sent from and the very entities it was
sent (the registry's entities are frozen and replaced on every change, so "changed" is "not the
same object"). The next push carries, per machine whose link changed, only the agents, missions
and messages that are new or changed (a registry in the snapshot codec) and the ids of those
gone; a machine whose copy is new (its first reach, or a fresh snapshot after a gap) is sent
whole (``full``), and so is every machine at the start of a feed.  A machine with nothing new
is left out; a push with nothing in it is not sent.  ``removed`` names the machines no longer
configured (``volee machine rm``).  The app's side: ``app/live.py`` ``on_machines``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.registry import Registry
from ...store.codec import encode_registry
from .link import MachineLink

#: The registry's tables another machine's part of the app is made of: its agents, and its
#: missions with their messages (the approval dialog shows the coordinator's report).
TABLES = ("agents", "missions", "messages")


@dataclass
class _Sent:
    """What one feed was last sent of one machine."""

    copy: Registry | None
    head: tuple[Any, ...]
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)


def _head(link: MachineLink) -> tuple[Any, ...]:
    state = link.state
    unreachable = None if state.reachable else link.unreachable_text()
    return (state.reachable, state.since, state.problem, unreachable)


class MachinesFeed:
    """One feed's ``machines`` pushes: ``next()`` is the next one, or None when nothing changed."""

    def __init__(self, links: Callable[[], dict[str, MachineLink]]) -> None:
        self.links = links
        self._sent: dict[str, _Sent] = {}

    def next(self) -> dict[str, Any] | None:
        links = self.links()
        removed = [name for name in self._sent if name not in links]
        for name in removed:
            del self._sent[name]
        entries = [entry for link in links.values() if (entry := self._entry(link)) is not None]
        if not entries and not removed:
            return None
        return {"machines": entries, "removed": removed}

    def _entry(self, link: MachineLink) -> dict[str, Any] | None:
        head = _head(link)
        copy = link.registry
        sent = self._sent.get(link.name)
        full = sent is None or sent.copy is not copy
        now = {t: dict(getattr(copy, t)) for t in TABLES} if copy is not None else {}
        before = {} if full or sent is None else sent.tables
        changed = {
            t: {k: v for k, v in now[t].items() if before.get(t, {}).get(k) is not v} for t in now
        }
        gone = {t: [k for k in before.get(t, {}) if k not in now.get(t, {})] for t in TABLES}
        same = not full and sent is not None and sent.head == head
        if same and not any(changed.values()) and not any(gone.values()):
            return None
        self._sent[link.name] = _Sent(copy, head, now)
        blob = None
        if copy is not None:
            part = Registry(seq=copy.seq, **changed)
            blob = encode_registry(part).decode()
        reachable, since, problem, unreachable = head
        return {
            "name": link.name,
            "reachable": reachable,
            "since": since,
            "problem": problem,
            "unreachable": unreachable,
            "full": full,
            "registry": blob,
            "gone": {t: ids for t, ids in gone.items() if ids},
        }

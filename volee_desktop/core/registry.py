"""The registry: the state of every agent, mission, thread and message, as a fold of events.

``validate(event)`` says why an event would be refused (``None`` when it is
fine; the rules are in ``validation.py``); ``apply(event)`` folds it in (the
fold is in ``fold.py``).  Entities are frozen and replaced, so ``fork()`` (a
shallow copy of the dicts) gives the daemon a cheap working copy to validate a
batch against before the batch is durable.  The tables and their queries are in
``tables.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import events as ev
from .fold import fold
from .tables import Tables
from .validation import check_route, problem_with


@dataclass
class Registry(Tables):
    """Everything volee knows, rebuilt by applying events in order."""

    def fork(self) -> Registry:
        """A working copy that can be changed without touching this registry."""
        return Registry(
            agents=dict(self.agents),
            sessions=dict(self.sessions),
            ignored=dict(self.ignored),
            names=dict(self.names),
            missions=dict(self.missions),
            threads=dict(self.threads),
            messages=dict(self.messages),
            seq=self.seq,
            confirmed_settings=dict(self.confirmed_settings),
        )

    def check_route(self, sender: str, recipient: str) -> str | None:
        """Why ``sender`` may not write to ``recipient`` (``None``: it may)."""
        return check_route(self, sender, recipient)

    def validate(self, event: ev.Event) -> str | None:
        """Why the event would be refused, or ``None`` when it can be applied."""
        return problem_with(self, event)

    def apply(self, event: ev.Event) -> None:
        """Fold one (valid) event into the registry."""
        fold(self, event)

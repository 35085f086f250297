"""What a request offers the person, once for every surface: the list's request bar and
context menu, the agent window, the tray menu and the notifications' buttons.

Allow / Deny for a permission, a question's options, nothing for another dialog (it is
answered in the agent's window); each ``Choice`` with the name its answer goes by (``allow``,
``deny``, ``option:N``: those of ``request-answered``), its words and its shortcut (the same
keys wherever the focus is: Ctrl+Y, Ctrl+D, Alt+1…; none past the sixth option).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from volee_desktop.core.answer import Answer
from volee_desktop.core.model import Request, RequestKind
from volee_desktop.harness.dialogs import Dialog, Keys, answer_keys

MAX_OPTIONS = 6  # a question's options with a button (and a shortcut)
OPTION_KEYS = tuple(f"Alt+{n}" for n in range(1, MAX_OPTIONS + 1))


class Choice(NamedTuple):
    """One answer a request offers: the name it goes by, its words, its shortcut ("" none)."""

    name: str
    text: str
    key: str


ALLOW = Choice("allow", "Allow", "Ctrl+Y")
DENY = Choice("deny", "Deny", "Ctrl+D")
PERMISSION = (ALLOW, DENY)


def choices(kind: str, options: Sequence[str]) -> tuple[Choice, ...]:
    """What a request of ``kind`` offers: Allow and Deny, a question's options, or nothing."""
    if kind == RequestKind.PERMISSION:
        return PERMISSION
    if kind == RequestKind.QUESTION:
        return tuple(
            Choice(f"option:{n}", option, OPTION_KEYS[n - 1] if n <= MAX_OPTIONS else "")
            for n, option in enumerate(options, start=1)
        )
    return ()


#: The answers a permission dialog's numbered options can be (``core.answer``'s words).
_PERMISSION_ANSWERS = (Answer.allow(), Answer.allow(always=True))


def option_answers(dialog: Dialog, request: Request) -> dict[int, str | None]:
    """For each numbered option of ``request``'s permission dialog on screen, the answer it
    is: ``allow`` (1. Yes), ``allow-always`` (2. Yes, and don't ask again …), ``deny`` (No,
    …), or None (one volee does not give, "switch to auto mode": answered in its terminal).

    The same keys the daemon would type for that answer (``answer_keys``), so a button for
    option N goes through the answer's call, checked on the screen and recorded like Allow.
    """
    keys: dict[bytes, str] = {}
    for answer in _PERMISSION_ANSWERS:
        found = answer_keys(dialog, request, answer)
        if isinstance(found, Keys):
            keys.setdefault(found.keys, answer.word)
    return {
        o.number: "deny" if o.label.lower().startswith("no") else keys.get(o.key)
        for o in dialog.options
    }

"""The actions a person takes on an agent from the panel (its buttons, menu and keys)."""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    """One of the panel's actions; the value is its name in signals and object names."""

    OPEN = "open"
    REPLY = "reply"
    STOP = "stop"
    RESUME = "resume"
    TIMELINE = "timeline"
    FORGET = "forget"
    OUTPUT = "output"
    TERMINAL = "terminal"


#: Actions that open a window: the tray's popup hides first so it does not cover it.
OPENS_A_WINDOW = frozenset(
    {Action.OPEN, Action.OUTPUT, Action.TERMINAL, Action.REPLY, Action.TIMELINE}
)

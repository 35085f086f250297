"""The list's action buttons under the rows (Open, Reply…, Stop, Resume, Timeline, Forget…)
with their shortcuts, and what each says for the selected agent or agents: on a selection
Stop, Resume and Forget… act on every agent that fits and say how many ("Stop 3…")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from volee_desktop.core.model import Agent

from .actions import Action
from .many import plan
from .shortcuts import add_shortcut, keys
from .texts import action_label, can_resume, can_stop

# (action, button text, shortcut)
ACTIONS: tuple[tuple[Action, str, str], ...] = (
    (Action.OPEN, "Open", "Return"),
    (Action.REPLY, "Reply…", "Ctrl+R"),
    (Action.STOP, "Stop", "Ctrl+S"),
    (Action.RESUME, "Resume", "Ctrl+E"),
    (Action.TIMELINE, "Timeline", "Ctrl+T"),
    (Action.FORGET, "Forget…", "Ctrl+Delete"),
)
#: Actions that act on every selected agent when several are (the others need one).
MANY = frozenset({Action.STOP, Action.RESUME, Action.FORGET})
#: Actions of the context menu only.
EXTRA_ACTIONS: tuple[tuple[Action, str], ...] = (
    (Action.OUTPUT, "Show recent output"),
    (Action.TERMINAL, "Attach in a terminal"),
)


class ActionBar:
    """The buttons (``row``, a layout for the owner to place) and their shortcuts on ``owner``;
    both run ``trigger(action)``."""

    def __init__(self, owner: QWidget, trigger: Callable[[str], None]) -> None:
        self.buttons: dict[str, QPushButton] = {}
        self.qactions: dict[str, QAction] = {}
        self.row = QHBoxLayout()
        self.row.setSpacing(4)
        for name, text, shortcut in ACTIONS:
            button = QPushButton(text, owner)
            button.setObjectName(f"action-{name}")
            button.setAutoDefault(False)
            button.setToolTip(f"{text.rstrip('…')} ({keys(shortcut)})")
            button.clicked.connect(lambda _=False, n=name: trigger(n))
            self.buttons[name] = button
            self.row.addWidget(button)
            self.qactions[name] = add_shortcut(owner, shortcut, partial(trigger, name), text)

    def update(self, agent: Agent | None, selected: Sequence[Agent]) -> None:
        """What the buttons offer for the current ``agent`` (None: nothing) and, when several
        are ``selected``, for all of them."""
        for button in self.buttons.values():
            button.setEnabled(agent is not None)
        if agent is None:
            return
        self.buttons[Action.STOP].setEnabled(can_stop(agent))
        self.buttons[Action.RESUME].setEnabled(can_resume(agent))
        self.buttons[Action.RESUME].setText(action_label(agent))
        self.qactions[Action.RESUME].setText(action_label(agent))
        for name, text, _key in ACTIONS:
            if name in MANY and name is not Action.RESUME:
                self.buttons[name].setText(text)
        if len(selected) > 1:  # the buttons act on the selection: they say how many
            for name, text, _key in ACTIONS:
                if name in MANY:
                    fits = plan(name, selected)
                    n = len(fits.agents) if fits is not None else 0
                    # A count of none would read as an action on nothing ("Resume 0…").
                    self.buttons[name].setText(f"{text.rstrip('…')} {n}…" if n else text)
                    self.buttons[name].setEnabled(n > 0)

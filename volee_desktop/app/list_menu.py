"""The list's context menu on an agent: the answers its request offers (``request_bar.choices``;
on a selection, Allow on all of it or why not), then the action buttons' entries as they
stand, then the menu's own (recent output, attach in a terminal)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QItemSelectionModel, QPoint
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QListView, QMenu, QPushButton, QWidget

from volee_desktop.core.model import Agent
from volee_desktop.core.states import AgentState

from .action_bar import ACTIONS, EXTRA_ACTIONS, ActionBar
from .attention import label, short
from .choices import ALLOW, choices


def agent_menu(
    parent: QWidget,
    agent: Agent,
    *,
    selection_allow: QPushButton | None,
    bar: ActionBar,
    trigger: Callable[[str], None],
    answer: Callable[[str, str, str], None],
) -> QMenu:
    """The menu of ``agent`` (the current one); ``selection_allow``: the request bar's Allow
    while it speaks for several selected agents.  An answer names the request the menu
    showed: ``answer(choice, agent id, request id)``."""
    menu = QMenu(parent)
    request = agent.request if agent.state is AgentState.NEEDS_INPUT else None
    if selection_allow is not None:  # Allow on the selection, or why not
        item = menu.addAction(selection_allow.text())
        item.setShortcut(QKeySequence(ALLOW.key))
        item.triggered.connect(lambda _=False: trigger(ALLOW.name))
        menu.addSeparator()
    elif request is not None and not request.answered:
        answers = choices(request.kind, request.options)
        for choice in answers:
            item = menu.addAction(label(short(choice.text, 40)))
            if choice.key:
                item.setShortcut(QKeySequence(choice.key))
            item.triggered.connect(
                lambda _=False, n=choice.name, a=agent.id, r=request.id: answer(n, a, r)
            )
        if answers:
            menu.addSeparator()
    for name, _text, shortcut in ACTIONS:
        item = menu.addAction(bar.buttons[name].text())
        if shortcut:
            item.setShortcut(QKeySequence(shortcut))
        item.setEnabled(bar.buttons[name].isEnabled())
        item.triggered.connect(lambda _=False, n=name: trigger(n))
    menu.addSeparator()
    for name, text in EXTRA_ACTIONS:
        item = menu.addAction(text)
        item.triggered.connect(lambda _=False, n=name: trigger(n))
    return menu


def show_menu_at(view: QListView, pos: QPoint, build: Callable[[], QMenu | None]) -> None:
    """A right click at ``pos``: the row under it becomes the current one (on a row of a
    multi-selection the selection stays: the menu acts on it), then its menu."""
    index = view.indexAt(pos)
    model = view.selectionModel()
    if index.isValid() and model.isSelected(index) and len(model.selectedIndexes()) > 1:
        model.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.NoUpdate)
    elif index.isValid():
        view.setCurrentIndex(index)
    menu = build()
    if menu is not None:
        menu.exec(view.viewport().mapToGlobal(pos))

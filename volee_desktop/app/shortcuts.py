"""Keyboard shortcuts as the list and the agent window make them: a key on a widget that
runs a slot, and a key as this platform writes it (for tooltips)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

_NATIVE = QKeySequence.SequenceFormat.NativeText


def keys(shortcut: str) -> str:
    """A shortcut as this platform writes it ("Ctrl+Y", "⌘Y")."""
    return QKeySequence(shortcut).toString(_NATIVE)


def add_shortcut(
    owner: QWidget,
    key: str,
    slot: Callable[[], object],
    text: str = "",
    context: Qt.ShortcutContext = Qt.ShortcutContext.WidgetWithChildrenShortcut,
) -> QAction:
    """``key`` on ``owner`` (and, by default, its children) runs ``slot``."""
    action = QAction(text, owner)
    action.setShortcut(QKeySequence(key))
    action.setShortcutContext(context)
    action.triggered.connect(lambda _=False: slot())
    owner.addAction(action)
    return action

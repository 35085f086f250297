"""Whether the person looks at the app: the list or an agent window is on screen.

The tray app is an interactive client of the daemon (discovery lists often for it) only
while one of the widgets it watches is visible; with only the icon showing it follows
events and asks for nothing (docs/discovery.md, "The cadence").
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtWidgets import QWidget


class Looking(QObject):
    """``on`` while any watched widget is visible; ``changed`` when that flips."""

    changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._visible: set[int] = set()
        self.on = False

    def watch(self, widget: QWidget) -> None:
        """Follow ``widget``'s visibility until it is destroyed."""
        widget.installEventFilter(self)
        key = id(widget)
        widget.destroyed.connect(lambda _obj=None, key=key: self._set(key, False))
        if widget.isVisible():
            self._set(key, True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.Show:
            self._set(id(watched), True)
        elif kind == QEvent.Type.Hide:
            self._set(id(watched), False)
        return False

    def _set(self, key: int, visible: bool) -> None:
        if visible:
            self._visible.add(key)
        else:
            self._visible.discard(key)
        on = bool(self._visible)
        if on != self.on:
            self.on = on
            self.changed.emit(on)

"""Waiting for the app's first frame: the tray icon (or the list window) painted once.

The embedded daemon is imported and started only after it (issue 27: start like a native
app): importing and starting it holds the event loop for most of the start-up, and an icon
shown but not yet painted is an empty square in the panel meanwhile.  A tray that is not a
window of this process (a StatusNotifierItem over D-Bus) has nothing to wait for.
"""

from __future__ import annotations

import asyncio
import contextlib

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget


class _Painted(QObject):
    """Sets ``done`` at the first paint of any of the windows it watches."""

    def __init__(self, windows: list[QWidget], done: asyncio.Event) -> None:
        super().__init__()
        self.windows = windows
        self.done = done
        for window in windows:
            window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.done.set()
        return False

    def remove(self) -> None:
        for window in self.windows:
            with contextlib.suppress(RuntimeError):  # a window already deleted
                window.removeEventFilter(self)


async def first_frame(timeout: float) -> bool:
    """Return once a shown top-level window of this app has been painted (at most
    ``timeout`` seconds; True when it was painted, False when none was or none is shown)."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return False
    shown = [w for w in app.topLevelWidgets() if w.isVisible()]
    if not shown:
        await asyncio.sleep(0)  # let the loop run once: whatever was posted goes out
        return False
    done = asyncio.Event()
    watcher = _Painted(shown, done)
    try:
        await asyncio.wait_for(done.wait(), timeout)
        return True
    except TimeoutError:
        return False
    finally:
        watcher.remove()

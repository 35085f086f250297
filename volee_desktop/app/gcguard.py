"""Python's cyclic garbage is collected on the GUI thread only.

The collector runs in whichever thread allocates when a generation's count passes its
threshold: in the app that can be a worker thread (the embedded daemon's ``to_thread``
calls, qasync's executor). A Qt object freed there (a widget or timer kept alive only by
a reference cycle) runs ``~QObject`` on the wrong thread: Qt says "Timers cannot be
stopped from another thread", leaves its running timers registered, and the GUI thread
then delivers the next one to freed memory (a segfault in ``QTimerInfoList::activateTimers``,
seen in full test runs; ``tests/ui/test_gcguard.py`` makes it happen on purpose).

So the app turns automatic collection off and collects from a timer on the GUI thread, by
the collector's own rule (the oldest generation whose count passed its threshold), as
calibre's ``GarbageCollector`` does for the same reason. Reference counting still frees
everything that is not in a cycle at once; only cycles wait, at most ``INTERVAL_MS``.
Decision D24 (docs/decisions.md).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

#: How often the GUI thread looks at the collector's counts (calibre uses the same 5 s).
INTERVAL_MS = 5000


def collect_due() -> int | None:
    """Collect the oldest generation whose count passed its threshold; which, or None."""
    counts = gc.get_count()
    thresholds = gc.get_threshold()
    for generation in (2, 1, 0):
        if counts[generation] > thresholds[generation]:
            gc.collect(generation)
            return generation
    return None


class GuiCollector(QObject):
    """Automatic collection off while started; the GUI thread's timer collects instead."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(collect_due)
        self._was_enabled = gc.isenabled()

    def start(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.timer.start()

    def stop(self) -> None:
        """Back to automatic collection (as it was), after a last collection here."""
        self.timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

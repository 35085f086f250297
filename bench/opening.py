"""Opening the agent list, timed as the list benches time it (bench/ui.py, bench/machines_list.py):
shown, laid out and painted, then hidden again, ``runs`` times."""

from __future__ import annotations

import time
from typing import Any


def open_times(app: Any, panel: Any, runs: int = 5) -> list[float]:
    """Milliseconds of each opening of ``panel`` (an AgentPanel), the first one first."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        panel.show_near(None)
        app.processEvents()  # lay out and paint
        panel.view.viewport().repaint()
        times.append((time.perf_counter() - t0) * 1000)
        panel.hide()
        app.processEvents()
    return times

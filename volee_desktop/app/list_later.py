"""The agent list window, built the first time something asks for it (issue 27, item 3).

With a tray the first frame is the icon: the list window (its rows, delegate and toolbar)
would cost the start about 40 ms before the icon and the daemon. ``LaterList`` builds it on
demand (``window``), or at the loop's next turn once the daemon answers (``soon``), and keeps
what the list would have shown meanwhile: the summary and the missions awaiting the person
(asked of the controller when built), the context limit, the last status line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .attention import MissionLine
    from .panel import AgentPanel
    from .summary import TraySummary

log = logging.getLogger(__name__)


class LaterList:
    """Holds the list window once built, and what it is to show until then."""

    def __init__(
        self,
        make: Callable[[], AgentPanel],
        summary: Callable[[], tuple[TraySummary, list[MissionLine]]],
        now: Callable[[], float],
        prefs_path: Path | None,
    ) -> None:
        self._make = make
        self._summary = summary
        self._now = now
        self.prefs_path = prefs_path
        self.built: AgentPanel | None = None
        self._status: tuple[str, bool] | None = None  # the last one said before it existed
        self._context_limit: float | None = None

    def window(self) -> AgentPanel:
        """The list window, built now if it was not yet."""
        if self.built is None:
            panel = self._make()
            self._summarize(panel, *self._summary())
            if self._context_limit is not None:
                panel.delegate.context_limit = self._context_limit
            if self._status is not None:
                said, transient = self._status
                panel.show_status(said, transient=transient)
                self._status = None
            self.built = panel
            log.debug("agent list window built")
        return self.built

    def show_summary(self, summary: TraySummary, missions: list[MissionLine]) -> None:
        """The header's summary and the missions awaiting the person, once it is built (it
        asks for them when it is)."""
        if self.built is not None:
            self._summarize(self.built, summary, missions)

    def _summarize(
        self, panel: AgentPanel, summary: TraySummary, missions: list[MissionLine]
    ) -> None:
        panel.set_summary(summary.tooltip)
        panel.set_missions(missions, self._now())

    def soon(self) -> None:
        """Build it at the loop's next turn, so its first showing is instant."""
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, self.window)

    def show_status(self, text: str, transient: bool = False) -> None:
        if self.built is None:
            self._status = (text, transient)
        else:
            self.built.show_status(text, transient=transient)

    def set_context_limit(self, limit: float) -> None:
        self._context_limit = limit
        if self.built is not None:
            self.built.delegate.context_limit = limit

    def pinned(self) -> bool:
        """Whether the list was kept open (its prefs say so), without building it."""
        if self.built is not None:
            return bool(self.built.pinned)
        from .list_prefs import ListPrefs

        return bool(ListPrefs.load(self.prefs_path).pinned)

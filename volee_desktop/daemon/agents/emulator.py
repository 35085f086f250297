"""pyte's screen for the agents' screens (``screens.py``), imported with the first screen."""

from __future__ import annotations

from collections import deque

import pyte

#: Lines kept above the screen (scrolled off its top), for ``volee output --lines N``.
HISTORY = 500


class _Screen(pyte.Screen):
    """pyte's screen keeping the lines that scroll off its top (pyte's HistoryScreen does
    that too, at 2.5 times the cost of every character drawn)."""

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        self.history: deque[str] = deque(maxlen=HISTORY)

    def index(self) -> None:
        top, bottom = self.margins or pyte.screens.Margins(0, self.lines - 1)
        if self.cursor.y == bottom and top == 0:
            self.history.append(line_text(self.buffer[0], self.columns))
        super().index()


def line_text(line: dict[int, pyte.screens.Char], columns: int) -> str:
    return "".join(line[x].data for x in range(columns)).rstrip()


def new_screen(cols: int, rows: int) -> tuple[_Screen, pyte.ByteStream]:
    """A screen of ``cols`` x ``rows`` and the stream that feeds it."""
    screen = _Screen(cols, rows)
    return screen, pyte.ByteStream(screen)

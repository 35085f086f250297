"""pyte's screen for the agents' screens (``screens.py``), imported with the first screen.

pyte's objects hold themselves in reference cycles: a screen's ``buffer`` makes its rows with
a closure over the screen, and a stream's parser is a generator of the stream holding the
screen's methods.  Every screen dropped (an agent's program ended, a new watch connection, a
rebuild) was garbage only the oldest generation's collection frees, which runs rarely: the
soak's daemon grew by the screens its agents left, 1,400-2,100 objects a 30 s sample of them
(issue 22).  ``_Screen`` makes its rows without the cycle and ``release`` breaks the
stream's, so a screen let go is freed at once.
"""

from __future__ import annotations

import weakref
from collections import defaultdict, deque

import pyte
from pyte.screens import StaticDefaultDict

#: Lines kept above the screen (scrolled off its top), for ``volee output --lines N``.
HISTORY = 500


class _Screen(pyte.Screen):
    """pyte's screen keeping the lines that scroll off its top (pyte's HistoryScreen does
    that too, at 2.5 times the cost of every character drawn)."""

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        self.history: deque[str] = deque(maxlen=HISTORY)
        # pyte's rows come from ``lambda: StaticDefaultDict[int, Char](self.default_char)``:
        # a cycle through the screen, and a new generic alias kept on every row.  The same
        # rows (the default character read when the row is made, as pyte does) without them:
        screen = weakref.ref(self)
        self.buffer = defaultdict(lambda: StaticDefaultDict(_default_char(screen)))

    def index(self) -> None:
        top, bottom = self.margins or pyte.screens.Margins(0, self.lines - 1)
        if self.cursor.y == bottom and top == 0:
            self.history.append(line_text(self.buffer[0], self.columns))
        super().index()


def _default_char(screen: weakref.ref[_Screen]) -> pyte.screens.Char:
    alive = screen()
    return alive.default_char if alive is not None else pyte.screens.Char(" ")


def line_text(line: dict[int, pyte.screens.Char], columns: int) -> str:
    return "".join(line[x].data for x in range(columns)).rstrip()


def screen_lines(screen: pyte.Screen) -> list[str]:
    """Every row of the screen as text (about 35 µs a row of 120: not for every output)."""
    return [line_text(screen.buffer[y], screen.columns) for y in range(screen.lines)]


def new_screen(cols: int, rows: int) -> tuple[_Screen, pyte.ByteStream]:
    """A screen of ``cols`` x ``rows`` and the stream that feeds it."""
    screen = _Screen(cols, rows)
    return screen, pyte.ByteStream(screen)


def release(screen: _Screen, stream: pyte.ByteStream) -> None:
    """Break the stream's cycle (its parser generator's frame holds the stream and the
    screen's methods) so that both are freed when let go; neither may be fed after.  The
    caller holds the lock of whoever feeds them."""
    parser = getattr(stream, "_parser", None)  # pyte 0.8's state machine, a generator
    if parser is not None:
        parser.close()  # clears its frame, and with it the references
    stream._parser = None
    stream.listener = None
    screen.buffer.clear()

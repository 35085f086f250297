"""The host's requests: what a client on the socket may ask (attach, send, resize, screen…).

``Host`` extends ``Requests``; ``_request`` finds the ``_op_<name>`` handler of each JSON
request.  Stdlib only and imported by every host: keep it lean (see ``host``'s docstring).
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import time

from volee_desktop.hosts import wire

# Not typing.TYPE_CHECKING: importing typing would cost every host its memory (mypy reads
# any TYPE_CHECKING name as true).
TYPE_CHECKING = False

if TYPE_CHECKING:
    import signal as _signal  # _signal has no stubs: it is signal's C half
    from _socket import socket

    from volee_desktop.hosts.ring import Ring
else:
    import _signal

REPLAY_BYTES = 64 * 1024
SCREEN_WINDOW = 16 * 1024
# Claude Code treats a \r glued to a paste as part of it: Enter goes separately, later.
ENTER_PAUSE = 0.1
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
# A watch's ``every_ms``: output held back at most this long, and sent at once from this size.
MAX_EVERY_MS = 10_000
HOLD_LIMIT = 64 * 1024
# For this long after a client sent the program keys or a size, its output is held back from
# no watch: what the program redraws for them (a dialog answered in its terminal, issue 27)
# reaches the daemon at once, whatever hold the daemon asked.
STIRRED = 2.0


def _whole(value: object, what: str) -> int:
    """A request's number as ``int()`` reads it (an int, a float, a numeral: ValueError for
    another text), TypeError for any other JSON value."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"{what!r} must be a number, not {type(value).__name__}")


def _real(value: object, what: str) -> float:
    """A request's number as ``float()`` reads it; TypeError for a JSON value that is none."""
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"{what!r} must be a number, not {type(value).__name__}")


class _Client:
    """One connection to the host socket."""

    __slots__ = (
        *("armed", "attached", "every", "held", "out", "output"),
        *("reader", "sent_at", "sock", "watching"),
    )

    def __init__(self, sock: socket) -> None:
        self.sock = sock
        self.reader = wire.FrameReader()
        self.out = bytearray()
        self.attached = False
        self.watching = False  # wants the program's end (the daemon)
        self.output = False  # and its output, without being attached (the daemon's screens)
        # Its output at most once every ``every`` seconds (0: as it comes; ``Host._hold``).
        self.every = 0.0
        self.held = bytearray()  # output not sent yet
        self.sent_at = float("-inf")  # when output was last queued to it
        self.armed = False  # a timer will send what is held


class Requests:
    """The request handlers of a host; the state and I/O they use are ``Host``'s."""

    # Host's state that the handlers read and change (declared here for the type checker).
    rows: int
    cols: int
    master: int
    record: dict[str, object]
    exit: dict[str, object] | None
    scrollback: Ring
    paste_mode: bool
    stirred_at: float
    to_pty: bytearray
    clients: dict[int, _Client]
    stop_requested: bool
    stop_waiters: list[_Client]
    agent: str
    sends: list[tuple[_Client, bytes, bool]]
    send_busy: bool
    done: bool

    if TYPE_CHECKING:

        def _reply(self, client: _Client, obj: dict[str, object]) -> None: ...
        def _queue(self, client: _Client, data: bytes) -> None: ...
        def _write_pty(self, data: bytes) -> None: ...
        def _later(self, delay: float, fn: object) -> None: ...
        def _killpg(self, sig: int) -> bool: ...
        def _end_linger(self) -> None: ...

    # -- requests ------------------------------------------------------------

    def _request(self, client: _Client, req: dict[str, object]) -> None:
        op = req.get("op")
        handler = getattr(self, f"_op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            self._reply(client, {"ok": False, "error": f"unknown request {op!r}"})
            return
        try:
            handler(client, req)
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            # OverflowError: int() of an infinity, float() of a huge int (it ended the host)
            self._reply(client, {"ok": False, "error": f"bad {op} request: {exc}"})

    def _op_hello(self, client: _Client, req: dict[str, object]) -> None:
        """Say whose host this is: the daemon adopts a host only once it answered so."""
        self._reply(client, {"ok": True, "agent": self.agent, "pid": os.getpid()})

    def _op_watch(self, client: _Client, req: dict[str, object]) -> None:
        """Hear of the program's end at once (and, with ``output``, see its output)."""
        if req.get("every_ms") is not None:
            every = _whole(req["every_ms"], "every_ms")
            if not 0 <= every <= MAX_EVERY_MS:
                raise ValueError(f"every_ms {every} is out of range")
            client.every = every / 1000
        client.watching = True
        self._reply(client, {"ok": True, "rows": self.rows, "cols": self.cols})
        if req.get("output"):
            # The daemon renders the screen from the output (daemon/agents/screens.py): the recent
            # output first, then everything new, and each resize.
            client.output = True
            replay = self.scrollback.tail(REPLAY_BYTES)
            if replay:
                self._queue(client, wire.frame(wire.OUTPUT, replay))
        if self.exit is not None:
            self._queue(client, wire.json_frame({"event": "exit", "exit": self.exit}))

    def _op_attach(self, client: _Client, req: dict[str, object]) -> None:
        client.attached = True
        if req.get("rows") and req.get("cols") and self.exit is None:
            self._resize(_whole(req["rows"], "rows"), _whole(req["cols"], "cols"))
        self._reply(client, {"ok": True, "rows": self.rows, "cols": self.cols})
        replay = self.scrollback.tail(REPLAY_BYTES)
        if replay:
            self._queue(client, wire.frame(wire.OUTPUT, replay))
        if self.exit is not None:
            self._queue(client, wire.json_frame({"event": "exit", "exit": self.exit}))

    def _op_send(self, client: _Client, req: dict[str, object]) -> None:
        text = req.get("text")
        if not isinstance(text, str):
            raise ValueError("'text' must be a string")
        if self.exit is not None:
            self._reply(client, {"ok": False, "error": "the program has ended"})
            return
        self.sends.append((client, text.encode(), bool(req.get("enter", True))))
        self._next_send()

    def _next_send(self) -> None:
        """Deliver queued texts one at a time: paste, pause, Enter, reply."""
        if self.send_busy or not self.sends or self.exit is not None:
            return
        client, data, enter = self.sends[0]
        self.send_busy = True
        if data:
            if self.paste_mode:
                # The text must not end the paste early.
                data = PASTE_START + data.replace(PASTE_END, b"") + PASTE_END
            self._write_pty(data)

        def finish() -> None:
            if self.to_pty:  # still writing the paste: Enter must come after it
                self._later(ENTER_PAUSE, finish)
                return
            if enter:
                self._write_pty(b"\r")
            if self.sends:
                self.sends.pop(0)
            self.send_busy = False
            self._reply(client, {"ok": True})
            self._next_send()

        self._later(ENTER_PAUSE if data else 0.0, finish)

    def _resize(self, rows: int, cols: int) -> None:
        if not (0 < rows < 10000 and 0 < cols < 10000):
            raise ValueError(f"size {rows}x{cols} is out of range")
        self.rows, self.cols = rows, cols
        self.stirred_at = time.monotonic()
        event = wire.json_frame({"event": "resize", "rows": rows, "cols": cols})
        for client in list(self.clients.values()):
            if client.output:
                self._queue(client, event)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self._killpg(_signal.SIGWINCH)

    def _op_resize(self, client: _Client, req: dict[str, object]) -> None:
        if self.exit is None:
            self._resize(_whole(req["rows"], "rows"), _whole(req["cols"], "cols"))
        self._reply(client, {"ok": True})

    def _op_screen(self, client: _Client, req: dict[str, object]) -> None:
        from volee_desktop.hosts.screen import render

        lines = _whole(req.get("lines", self.rows), "lines")
        # Render only the tail the lines can come from: decoding the whole scrollback
        # would grow the host by a MiB that the allocator keeps.
        window = min(len(self.scrollback), max(SCREEN_WINDOW, lines * 1024))
        cut = window < len(self.scrollback)
        text = render(self.scrollback.tail(window), lines, cut=cut)
        self._reply(client, {"ok": True, "text": text})

    def _op_signal(self, client: _Client, req: dict[str, object]) -> None:
        sig = req.get("signal")
        num = getattr(_signal, sig, None) if isinstance(sig, str) else _whole(sig, "signal")
        # A name or number that is no signal was a host crash (AttributeError, EINVAL).
        if not isinstance(num, int) or not 0 <= num < _signal.NSIG:
            raise ValueError(f"unknown signal {sig!r}")
        self._reply(client, {"ok": True, "delivered": self._killpg(num)})

    def _op_stop(self, client: _Client, req: dict[str, object]) -> None:
        if self.exit is not None:
            self._reply(client, {"ok": True, "exit": self.exit})
            return
        grace = _real(req.get("grace", 5.0), "grace")
        self.stop_waiters.append(client)
        if not self.stop_requested:
            self.stop_requested = True
            self._killpg(_signal.SIGTERM)
            self._later(grace, lambda: self._killpg(_signal.SIGKILL))

    def _op_status(self, client: _Client, req: dict[str, object]) -> None:
        self._reply(
            client,
            {
                "ok": True,
                "record": self.record,
                "running": self.exit is None,
                "bracketed_paste": self.paste_mode,
                "rows": self.rows,
                "cols": self.cols,
                "attached": sum(1 for c in self.clients.values() if c.attached),
            },
        )

    def _op_flush(self, client: _Client, req: dict[str, object]) -> None:
        """The output held for a watch with ``every_ms`` now (``Host._hold``), then the reply:
        the daemon reads a person a screen with all the output there is."""
        self._reply(client, {"ok": True})  # _queue sends what is held first

    def _op_close(self, client: _Client, req: dict[str, object]) -> None:
        if self.exit is None:
            self._reply(client, {"ok": False, "error": "the program is running; stop it first"})
            return
        self._reply(client, {"ok": True})
        self._end_linger()  # the host still ends what the program left behind

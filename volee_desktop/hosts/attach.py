"""Connect a terminal to an agent's PTY (``volee attach``), like ``tmux attach``.

The terminal goes into raw mode so every key reaches the program; the detach key
(Ctrl-] by default) leaves the agent running.  The terminal is restored on every way
out: detach, program end, lost host, exception.  A terminal resize is forwarded to the
host as the PTY's size (SIGWINCH, main thread only).
"""

from __future__ import annotations

import fcntl
import os
import selectors
import signal
import struct
import termios
import threading
import tty
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Literal

from volee_desktop.hosts.launcher import DETACH_KEY, HostClient, HostStream
from volee_desktop.hosts.records import ExitStatus


@dataclass(frozen=True)
class AttachResult:
    """Why attach returned: the person detached, the program ended, or the host went away."""

    reason: Literal["detached", "ended", "lost"]
    exit: ExitStatus | None = None


def terminal_size(fd: int) -> tuple[int, int] | None:
    """(rows, cols) of the terminal on ``fd``, or None if it is not a terminal."""
    try:
        rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        return None
    return (rows, cols) if rows and cols else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            selectors.DefaultSelector().select(0.05)


def attach(
    socket_path: Path | str,
    stdin_fd: int,
    stdout_fd: int,
    detach_key: bytes = DETACH_KEY,
) -> AttachResult:
    """Relay ``stdin_fd``/``stdout_fd`` to the host's PTY until detach or the program ends."""
    size = terminal_size(stdin_fd)
    stream = HostClient(socket_path).open_stream(*(size or (None, None)))
    saved = None
    if os.isatty(stdin_fd):
        saved = termios.tcgetattr(stdin_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    old_winch: object = None
    in_main = threading.current_thread() is threading.main_thread()
    try:
        if saved is not None:
            tty.setraw(stdin_fd, termios.TCSANOW)
        if in_main:

            def on_winch(signum: int, frame: FrameType | None) -> None:
                try:
                    os.write(wake_w, b"w")
                except OSError:
                    pass

            old_winch = signal.signal(signal.SIGWINCH, on_winch)
        return _relay(stream, stdin_fd, stdout_fd, detach_key, wake_r)
    finally:
        if in_main:
            signal.signal(signal.SIGWINCH, old_winch)  # type: ignore[arg-type]
        if saved is not None:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)
        stream.close()
        os.close(wake_r)
        os.close(wake_w)


def _relay(
    stream: HostStream, stdin_fd: int, stdout_fd: int, detach_key: bytes, wake_r: int
) -> AttachResult:
    sel = selectors.DefaultSelector()
    try:
        sel.register(stdin_fd, selectors.EVENT_READ, "in")
        sel.register(stream.fileno(), selectors.EVENT_READ, "host")
        sel.register(wake_r, selectors.EVENT_READ, "winch")
        # Output already buffered with the attach reply (the replay) is shown first.
        while True:
            for key, _ in sel.select():
                if key.data == "host":
                    out = stream.take()
                    if out:
                        _write_all(stdout_fd, out)
                    if stream.exit is not None:
                        return AttachResult("ended", stream.exit)
                    if stream.closed:
                        return AttachResult("lost")
                elif key.data == "in":
                    data = os.read(stdin_fd, 4096)
                    if not data:
                        return AttachResult("detached")
                    cut = data.find(detach_key)
                    if cut >= 0:
                        if cut:
                            stream.write(data[:cut])
                        return AttachResult("detached")
                    stream.write(data)
                else:
                    os.read(wake_r, 512)
                    size = terminal_size(stdin_fd)
                    if size:
                        stream.resize(*size)
    except OSError:
        return AttachResult("lost")
    finally:
        sel.close()

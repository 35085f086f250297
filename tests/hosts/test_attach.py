"""``attach``: a real terminal (a PTY the test holds) connected to the agent's PTY."""

from __future__ import annotations

import os
import pty
import select
import termios
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import Rig

from volee_desktop.hosts.attach import AttachResult, attach, terminal_size
from volee_desktop.hosts.records import program_alive


class Terminal:
    """The test's side of a terminal: type into it, read what the attach shows."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.result: AttachResult | None = None
        self._thread: threading.Thread | None = None

    def attach(self, socket_path: str) -> None:
        def run() -> None:
            self.result = attach(socket_path, self.slave, self.slave)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def read_until(self, needle: bytes, timeout: float = 10.0) -> bytes:
        seen = b""
        deadline = time.monotonic() + timeout
        while needle not in seen:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"{needle!r} not shown; the terminal has {seen[-300:]!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                seen += os.read(self.master, 65536)
        return seen

    def join(self, timeout: float = 10.0) -> AttachResult:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "attach did not return"
        assert self.result is not None
        return self.result

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.close()


def test_attach_types_shows_and_detaches_leaving_the_agent_running(
    rig: Rig, terminal: Terminal
) -> None:
    record = rig.launch_fake("hello")
    before = termios.tcgetattr(terminal.slave)

    terminal.attach(str(record.socket))
    terminal.read_until(b"ok: hello")  # the replay
    terminal.type(b"from the keyboard\r")
    terminal.read_until(b'PROMPT 2 paste=0: "from the keyboard"')
    terminal.type(b"\x1d")
    result = terminal.join()

    assert result.reason == "detached"
    assert termios.tcgetattr(terminal.slave) == before
    assert program_alive(record)
    assert rig.client().status().running


def test_attach_puts_the_terminal_in_raw_mode(rig: Rig, terminal: Terminal) -> None:
    record = rig.launch_fake()
    terminal.attach(str(record.socket))
    terminal.read_until("❯".encode())

    # Raw: no echo, no line buffering, Ctrl-C is a byte for the program, not a signal.
    lflag = termios.tcgetattr(terminal.slave)[3]
    assert not lflag & (termios.ECHO | termios.ICANON | termios.ISIG)
    terminal.type(b"\x1d")
    terminal.join()


def test_attach_takes_the_terminal_size(rig: Rig, terminal: Terminal) -> None:
    termios.tcsetwinsize(terminal.slave, (33, 101))
    record = rig.launch_fake()
    terminal.attach(str(record.socket))
    terminal.read_until("❯".encode())
    terminal.type(b"SIZE\r")
    terminal.read_until(b"SIZE rows=33 cols=101")
    assert terminal_size(terminal.slave) == (33, 101)
    terminal.type(b"\x1d")
    terminal.join()


def test_attach_returns_when_the_program_ends(rig: Rig, terminal: Terminal) -> None:
    record = rig.launch_fake()
    before = termios.tcgetattr(terminal.slave)
    terminal.attach(str(record.socket))
    terminal.read_until("❯".encode())

    terminal.type(b"CRASH\r")
    result = terminal.join()

    assert result.reason == "ended"
    assert result.exit is not None
    assert result.exit.code == 3
    assert termios.tcgetattr(terminal.slave) == before

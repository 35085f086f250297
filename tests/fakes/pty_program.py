"""A program on a pseudo-terminal of its own, as a person runs it in a terminal.

A thread drains the program's output so it never blocks on a full terminal; tests type keys
and read what it showed (escape sequences included) for their failure messages.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from tests.polling import wait_until


class PtyProgram:
    """A program on a pseudo-terminal (40x120), in its own session and process group."""

    def __init__(self, argv: Sequence[str | Path], cwd: Path, env: dict[str, str]) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(
            [str(a) for a in argv],
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self._master = master
        self._screen = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._master, 65536)
            except OSError:  # EIO once the program has exited and the slave side closed
                return
            if not data:
                return
            with self._lock:
                self._screen.extend(data)

    def screen(self) -> str:
        """Everything the program wrote so far (escape sequences included)."""
        with self._lock:
            return self._screen.decode("utf-8", "replace")

    def type(self, text: str) -> None:
        """Send keystrokes (``\\r`` is Enter)."""
        os.write(self._master, text.encode())

    def kill(self) -> None:
        """SIGKILL the program's process group (as a crash would) and reap it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(timeout=10)

    def close(self) -> None:
        """Kill the program if it still runs, and release the terminal."""
        self.kill()
        os.close(self._master)
        self._reader.join(timeout=5)


class AskedModel(Protocol):
    """A fake model server: the requests it was sent."""

    def requests(self, path_prefix: str | None = None) -> list[dict[str, Any]]: ...


def submit(program: PtyProgram, model: AskedModel, prompt: str, path: str = "/v1/messages") -> None:
    """Type ``prompt`` into Claude Code (or codex: ``path="/v1/responses"``) and press Enter
    until the model has been asked it.

    Keys typed while Claude Code is still starting reach it in one chunk with the Enter, which it
    may take as a paste (the Enter a newline in the box, nothing sent); an Enter on its own once
    the text is in the box sends it, and an extra Enter on an empty box does nothing.
    """
    program.type(prompt)
    said = json.dumps(prompt)[1:-1]  # as it stands inside the request's JSON

    def asked() -> bool:
        program.type("\r")
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if any(said in json.dumps(r.get("body")) for r in model.requests(path)):
                return True
            time.sleep(0.05)
        return False

    wait_until(asked, 20, f"the model to be asked {prompt!r}")

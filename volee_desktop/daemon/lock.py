"""One daemon per VOLEE_HOME: an exclusive flock on a file that holds the owner's pid."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .errors import AlreadyRunning


class PidLock:
    """An exclusive, advisory lock that the kernel releases when the process dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> PidLock:
        """Take the lock or raise AlreadyRunning naming the pid that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(holder(self.path), str(self.path)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Let go of the lock (the file stays; its pid is stale from then on)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def holder(path: Path) -> int | None:
    """The pid written in a lock file, if readable."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def is_held(path: Path) -> bool:
    """Whether some process holds the lock now."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False

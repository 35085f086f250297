"""One process per lock file: an exclusive lock the OS lets go of when its holder dies.

The daemon holds ``<state>/daemon.lock`` (one daemon per VOLEE_HOME), the tray app
``<state>/app.lock`` (one tray app per user).  The holder writes its pid in the file,
so whoever finds the lock taken can name it; the kernel releases the lock with the
process, so it never goes stale.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from types import TracebackType

#: How long a lock held by no named process is waited for (seconds).
UNNAMED_PATIENCE = 2.0


class Held(Exception):
    """Another process holds the lock: ``pid`` (when its file names it) and ``lock``.

    The daemon and the app each raise their own subclass (``AlreadyRunning``), whose
    ``explain`` says what that means and what to do.
    """

    def __init__(self, pid: int | None, lock: str) -> None:
        self.pid = pid
        self.lock = lock
        super().__init__(self.explain(f"pid {pid}" if pid else "another process", lock))

    def explain(self, who: str, lock: str) -> str:
        """The message, given who holds the lock (``pid N`` or ``another process``)."""
        return f"{who} holds {lock}"


class PidLock:
    """Held from ``acquire`` to ``release`` (or the process's end); ``held`` names the holder."""

    def __init__(self, path: Path, held: type[Held] = Held) -> None:
        self.path = path
        self.held = held
        self._fd: int | None = None

    def acquire(self) -> PidLock:
        """Take the lock, or raise ``held(pid, path)`` naming the process that holds it.

        A lock held while its file names no one is in passing (a holder letting go whose
        child has not exec'd yet, ``is_held`` looking, a holder about to write its pid): it
        is tried again for up to ``UNNAMED_PATIENCE`` seconds before being refused.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + UNNAMED_PATIENCE
        while not _try_lock(fd):
            pid = holder(self.path)
            if pid is not None or time.monotonic() > deadline:
                os.close(fd)
                raise self.held(pid, str(self.path))
            time.sleep(0.02)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)  # not os.pwrite: Unix only (the app runs on Windows too)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Let go of the lock; the file stays, empty."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> PidLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


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
        if not _try_lock(fd, shared=True):
            return True
    finally:
        os.close(fd)  # closing lets go of a lock this test took
    return False


def _try_lock(fd: int, *, shared: bool = False) -> bool:
    """Lock ``fd`` without waiting; False when another process holds it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True

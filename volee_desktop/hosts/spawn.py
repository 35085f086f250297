"""Start a program in a new PTY, as the leader of its own session, and say why it did not.

Stdlib only (the host imports it).  An exec failure travels back over a close-on-exec
pipe, so the caller learns "not found on PATH" instead of a child that exits 127.
"""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import termios

# Not typing.TYPE_CHECKING: importing typing would cost every host its memory.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # _signal has no stubs: it is signal's C half
else:
    import _signal  # signal imports enum: a MiB of every host

# The host handles these itself; the program must get them with default dispositions.
HOST_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")


def _start_error(argv0: str, exc: OSError, phase: str, cwd: str) -> str:
    """What the launcher shows when the program could not be started."""
    if phase == "chdir":
        return (
            f"directory {cwd} does not exist"
            if isinstance(exc, FileNotFoundError)
            else f"cannot enter directory {cwd}: {exc.strerror}"
        )
    if isinstance(exc, FileNotFoundError):
        if "/" in argv0:
            return f"cannot start {argv0!r}: no such file"
        return f"cannot start {argv0!r}: not found on PATH"
    if isinstance(exc, PermissionError):
        return f"cannot start {argv0!r}: permission denied (is it executable?)"
    return f"cannot start {argv0!r}: {exc.strerror or exc}"


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt the program's orphans (Linux): a process that daemonizes away from the agent's
    tree (even with ``setsid``) is re-parented to its host, not to init, so the daemon still
    knows whose it is (docs/trust-model.md).  The host then reaps them.  False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def spawn_in_pty(
    argv: list[str], cwd: str, env: dict[str, str], rows: int, cols: int
) -> tuple[int, int] | str:
    """Fork ``argv`` into a new PTY of ``rows`` x ``cols``: (pid, master fd), or an error."""
    if not os.path.isdir(cwd):
        return f"directory {cwd} does not exist"
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    err_r, err_w = os.pipe()  # close-on-exec: EOF means exec succeeded
    pid = os.fork()
    if pid == 0:  # the program
        phase = "setup"
        try:
            os.close(master)
            os.close(err_r)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            if slave > 2:
                os.close(slave)
            # Ignored signals stay ignored across exec: give the program defaults.
            for name in ("SIGPIPE", "SIGXFSZ", "SIGCHLD", *HOST_SIGNALS):
                _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
            _signal.set_wakeup_fd(-1)
            phase = "chdir"
            os.chdir(cwd)
            phase = "exec"
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            os.write(err_w, _start_error(argv[0], exc, phase, cwd).encode())
        finally:
            os._exit(127)
    os.close(slave)
    os.close(err_w)
    chunks = []
    while True:
        chunk = os.read(err_r, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(err_r)
    if chunks:
        os.waitpid(pid, 0)
        os.close(master)
        return b"".join(chunks).decode(errors="replace")
    return pid, master

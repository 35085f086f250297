"""``volee bridge``: relay stdin/stdout to this machine's daemon socket, for another machine.

``ssh -T DEST volee bridge`` (or a ``--via`` command) starts it on this machine for a volee
on another one (docs/machines.md): every byte from stdin goes to the daemon's socket, every
byte from the daemon to stdout, until either side closes.  The protocol is the daemon's own
NDJSON API; the bridge reads none of it.  It runs for as long as the other machine looks, so it
stays lean like the hook shim: stdlib only (the C halves ``_socket``, ``select``), no asyncio,
no argparse (``python -I -S bridge.py`` works too, with ``VOLEE_SOCKET`` set).  It refuses a
socket another user owns or may write to, and a daemon of another user, by the rule every
client keeps (``lean.py``, loaded by its folder like the shim's).

A daemon that does not run here is reported in one line on stderr, exit status 3: the bridge
never starts one (a daemon the person stopped stays stopped; a server keeps its own running
with ``volee daemon install``), and the other machine retries with backoff.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: typing alone costs more than the bridge
if TYPE_CHECKING or __package__:  # `volee bridge`: imported from the package
    from volee_desktop import lean
else:  # run as a file with -I -S: the package's lean module, without the package
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import lean
if TYPE_CHECKING:
    from typing import Any

CONNECT_TIMEOUT = 10.0
_CHUNK = 65536
NOT_RUNNING = 3


def _host() -> str:
    try:
        return os.uname().nodename or "this machine"
    except OSError:
        return "this machine"


def _package() -> None:
    """Run as a file under -I -S: put the package beside this file on the path."""
    if not __package__:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def socket_path() -> str:
    """This user's daemon socket: ``VOLEE_SOCKET``, else where ``volee`` puts it."""
    path = os.environ.get("VOLEE_SOCKET")
    if path:
        return path
    _package()
    from volee_desktop import paths

    return str(paths.dirs().socket)


def connect(path: str) -> Any:
    """A connected socket to the daemon, once it is this user's (OSError when none answers
    there, PermissionError when it is not this user's)."""
    sock = lean.connect(path, CONNECT_TIMEOUT)
    sock.settimeout(None)
    return sock


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def relay(sock: Any, stdin: int = 0, stdout: int = 1) -> str:
    """Move bytes both ways until one side closes; which side did, in words."""
    import select

    daemon = sock.fileno()
    poller = select.poll()
    poller.register(stdin, select.POLLIN)
    poller.register(daemon, select.POLLIN)
    while True:
        for fd, _mask in poller.poll():
            if fd == daemon:
                data = sock.recv(_CHUNK)
                if not data:
                    return "daemon"
                _write_all(stdout, data)
            else:
                data = os.read(stdin, _CHUNK)
                if not data:
                    return "stdin"
                sock.sendall(data)


def main(argv: list[str]) -> int:
    """Entry point (``argv`` after ``bridge``): 0 when the other side left, 3 when this
    machine's daemon cannot be reached, 1 when the daemon went away mid-way."""
    host = _host()
    try:
        sock = connect(socket_path())
    except (FileNotFoundError, ConnectionRefusedError):
        print(
            f"volee is not running on {host}: start it there with `volee daemon install` "
            "(at every login, and with --linger after logout) or `volee daemon run`",
            file=sys.stderr,
        )
        return NOT_RUNNING
    except OSError as exc:
        print(
            f"volee on {host} cannot be reached ({exc}): check `volee daemon status` there",
            file=sys.stderr,
        )
        return NOT_RUNNING
    try:
        side = relay(sock)
    except OSError as exc:
        print(f"volee bridge on {host}: the relay broke ({exc})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        sock.close()
    if side == "daemon":
        print(f"volee on {host} closed the connection (stopped?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The seam between the IPC logic and the OS: listen, connect, peer credentials.

The server and the clients speak NDJSON over asyncio streams (async side) or
over a blocking ``Channel`` (CLI side); everything that depends on the kind of
local socket sits here.  ``UnixTransport`` is the only implementation today: a
Unix domain socket in a 0700 folder, the socket file 0600, the peer's uid read
from the kernel (SO_PEERCRED on Linux, LOCAL_PEERCRED/getpeereid on macOS and
the BSDs).  A Windows transport would implement the same ``Transport`` protocol
with a named pipe whose ACL admits only the current user and whose client
process id comes from GetNamedPipeClientProcessId; the address stays a ``Path``
from which it derives the pipe name.

No TCP: there is no code path here that opens an inet socket.

This module is imported by the blocking client (``volee hook``), so asyncio is
imported only by the functions that need it.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, overload

from volee_desktop import lean
from volee_desktop.ipc.protocol import DaemonUnavailable, ErrorCode, IpcError, ServerStartError

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

# sun_path is 108 bytes on Linux and 104 on macOS, with a terminating NUL.
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107

# Called synchronously for each accepted connection; the callee owns the streams from then on.
OnConnection = Callable[["asyncio.StreamReader", "asyncio.StreamWriter"], None]


class PeerCredentials(NamedTuple):
    """Who is on the other end of a connection (pid/gid None when the OS does not say).

    The server also notes when it accepted the connection (``accepted``, on
    ``process_clock``: a process that started later is not the one that connected, whatever
    its pid) and, on Linux 6.5 and later, holds a pidfd of the connecting process while it
    identifies it (``pidfd``: it says whether *that* process still runs, so a reused pid is
    never taken for it).  ``release`` closes the pidfd.
    """

    uid: int
    pid: int | None
    gid: int | None
    accepted: float | None = None
    pidfd: int | None = None


def process_clock() -> float:
    """Now, on the clock the process table keeps start times in: seconds since boot on Linux
    (``CLOCK_BOOTTIME``, as ``/proc/<pid>/stat``), the wall clock elsewhere (psutil)."""
    if sys.platform.startswith("linux"):
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.time()


def peer_alive(peer: PeerCredentials) -> bool | None:
    """Whether the process that connected still runs (a zombie counts as running: its pid is
    not reused yet); None when no pidfd says."""
    if peer.pidfd is None:
        return None
    try:
        signal.pidfd_send_signal(peer.pidfd, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists (another user's: refused by its uid anyway)
    except OSError:
        return None
    return True


def release(peer: PeerCredentials) -> PeerCredentials:
    """Close the pidfd the credentials hold; the credentials without it."""
    if peer.pidfd is None:
        return peer
    try:
        os.close(peer.pidfd)
    except OSError:
        pass
    return peer._replace(pidfd=None)


class Channel(Protocol):
    """A connected blocking byte stream (a ``socket.socket`` is one)."""

    def sendall(self, data: bytes, /) -> None: ...
    def recv(self, bufsize: int, /) -> bytes: ...
    def settimeout(self, value: float | None, /) -> None: ...
    def close(self) -> None: ...


class Listener(Protocol):
    """A listening endpoint returned by ``Transport.listen``."""

    async def close(self) -> None:
        """Stop accepting (no ``on_connection`` call after this) and remove the endpoint
        (only if it is still ours)."""


class Transport(Protocol):
    """How to listen, connect and identify the peer on this platform."""

    async def listen(self, address: Path, on_connection: OnConnection) -> Listener:
        """Listen at ``address``; raise ServerStartError when another live server has it."""

    def peer_credentials(self, writer: asyncio.StreamWriter) -> PeerCredentials:
        """The peer of an accepted connection; raise OSError when the OS cannot say."""

    async def open(self, address: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect (asyncio); raise DaemonUnavailable when nothing listens."""

    def connect(self, address: Path, timeout: float | None) -> Channel:
        """Connect (blocking); raise DaemonUnavailable when nothing listens."""


def default_transport() -> Transport:
    """The transport of this platform."""
    if sys.platform == "win32":
        raise ServerStartError(
            "volee's local API has no Windows transport yet (a named pipe is planned); "
            "run volee under WSL meanwhile"
        )
    return UnixTransport()


def _unavailable(address: Path, exc: OSError) -> DaemonUnavailable:
    if isinstance(exc, FileNotFoundError):
        why = "no socket there"
    elif isinstance(exc, ConnectionRefusedError):
        why = "nothing listens on it"
    elif isinstance(exc, TimeoutError):
        why = "it did not accept in time"
    else:
        why = f"{exc.strerror or exc}"
    return DaemonUnavailable(
        f"the volee daemon is not running (cannot connect to {address}: {why}); "
        "start it with `volee daemon run`"
    )


class UntrustedSocket(IpcError):
    """The socket or its folder is another user's, or another user answers on it: refused."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.REFUSED, message)


def check_server_path(address: Path) -> None:
    """Before connecting: the folder and the socket are this user's and private, else refuse.

    A socket planted by another user in a shared folder (a shared XDG_RUNTIME_DIR) would
    otherwise receive whatever the client sends (a hook's prompt).  Missing files are left
    to ``connect`` (the daemon is simply not running).  The rule is ``lean.socket_refusal``,
    which the stdlib-only clients (the hook shim, the MCP relay, the bridge) keep too.
    """
    why = lean.socket_refusal(str(address))
    if why is not None:
        raise UntrustedSocket(why)


def check_server_peer(sock: _SockLike, address: Path) -> None:
    """After connecting: the process that accepted is this user's, else refuse."""
    try:
        peer = peer_credentials(sock)
    except OSError as exc:
        raise UntrustedSocket(
            f"refusing to talk to {address}: cannot tell who serves it ({exc})"
        ) from exc
    if peer.uid != os.geteuid():
        raise UntrustedSocket(
            f"refusing to talk to {address}: it is served by uid {peer.uid} (pid {peer.pid}), "
            f"not by you (uid {os.geteuid()}); stop that process or remove the socket"
        )


def _check_path(address: Path) -> None:
    size = len(os.fsencode(address))
    if size > MAX_SOCKET_PATH:
        raise ServerStartError(
            f"the socket path {address} is {size} bytes, more than the {MAX_SOCKET_PATH} a Unix "
            "socket allows; set VOLEE_HOME or XDG_RUNTIME_DIR to a shorter folder"
        )


def _private_folder(folder: Path) -> None:
    """Create ``folder`` 0700 and check that it is ours and private."""
    from volee_desktop.paths import NotPrivate, ensure_private_dir

    try:
        # Its missing parents (VOLEE_HOME) 0700 too, whatever the umask.
        ensure_private_dir(folder)
        os.chmod(folder, 0o700)
        st = os.lstat(folder)
    except NotPrivate as exc:
        raise ServerStartError(str(exc)) from exc
    except OSError as exc:
        raise ServerStartError(
            f"cannot make the runtime folder {folder} private (0700): {exc}; "
            "check its owner and permissions"
        ) from exc
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ServerStartError(
            f"the runtime folder {folder} is not a private folder of this user "
            f"(owner uid {st.st_uid}, mode {stat.filemode(st.st_mode)}); remove it or point "
            "XDG_RUNTIME_DIR/VOLEE_HOME elsewhere"
        )


def _clear_stale(address: Path) -> None:
    """Remove a dead socket file at ``address``; refuse when a live server answers."""
    try:
        st = os.lstat(address)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ServerStartError(
            f"{address} exists and is not a socket; remove it and start the daemon again"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(2.0)
        probe.connect(str(address))
    except (ConnectionRefusedError, FileNotFoundError):
        pass  # nobody accepts: a stale file left by a server that died
    except OSError as exc:
        raise ServerStartError(
            f"cannot tell whether a server is live on {address}: {exc}; "
            "stop the other volee daemon or remove the socket file"
        ) from exc
    else:
        raise ServerStartError(
            f"another volee daemon is already serving on {address}; "
            "use it, or stop it first with `volee daemon stop`"
        )
    finally:
        probe.close()
    try:
        os.unlink(address)
    except FileNotFoundError:
        pass


class _UnixListener:
    """Accepts on a Unix socket; removes the socket file on close if it is still its own.

    Its own accept loop rather than asyncio's Server or ``sock_accept``: with
    those, closing (or cancelling) while a connection is being accepted can
    lose the accepted socket, and its client then hangs.  Here accepting is a
    plain callback, and an accepted socket is always handed over or closed.
    """

    def __init__(
        self,
        sock: socket.socket,
        address: Path,
        ino: tuple[int, int],
        on_connection: OnConnection,
        peers: _AcceptedPeers,
    ) -> None:
        import asyncio

        self._sock = sock
        self._address = address
        self._ino = ino
        self._on_connection = on_connection
        self._peers = peers
        self._loop = asyncio.get_running_loop()
        self._handovers: set[asyncio.Task[None]] = set()
        self._retry: asyncio.TimerHandle | None = None
        self._closed = False
        self._loop.add_reader(sock.fileno(), self._accept_ready)

    def _accept_ready(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                # EMFILE and friends: pause accepting instead of spinning, then retry.
                log.warning("accept on %s failed: %s; retrying shortly", self._address, exc)
                self._loop.remove_reader(self._sock.fileno())
                self._retry = self._loop.call_later(0.1, self._resume)
                return
            # At once, while the process that connected most likely still runs: its pid,
            # the time, and a pidfd that tells later whether that process still runs.
            self._peers.put(conn)
            conn.setblocking(False)
            task = self._loop.create_task(self._hand_over(conn))
            self._handovers.add(task)
            task.add_done_callback(self._handovers.discard)

    def _resume(self) -> None:
        self._retry = None
        if not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._accept_ready)

    async def _hand_over(self, conn: socket.socket) -> None:
        import asyncio

        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn)
        except BaseException:
            conn.close()
            raise
        self._on_connection(reader, writer)

    async def close(self) -> None:
        import asyncio

        if self._closed:
            return
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
        self._loop.remove_reader(self._sock.fileno())
        self._sock.close()
        # Hand-overs take one loop turn; let them finish so every socket gets an owner.
        await asyncio.gather(*self._handovers, return_exceptions=True)
        self._peers.clear()
        try:
            st = os.lstat(self._address)
        except FileNotFoundError:
            return
        # Another server may have replaced the file since: leave its socket alone.
        if (st.st_dev, st.st_ino) == self._ino:
            try:
                os.unlink(self._address)
            except FileNotFoundError:
                pass


class _AcceptedPeers:
    """The peers read when their connections were accepted, until the server asks.

    Keyed by the socket's fd and inode: an entry left by a connection dropped before the
    server asked is never taken for the next socket that gets the same fd."""

    def __init__(self) -> None:
        self._peers: dict[int, tuple[int, PeerCredentials]] = {}

    def put(self, sock: socket.socket) -> None:
        try:
            peer = accepted_peer(sock)
            ino = os.fstat(sock.fileno()).st_ino
        except OSError:
            return  # the server reads them again, and refuses the connection if it cannot
        old = self._peers.pop(sock.fileno(), None)
        if old is not None:
            release(old[1])
        self._peers[sock.fileno()] = (ino, peer)

    def take(self, sock: _SockLike) -> PeerCredentials | None:
        entry = self._peers.pop(sock.fileno(), None)
        if entry is None:
            return None
        try:
            same = os.fstat(sock.fileno()).st_ino == entry[0]
        except OSError:
            same = False
        if not same:
            release(entry[1])
            return None
        return entry[1]

    def clear(self) -> None:
        for _ino, peer in self._peers.values():
            release(peer)
        self._peers.clear()


class UnixTransport:
    """Unix domain socket in a private folder; peer uid from the kernel."""

    backlog = 64

    def __init__(self) -> None:
        self._accepted = _AcceptedPeers()

    async def listen(self, address: Path, on_connection: OnConnection) -> Listener:
        _check_path(address)
        _private_folder(address.parent)
        _clear_stale(address)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(address))
            # The folder is 0700, so the moment between bind and chmod exposes nothing.
            os.chmod(address, 0o600)
            st = os.lstat(address)
            sock.listen(self.backlog)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise ServerStartError(
                f"cannot listen on {address}: {exc}; check the runtime folder"
            ) from exc
        return _UnixListener(sock, address, (st.st_dev, st.st_ino), on_connection, self._accepted)

    def peer_credentials(self, writer: asyncio.StreamWriter) -> PeerCredentials:
        sock = writer.get_extra_info("socket")
        if sock is None:
            raise OSError(errno.ENOTSOCK, "the connection has no socket")
        return self._accepted.take(sock) or accepted_peer(sock)

    async def open(self, address: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        import asyncio

        check_server_path(address)
        try:
            reader, writer = await asyncio.open_unix_connection(str(address))
        except OSError as exc:
            raise _unavailable(address, exc) from exc
        try:
            check_server_peer(writer.get_extra_info("socket"), address)
        except BaseException:
            writer.transport.abort()
            raise
        return reader, writer

    def connect(self, address: Path, timeout: float | None) -> Channel:
        check_server_path(address)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(str(address))
        except OSError as exc:
            sock.close()
            raise _unavailable(address, exc) from exc
        try:
            check_server_peer(sock, address)
        except BaseException:
            sock.close()
            raise
        return sock


class _SockLike(Protocol):
    @overload
    def getsockopt(self, level: int, optname: int, /) -> int: ...
    @overload
    def getsockopt(self, level: int, optname: int, buflen: int, /) -> bytes: ...
    def fileno(self) -> int: ...


def peer_credentials(sock: _SockLike) -> PeerCredentials:
    """The kernel's word on who is at the other end of a connected Unix socket."""
    if sys.platform.startswith("linux"):
        # struct ucred { pid_t pid; uid_t uid; gid_t gid; }
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, gid = struct.unpack("3i", raw)
        return PeerCredentials(uid=uid, pid=pid or None, gid=gid)
    if sys.platform == "darwin":  # pragma: no cover - not exercised on the Linux CI
        return _darwin_credentials(sock)
    return _getpeereid(sock.fileno())  # pragma: no cover - BSDs


# Linux 6.5: a pidfd of the process that connected (``socket.SO_PEERPIDFD`` from 3.13 on).
_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)


def accepted_peer(sock: _SockLike) -> PeerCredentials:
    """The peer of a connection just accepted, with the time and (Linux 6.5+) a pidfd of the
    process that connected; OSError when the OS cannot say.  ``release`` it after use."""
    accepted = process_clock()
    peer = peer_credentials(sock)
    pidfd = None
    if sys.platform.startswith("linux") and peer.pid is not None:
        try:
            pidfd = int(sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD))
        except OSError:
            pidfd = None  # an older kernel (ENOPROTOOPT), or the peer is reaped (ESRCH)
    return peer._replace(accepted=accepted, pidfd=pidfd)


# macOS <sys/un.h>: SOL_LOCAL 0, LOCAL_PEERCRED 1, LOCAL_PEERPID 2.
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 1
_LOCAL_PEERPID = 2


def _darwin_credentials(sock: _SockLike) -> PeerCredentials:  # pragma: no cover - macOS
    # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]; }
    fmt = "=IIh2x16I"
    raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, struct.calcsize(fmt))
    fields = struct.unpack(fmt, raw[: struct.calcsize(fmt)])
    uid, ngroups = fields[1], fields[2]
    gid = fields[3] if ngroups > 0 else None
    try:
        pid: int | None = struct.unpack(
            "i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, struct.calcsize("i"))
        )[0]
    except OSError:
        pid = None
    return PeerCredentials(uid=uid, pid=pid, gid=gid)


def _getpeereid(fd: int) -> PeerCredentials:  # pragma: no cover - BSDs
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    uid = ctypes.c_uint32()
    gid = ctypes.c_uint32()
    if libc.getpeereid(fd, ctypes.byref(uid), ctypes.byref(gid)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return PeerCredentials(uid=uid.value, pid=None, gid=gid.value)

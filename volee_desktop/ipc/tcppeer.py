"""Which process is at the other end of a loopback TCP connection (Linux, from ``/proc``).

A Unix socket tells its server the peer's pid (SO_PEERCRED); TCP does not.  On Linux the
kernel still knows: ``/proc/net/tcp`` lists every IPv4 socket with its two addresses, its
owner's uid and its inode, and ``/proc/<pid>/fd/`` links each open socket to
``socket:[inode]``.  So the peer of a connection accepted on 127.0.0.1 is the process
holding the socket whose local address is the connection's remote one.

Finding the holder means reading processes' fd tables: the ``likely`` pids first (the
agents' programs, which make the connections volee's MCP endpoint expects), then every
process of the user, which is the slow path (a few ms per hundred processes) and only
for a connection no agent's program holds.  A process whose fds are not readable (another
user's) is not searched: its uid, from the table, is enough to refuse it.

The holder found is pinned with a pidfd and its fd table read again: the pid the daemon
then identifies is the process that holds the socket, never a later one that got its pid
(``release`` the credentials after use).

Other systems: ``supported()`` is False and volee keeps the Unix-socket relay there.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .transport import PeerCredentials


class Named(Protocol):
    """A connected socket's two addresses (``socket.socket``, asyncio's TransportSocket)."""

    def getsockname(self) -> Any: ...
    def getpeername(self) -> Any: ...


PROC = Path("/proc")


def supported(proc: Path = PROC) -> bool:
    """Whether this system says who holds a TCP socket (Linux with ``/proc/net/tcp``)."""
    return sys.platform.startswith("linux") and (proc / "net" / "tcp").exists()


@dataclass(frozen=True)
class Socket:
    """One line of ``/proc/net/tcp``: its owner's uid and its inode."""

    uid: int
    inode: int


def _address(field: str) -> tuple[str, int]:
    # "0100007F:A1B2": the IPv4 address as the kernel's u32 in host order, then the port.
    host, port = field.split(":")
    return socket.inet_ntoa(struct.pack("=I", int(host, 16))), int(port, 16)


def find_socket(table: str, local: tuple[str, int], remote: tuple[str, int]) -> Socket | None:
    """The socket of ``table`` (``/proc/net/tcp``'s text) bound to ``local``, connected to
    ``remote``; None when there is none."""
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        try:
            if _address(fields[1]) == local and _address(fields[2]) == remote:
                return Socket(uid=int(fields[7]), inode=int(fields[9]))
        except (ValueError, OSError, struct.error):
            continue
    return None


def holds(pid: int, inode: int, proc: Path = PROC) -> bool:
    """Whether process ``pid`` has the socket ``inode`` open."""
    target = f"socket:[{inode}]"
    try:
        entries = os.scandir(proc / str(pid) / "fd")
    except OSError:
        return False
    with entries:
        for entry in entries:
            try:
                if os.readlink(entry.path) == target:
                    return True
            except OSError:
                continue
    return False


def holder(inode: int, likely: Iterable[int], proc: Path = PROC) -> int | None:
    """The pid of a process holding socket ``inode``: the ``likely`` ones, then all."""
    tried: set[int] = set()
    for pid in likely:
        tried.add(pid)
        if holds(pid, inode, proc):
            return pid
    try:
        names = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return None
    for name in names:
        pid = int(name)
        if pid not in tried and holds(pid, inode, proc):
            return pid
    return None


def peer_of(sock: Named, likely: Iterable[int] = (), proc: Path = PROC) -> PeerCredentials | None:
    """Who holds the other end of ``sock``, a TCP connection this process accepted on the
    loopback: its uid and pid (None: no process of this user holds it); None when the
    kernel lists no such connection."""
    here = tuple(sock.getsockname())
    there = tuple(sock.getpeername())
    try:
        table = (proc / "net" / "tcp").read_text()
    except OSError:
        return None
    found = find_socket(table, there, here)
    if found is None:
        return None
    if found.uid != os.geteuid():
        return PeerCredentials(found.uid, None, None)  # another user's: refused by its uid
    pid = holder(found.inode, likely, proc)
    if pid is None:
        return PeerCredentials(found.uid, None, None)
    pidfd = _pin(pid) if proc == PROC else None
    if pidfd is not None and not holds(pid, found.inode, proc):
        # The holder ended and its pid went to another process between the two reads.
        os.close(pidfd)
        return PeerCredentials(found.uid, None, None)
    return PeerCredentials(found.uid, pid, None, pidfd=pidfd)


def _pin(pid: int) -> int | None:
    """A pidfd of process ``pid`` (Linux 5.3+): while it is open, whether *that* process still
    runs can be asked (``transport.peer_alive``), so a reused pid is never taken for it."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


__all__ = ["Socket", "find_socket", "holder", "holds", "peer_of", "supported"]

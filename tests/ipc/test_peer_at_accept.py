"""Issue 22, finding 1: the server reads the peer at accept, with the time and a pidfd.

The pidfd is the kernel's handle on the process that connected: it says whether *that*
process still runs whatever now has its pid, so identification (daemon/serving/identity.py) can
fail closed.  The server closes it once the connection is identified.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.ipc_methods import Raw, TestMethods
from tests.polling import until
from volee_desktop.ipc.caller import Caller
from volee_desktop.ipc.server import IpcServer
from volee_desktop.ipc.transport import PeerCredentials, peer_alive, process_clock

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pidfds")


class Seen:
    """An ``identify`` that notes what it was given, and whether the peer still ran."""

    def __init__(self) -> None:
        self.peers: list[tuple[PeerCredentials, bool | None]] = []

    def __call__(self, peer: PeerCredentials) -> Caller:
        alive = peer_alive(peer)
        self.peers.append((peer, alive))
        if alive is False:
            return Caller.unknown(peer.pid, "gone")
        return Caller.person(peer.pid, "the test")


def _pidfds_supported() -> bool:
    import socket

    a, b = socket.socketpair()
    try:
        os.close(a.getsockopt(socket.SOL_SOCKET, getattr(socket, "SO_PEERPIDFD", 77)))
        return True
    except OSError:
        return False
    finally:
        a.close()
        b.close()


async def test_the_peer_is_read_at_accept_with_the_time_and_a_pidfd(
    sock_path: Path, methods: TestMethods
) -> None:
    seen = Seen()
    before = process_clock()
    server = await IpcServer.start(sock_path, methods, identify=seen)
    try:
        raw = await Raw.open(sock_path)
        assert (await raw.call("ping"))["result"] == "pong"
        await raw.close()
    finally:
        await server.close()
    ((peer, alive),) = seen.peers
    assert peer.pid == os.getpid()
    assert peer.accepted is not None
    assert before <= peer.accepted <= process_clock()
    if _pidfds_supported():
        assert peer.pidfd is not None
        assert alive is True
    (conn,) = methods.connections
    assert conn.peer.pidfd is None  # closed once identified


GONE = """
import json, os, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
me = os.getpid()
if os.fork() == 0:
    while os.getppid() == me:  # until the process that connected has exited
        pass
    request = {"v": 1, "id": 1, "method": "ping", "params": {}}
    conn.sendall(json.dumps(request).encode() + b"\\n")
    reply = conn.recv(65536)
    with open(sys.argv[2], "wb") as f:
        f.write(reply)
    os._exit(0)
os._exit(0)
"""


async def test_peer_gone_before_accept_is_seen_gone(
    sock_path: Path, methods: TestMethods, tmp_path: Path
) -> None:
    if not _pidfds_supported():
        pytest.skip("this kernel gives no pidfd of a socket's peer (Linux 6.5+)")
    seen = Seen()
    server = await IpcServer.start(sock_path, methods, identify=seen)
    out = tmp_path / "reply.json"
    try:
        # Blocking on purpose: the loop accepts only once the process that connected has
        # exited and been reaped; its grandchild holds the connection.
        subprocess.run([sys.executable, "-c", GONE, str(sock_path), str(out)], check=True)
        await until(
            lambda: out.exists() and out.stat().st_size > 0, what="the client's output", timeout=30
        )
    finally:
        await server.close()
    ((peer, alive),) = seen.peers
    assert peer.pidfd is not None
    assert alive is False
    assert json.loads(out.read_text())["result"] == "pong"  # the test's handler answers all
    (conn,) = methods.connections
    assert conn.caller.kind == "unknown"


def _pidfds() -> int:
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:[pidfd]":
                count += 1
        except OSError:
            continue
    return count


async def test_connections_refused_past_the_cap_hold_no_pidfd(
    sock_path: Path, methods: TestMethods
) -> None:
    if not _pidfds_supported():
        pytest.skip("this kernel gives no pidfd of a socket's peer (Linux 6.5+)")
    server = await IpcServer.start(sock_path, methods, identify=Seen())
    server.max_connections = 2
    opened: list[Raw] = []
    try:
        for _ in range(2):
            raw = await Raw.open(sock_path)
            opened.append(raw)
            assert (await raw.call("ping"))["result"] == "pong"
        before = _pidfds()
        for _ in range(20):
            raw = await Raw.open(sock_path)
            opened.append(raw)
            assert (await raw.recv())["error"]["code"] == "unavailable"
        assert _pidfds() == before
    finally:
        for raw in opened:
            await raw.close()
        await server.close()

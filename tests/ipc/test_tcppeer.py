"""ipc/tcppeer.py: the process at the other end of a loopback TCP connection."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from volee_desktop.ipc import tcppeer
from volee_desktop.ipc.tcppeer import Socket, find_socket, holder

pytestmark = pytest.mark.skipif(not tcppeer.supported(), reason="Linux /proc only")

TABLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A0E1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1
   1: 0100007F:C350 0100007F:A0E1 01 00000000:00000000 00:00000000 00000000  1000        0 2222 1
   2: 0100007F:A0E1 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 3333 1
   3: garbage
   4: 0100007F:ZZZZ 0100007F:A0E1 01 00000000:00000000 00:00000000 00000000  1000        0 4444 1
"""


def test_find_socket_picks_the_line_with_both_addresses() -> None:
    server, client = ("127.0.0.1", 0xA0E1), ("127.0.0.1", 0xC350)
    assert find_socket(TABLE, client, server) == Socket(uid=1000, inode=2222)
    assert find_socket(TABLE, server, client) == Socket(uid=1000, inode=3333)
    assert find_socket(TABLE, client, ("127.0.0.1", 1)) is None
    assert find_socket(TABLE, ("127.0.0.2", 0xC350), server) is None
    assert find_socket("header only\n", client, server) is None


def _fake_proc(root: Path, fds: dict[int, list[str]]) -> Path:
    for pid, links in fds.items():
        (root / str(pid) / "fd").mkdir(parents=True)
        for n, target in enumerate(links):
            os.symlink(target, root / str(pid) / "fd" / str(n))
    (root / "self").mkdir()  # not a pid: never searched
    return root


def test_holder_tries_the_likely_pids_first_then_every_process(tmp_path: Path) -> None:
    proc = _fake_proc(
        tmp_path,
        {10: ["/dev/null", "socket:[5]"], 20: ["socket:[7]"], 30: ["socket:[7]", "pipe:[7]"]},
    )
    assert holder(7, [30], proc) == 30
    assert holder(7, [], proc) in (20, 30)
    assert holder(5, [99, 20], proc) == 10
    assert holder(6, [10], proc) is None


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock
    sock.close()


def test_the_peer_of_a_real_connection_is_the_process_holding_it(
    listener: socket.socket,
) -> None:
    port = listener.getsockname()[1]
    code = (
        "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1]))); "
        "print('on', flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "on\n"
        conn, _ = listener.accept()
        with conn:
            for likely in ([], [child.pid], [os.getpid(), child.pid]):
                peer = tcppeer.peer_of(conn, likely)
                assert (peer.uid, peer.pid) == (os.geteuid(), child.pid), likely
    finally:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.close()
        child.wait(10)
        child.stdout.close()


def test_a_connection_of_this_process_is_its_own_and_a_closed_one_is_nobodys(
    listener: socket.socket,
) -> None:
    client = socket.create_connection(listener.getsockname())
    conn, _ = listener.accept()
    with conn:
        assert tcppeer.peer_of(conn).pid == os.getpid()
        client.close()
        # Gone from the table once both ends closed; until then it may linger (FIN_WAIT).
        peer = tcppeer.peer_of(conn)
        assert peer.pid in (None, os.getpid())

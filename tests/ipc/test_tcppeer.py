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
from volee_desktop.ipc.transport import PeerCredentials, peer_alive, release

pytestmark = pytest.mark.skipif(not tcppeer.supported(), reason="Linux /proc only")

HEADER = "sl local_address rem_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode"
SERVER, CLIENT = ("127.0.0.1", 0xA0E1), ("127.0.0.1", 0xC350)


def table(uid: int = 1000) -> str:
    """A /proc/net/tcp: the client's socket first, in exactly ten fields; then lines to skip
    (short, unparsable), then sockets further down (one of 127.0.0.200: its u32 > 2**31)."""
    return "\n".join(
        [
            HEADER,
            f"0: 0100007F:C350 0100007F:A0E1 01 0:0 00:0 0 {uid} 0 2222",
            "1: 0100007F:A0E1 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1111 1",
            "2: garbage",
            "3: 0100007F:ZZZZ 0100007F:A0E1 01 0:0 00:0 0 1000 0 4444",
            f"4: 0100007F:A0E1 0100007F:C350 01 0:0 00:0 0 {uid} 0 3333 1 ffff 20 4 30 10 -1",
            f"5: C800007F:C351 0100007F:A0E1 01 0:0 00:0 0 {uid} 0 5555",
        ]
    )


def test_find_socket_picks_the_line_with_both_addresses() -> None:
    text = table()
    assert find_socket(text, CLIENT, SERVER) == Socket(uid=1000, inode=2222)
    assert find_socket(text, SERVER, CLIENT) == Socket(uid=1000, inode=3333)
    assert find_socket(text, ("127.0.0.200", 0xC351), SERVER) == Socket(uid=1000, inode=5555)
    assert find_socket(text, CLIENT, ("127.0.0.1", 1)) is None
    assert find_socket(text, ("127.0.0.2", 0xC350), SERVER) is None
    assert find_socket(HEADER + "\n", CLIENT, SERVER) is None


def _fake_proc(root: Path, fds: dict[int, list[str]], tcp: str | None = None) -> Path:
    for pid, links in fds.items():
        (root / str(pid) / "fd").mkdir(parents=True)
        for n, target in enumerate(links):
            os.symlink(target, root / str(pid) / "fd" / str(n))
    (root / "self").mkdir(parents=True)  # not a pid: never searched
    if tcp is not None:
        (root / "net").mkdir()
        (root / "net" / "tcp").write_text(tcp)
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
    assert holder(5, [], tmp_path / "no-proc") is None


def test_the_full_scan_skips_the_pids_already_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = _fake_proc(tmp_path, {10: [], 20: [], 30: ["socket:[7]"]})
    asked: list[int] = []
    real = tcppeer.holds

    def holds(pid: int, inode: int, proc: Path = tcppeer.PROC) -> bool:
        asked.append(pid)
        return real(pid, inode, proc)

    monkeypatch.setattr(tcppeer, "holds", holds)
    assert holder(8, [20, 10], proc) is None
    assert asked[:2] == [20, 10]
    assert sorted(asked[2:]) == [30]


def test_an_fd_that_goes_away_while_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = _fake_proc(tmp_path, {10: ["socket:[7]", "socket:[7]"]})
    calls: list[str] = []
    real = os.readlink

    def readlink(path: str) -> str:
        calls.append(path)
        if len(calls) == 1:
            raise FileNotFoundError(path)  # closed between the listing and the read
        return real(path)

    monkeypatch.setattr(tcppeer.os, "readlink", readlink)
    assert tcppeer.holds(10, 7, proc)
    assert len(calls) == 2


class Named:
    def __init__(self, here: tuple[str, int], there: tuple[str, int]) -> None:
        self.here, self.there = here, there

    def getsockname(self) -> tuple[str, int]:
        return self.here

    def getpeername(self) -> tuple[str, int]:
        return self.there


def test_peer_of_reads_the_table_then_the_fd_tables(tmp_path: Path) -> None:
    me = os.geteuid()
    proc = _fake_proc(tmp_path / "a", {40: ["socket:[2222]"]}, table(me))
    accepted = Named(SERVER, CLIENT)
    assert tcppeer.peer_of(accepted, [], proc) == PeerCredentials(me, 40, None)
    assert tcppeer.peer_of(Named(SERVER, ("127.0.0.1", 9)), [], proc) is None
    nobody = _fake_proc(tmp_path / "b", {40: ["socket:[2222]"]}, table(me + 1))
    assert tcppeer.peer_of(accepted, [40], nobody) == PeerCredentials(me + 1, None, None)
    no_table = _fake_proc(tmp_path / "c", {40: ["socket:[2222]"]})
    assert tcppeer.peer_of(accepted, [40], no_table) is None
    unheld = _fake_proc(tmp_path / "d", {40: []}, table(me))
    assert tcppeer.peer_of(accepted, [40], unheld) == PeerCredentials(me, None, None)


def test_supported_needs_linux_and_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_table = _fake_proc(tmp_path / "a", {}, "")
    assert tcppeer.supported(with_table)
    assert not tcppeer.supported(tmp_path)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not tcppeer.supported(with_table)


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
                assert peer is not None
                # Pinned with a pidfd while the daemon identifies it (issue 22).
                assert peer.pidfd is not None
                assert peer_alive(peer) is True
                peer = release(peer)
                assert peer == PeerCredentials(os.geteuid(), child.pid, None), likely
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
        own = tcppeer.peer_of(conn)
        assert own is not None
        assert release(own).pid == os.getpid()
        client.close()
        # Gone from the table once both ends closed; until then it may linger (FIN_WAIT).
        peer = tcppeer.peer_of(conn)
        assert peer is None or release(peer).pid in (None, os.getpid())


def test_a_holder_that_lets_go_of_the_socket_after_its_pin_is_nobody(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The holder ended and its pid went to another process between the scan and the pin:
    # the pinned process does not hold the socket, so no pid is given, and the pidfd closed.
    client = socket.create_connection(listener.getsockname())
    conn, _ = listener.accept()
    pinned: list[int] = []
    real_pin = tcppeer._pin

    def pin(pid: int) -> int | None:
        fd = real_pin(pid)
        assert fd is not None
        pinned.append(fd)
        return fd

    monkeypatch.setattr(tcppeer, "holder", lambda inode, likely, proc=tcppeer.PROC: os.getpid())
    monkeypatch.setattr(tcppeer, "holds", lambda pid, inode, proc=tcppeer.PROC: False)
    monkeypatch.setattr(tcppeer, "_pin", pin)
    with conn, client:
        peer = tcppeer.peer_of(conn)
    assert peer == PeerCredentials(os.geteuid(), None, None)
    assert peer.pidfd is None
    (fd,) = pinned
    with pytest.raises(OSError):
        os.fstat(fd)  # closed

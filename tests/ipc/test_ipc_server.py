"""The server over a real Unix socket: replies, errors, ordering, pushes, peer check, limits."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.fakes.ipc_methods import Raw, TestMethods
from tests.polling import until
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import MAX_MESSAGE
from volee_desktop.ipc.server import IpcServer
from volee_desktop.ipc.transport import PeerCredentials, UnixTransport

RawFactory = Callable[[], Awaitable[Raw]]


async def test_round_trip(server: IpcServer, raw_factory: RawFactory) -> None:
    raw = await raw_factory()
    assert await raw.call("ping", request_id=41) == {"v": 1, "id": 41, "result": "pong"}
    reply = await raw.call("echo", request_id="abc", a=[1, {"b": None}], c="é")
    assert reply == {"v": 1, "id": "abc", "result": {"a": [1, {"b": None}], "c": "é"}}


async def test_socket_is_0600_in_a_0700_folder(sock_path: Path, methods: TestMethods) -> None:
    sock_path.parent.mkdir(mode=0o755)
    os.chmod(sock_path.parent, 0o755)  # a folder left too open is tightened
    server = await IpcServer.start(sock_path, methods)
    try:
        st = os.lstat(sock_path)
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert stat.S_IMODE(os.stat(sock_path.parent).st_mode) == 0o700
    finally:
        await server.close()
    assert not sock_path.exists()


async def test_peer_credentials_are_the_kernels(
    server: IpcServer, methods: TestMethods, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    await raw.call("ping")
    (conn,) = methods.connections
    assert conn.peer_uid == os.getuid()
    assert conn.peer_pid == os.getpid()


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b"{this is not json\n", "bad_json", None),
        (b"[1, 2, 3]\n", "bad_request", None),
        (b'{"v": 1, "id": 5}\n', "bad_request", 5),
        (b'{"v": 1, "id": 6, "method": "ping", "params": "x"}\n', "bad_request", 6),
        (b'{"v": 1, "id": 7, "method": "no.such.method"}\n', "unknown_method", 7),
        (b'{"v": 2, "id": 8, "method": "ping"}\n', "unsupported_version", 8),
        (b'{"id": 9, "method": "ping"}\n', "bad_request", 9),
    ],
)
async def test_bad_requests_get_an_error_and_the_connection_keeps_working(
    server: IpcServer,
    raw_factory: RawFactory,
    line: bytes,
    code: str,
    request_id: int | None,
) -> None:
    raw = await raw_factory()
    await raw.send(line)
    reply = await raw.recv()
    assert reply["v"] == 1
    assert reply["id"] == request_id
    assert reply["error"]["code"] == code
    assert reply["error"]["message"]
    assert "result" not in reply
    assert await raw.call("ping", request_id=100) == {"v": 1, "id": 100, "result": "pong"}


async def test_unsupported_version_says_which_are_supported(
    server: IpcServer, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    await raw.send_json({"v": 3, "id": 1, "method": "ping"})
    error = (await raw.recv())["error"]
    assert error["code"] == "unsupported_version"
    assert error["supported"] == [1]


async def test_unknown_method_names_the_known_ones(
    server: IpcServer, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    error = (await raw.call("pnig"))["error"]
    assert error["code"] == "unknown_method"
    assert "'pnig'" in error["message"]
    assert "ping" in error["message"]


async def test_oversized_line_gets_too_large_and_both_connections_keep_working(
    server: IpcServer, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    other = await raw_factory()
    big = b'{"v":1,"id":1,"method":"len","params":{"x":"' + b"a" * MAX_MESSAGE + b'"}}\n'
    await raw.send(big + b'{"v":1,"id":2,"method":"ping"}\n')
    reply = await raw.recv()
    assert reply["id"] is None
    assert reply["error"]["code"] == "too_large"
    assert await raw.recv() == {"v": 1, "id": 2, "result": "pong"}
    assert await other.call("ping", request_id=3) == {"v": 1, "id": 3, "result": "pong"}


async def test_a_line_of_exactly_the_limit_is_served(
    server: IpcServer, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    head, tail = b'{"v":1,"id":1,"method":"len","params":{"x":"', b'"}}'
    filler = MAX_MESSAGE - len(head) - len(tail)
    line = head + b"a" * filler + tail
    assert len(line) == MAX_MESSAGE
    await raw.send(line + b"\n")
    assert await raw.recv() == {"v": 1, "id": 1, "result": filler}
    await raw.send(head + b"a" * (filler + 1) + tail + b"\n")
    assert (await raw.recv())["error"]["code"] == "too_large"


async def test_a_handler_exception_becomes_internal_and_is_logged(
    server: IpcServer, raw_factory: RawFactory, caplog: pytest.LogCaptureFixture
) -> None:
    raw = await raw_factory()
    with caplog.at_level(logging.ERROR, logger="volee_desktop.ipc.server"):
        reply = await raw.call("boom", request_id=1)
    assert reply["id"] == 1
    assert reply["error"]["code"] == "internal"
    assert "ZeroDivisionError" in reply["error"]["message"]
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)
    assert await raw.call("ping", request_id=2) == {"v": 1, "id": 2, "result": "pong"}


async def test_expected_errors_keep_their_code(server: IpcServer, raw_factory: RawFactory) -> None:
    raw = await raw_factory()
    error = (await raw.call("refuse"))["error"]
    assert error == {"code": "refused", "message": "refused by the test; do something else"}


async def test_a_result_that_is_not_json_becomes_internal(
    server: IpcServer, raw_factory: RawFactory, caplog: pytest.LogCaptureFixture
) -> None:
    raw = await raw_factory()
    with caplog.at_level(logging.ERROR, logger="volee_desktop.ipc.server"):
        assert (await raw.call("not_json"))["error"]["code"] == "internal"
    assert await raw.call("ping", request_id=2) == {"v": 1, "id": 2, "result": "pong"}


async def test_a_reply_over_the_limit_becomes_too_large(
    server: IpcServer, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    reply = await raw.call("huge", request_id=1)
    assert reply["id"] == 1
    assert reply["error"]["code"] == "too_large"


async def test_requests_of_one_connection_are_handled_in_order(
    server: IpcServer, methods: TestMethods, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    other = await raw_factory()
    await raw.send(b'{"v":1,"id":1,"method":"hold"}\n{"v":1,"id":2,"method":"mark"}\n')
    await methods.hold_started.wait()
    # Another connection is served meanwhile, but the second request of the first waits.
    assert (await other.call("ping"))["result"] == "pong"
    assert "mark" not in methods.calls
    methods.release.set()
    assert await raw.recv() == {"v": 1, "id": 1, "result": "released"}
    assert await raw.recv() == {"v": 1, "id": 2, "result": "marked"}
    assert methods.calls == ["hold", "ping", "mark"]


async def test_different_connections_are_served_concurrently(
    server: IpcServer, methods: TestMethods, sock_path: Path
) -> None:
    # Every handler waits until all have started: serialising connections would deadlock.
    count = 8
    methods.barrier = asyncio.Barrier(count)
    clients = [await AsyncClient.connect(sock_path) for _ in range(count)]
    try:
        async with asyncio.timeout(10):
            results = await asyncio.gather(
                *(c.call("meet", {"n": n}) for n, c in enumerate(clients))
            )
        assert results == list(range(count))
    finally:
        for c in clients:
            await c.close()


@pytest.mark.parametrize("style", ["after_reply", "reply"])
async def test_pushes_come_after_the_reply_never_before(
    server: IpcServer, methods: TestMethods, raw_factory: RawFactory, style: str
) -> None:
    raw = await raw_factory()
    await raw.send_json(
        {"v": 1, "id": 1, "method": "subscribe", "params": {"count": 3, "style": style}}
    )
    first = await raw.recv()
    assert first == {"v": 1, "id": 1, "result": {"subscribed": True}}
    pushes = [await raw.recv() for _ in range(4)]
    assert pushes == [{"v": 1, "push": "tick", "n": n} for n in range(4)]


async def test_a_failed_request_starts_no_pushes(
    server: IpcServer, raw_factory: RawFactory
) -> None:
    raw = await raw_factory()
    assert (await raw.call("subscribe_then_fail", request_id=1))["error"]["code"] == "internal"
    assert await raw.call("ping", request_id=2) == {"v": 1, "id": 2, "result": "pong"}


async def test_a_foreign_uid_is_disconnected(
    sock_path: Path, methods: TestMethods, caplog: pytest.LogCaptureFixture
) -> None:
    server = await IpcServer.start(sock_path, methods, expected_uid=os.getuid() + 1)
    try:
        raw = await Raw.open(sock_path)
        with caplog.at_level(logging.WARNING, logger="volee_desktop.ipc.server"):
            await raw.send(b'{"v":1,"id":1,"method":"ping"}\n')
            await raw.closed_by_peer()  # closed without a reply
        await raw.close()
    finally:
        await server.close()
    assert methods.calls == []
    assert any(f"uid {os.getuid()}" in r.getMessage() for r in caplog.records)


class NoCredentials(UnixTransport):
    """A transport whose OS will not say who the peer is."""

    def peer_credentials(self, writer: asyncio.StreamWriter) -> PeerCredentials:
        raise OSError("getsockopt(SO_PEERCRED) failed in the test")


async def test_unreadable_credentials_refuse_the_connection(
    sock_path: Path, methods: TestMethods
) -> None:
    server = await IpcServer.start(sock_path, methods, transport=NoCredentials())
    try:
        raw = await Raw.open(sock_path)
        await raw.send(b'{"v":1,"id":1,"method":"ping"}\n')
        await raw.closed_by_peer()
        await raw.close()
    finally:
        await server.close()
    assert methods.calls == []


async def test_a_client_that_stops_reading_is_disconnected(
    sock_path: Path, methods: TestMethods, caplog: pytest.LogCaptureFixture
) -> None:
    limit = 256 * 1024
    size = 16 * 1024
    server = await IpcServer.start(sock_path, methods, max_send_buffer=limit)
    lazy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        lazy.connect(str(sock_path))
        lazy.sendall(b'{"v":1,"id":1,"method":"flood","params":{"size":%d}}\n' % size)
        with caplog.at_level(logging.WARNING, logger="volee_desktop.ipc.server"):
            async with asyncio.timeout(10):
                await methods.pump_done.wait()
        # Pushes went out until the buffer was full, then the connection was dropped.
        (conn,) = methods.connections
        assert conn.closed.is_set()
        assert methods.flood_pushed > limit
        assert max(methods.flood_sizes) <= limit
        await until(lambda: not server.connections, what="the connections closed", timeout=5)
        assert any("not reading" in r.getMessage() for r in caplog.records)
        # The server serves others as before.
        async with await AsyncClient.connect(sock_path) as client:
            assert await client.call("ping") == "pong"
    finally:
        lazy.close()
        await server.close()


async def test_pushes_held_during_a_request_count_against_the_limit(
    sock_path: Path, methods: TestMethods
) -> None:
    limit = 64 * 1024
    server = await IpcServer.start(sock_path, methods, max_send_buffer=limit)
    try:
        raw = await Raw.open(sock_path)
        await raw.send(b'{"v":1,"id":1,"method":"hold"}\n')
        await methods.hold_started.wait()
        (conn,) = server.connections
        blob = "z" * 1024
        results = [await conn.push("p", {"blob": blob}) for _ in range(100)]
        assert results[0] is True
        assert results[-1] is False  # dropped once the held pushes passed the limit
        assert conn.closed.is_set()
        await raw.closed_by_peer()
        await raw.close()
    finally:
        await server.close()


async def test_close_drops_connections_and_removes_the_socket(
    sock_path: Path, methods: TestMethods
) -> None:
    server = await IpcServer.start(sock_path, methods)
    raw = await Raw.open(sock_path)
    await raw.call("ping")
    (conn,) = server.connections
    await server.close()
    assert conn.closed.is_set()
    await raw.closed_by_peer()
    await raw.close()
    assert not sock_path.exists()


async def test_a_stale_socket_file_is_replaced(sock_path: Path, methods: TestMethods) -> None:
    sock_path.parent.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))  # bound, never listening: what a crashed server leaves
    dead.close()
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    server = await IpcServer.start(sock_path, methods)
    try:
        async with await AsyncClient.connect(sock_path) as client:
            assert await client.call("ping") == "pong"
    finally:
        await server.close()


async def test_a_second_server_on_a_live_socket_refuses(
    server: IpcServer, sock_path: Path, methods: TestMethods
) -> None:
    from volee_desktop.ipc.protocol import ServerStartError

    with pytest.raises(ServerStartError, match="already serving"):
        await IpcServer.start(sock_path, methods)
    async with await AsyncClient.connect(sock_path) as client:
        assert await client.call("ping") == "pong"


async def test_a_file_that_is_not_a_socket_is_left_alone(
    sock_path: Path, methods: TestMethods
) -> None:
    from volee_desktop.ipc.protocol import ServerStartError

    sock_path.parent.mkdir(mode=0o700)
    sock_path.write_text("precious")
    with pytest.raises(ServerStartError, match="not a socket"):
        await IpcServer.start(sock_path, methods)
    assert sock_path.read_text() == "precious"


async def test_a_socket_path_that_is_too_long_is_refused(
    volee_home: Path, methods: TestMethods
) -> None:
    from volee_desktop.ipc.protocol import ServerStartError

    with pytest.raises(ServerStartError, match="shorter"):
        await IpcServer.start(volee_home / ("d" * 120) / "s.sock", methods)


async def test_closing_leaves_a_socket_that_replaced_ours(
    sock_path: Path, methods: TestMethods
) -> None:
    first = await IpcServer.start(sock_path, methods)
    os.unlink(sock_path)
    second = await IpcServer.start(sock_path, methods)
    try:
        await first.close()
        assert sock_path.exists()
        async with await AsyncClient.connect(sock_path) as client:
            assert await client.call("ping") == "pong"
    finally:
        await second.close()


async def test_close_lets_a_request_in_flight_finish_and_refuses_new_ones(
    sock_path: Path, methods: TestMethods
) -> None:
    server = await IpcServer.start(sock_path, methods)
    busy = await Raw.open(sock_path)
    other = await Raw.open(sock_path)
    try:
        await other.call("ping")
        await busy.send_json({"v": 1, "id": 7, "method": "hold", "params": {}})
        await asyncio.wait_for(methods.hold_started.wait(), 5)
        closing = asyncio.ensure_future(server.close())
        await until(lambda: not sock_path.exists(), what="the socket removed", timeout=5)
        # A request that arrives while the server stops gets a clear answer, not a dead socket.
        refused = await other.call("ping", request_id=8)
        assert refused["error"]["code"] == "unavailable"
        assert "stopping" in refused["error"]["message"]
        methods.release.set()
        # The request in flight when close began is answered before its connection drops.
        assert await busy.recv() == {"v": 1, "id": 7, "result": "released"}
        await asyncio.wait_for(closing, 5)
        await busy.closed_by_peer()
    finally:
        methods.release.set()
        await server.close()
        await busy.close()
        await other.close()

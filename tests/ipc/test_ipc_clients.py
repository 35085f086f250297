"""The blocking Client and the AsyncClient against a real server."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ipc_methods import TestMethods
from volee_desktop.ipc import Client as LazyClient
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.client import Client
from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    CallTimeout,
    DaemonUnavailable,
    ErrorCode,
    IpcError,
    Push,
)
from volee_desktop.ipc.server import IpcServer
from volee_desktop.paths import dirs

# -- blocking client (run in a thread: the server lives on this test's loop) ------


async def test_blocking_round_trip_and_error_replies(server: IpcServer, sock_path: Path) -> None:
    def use() -> tuple[Any, Any, IpcError]:
        with Client.connect(sock_path, timeout=5) as client:
            pong = client.call("ping")
            echoed = client.request("echo", {"from": "x", "n": 1})
            with pytest.raises(IpcError) as info:
                client.call("refuse")
            return pong, echoed, info.value

    pong, echoed, error = await asyncio.to_thread(use)
    assert pong == "pong"
    assert echoed == {"from": "x", "n": 1}
    assert error.code is ErrorCode.REFUSED
    assert not isinstance(error, DaemonUnavailable)


async def test_blocking_client_finds_the_daemon_under_volee_home(methods: TestMethods) -> None:
    def use() -> Any:
        with Client.connect() as client:
            return client.call("echo", a=1)

    server = await IpcServer.start(dirs().socket, methods)
    try:
        assert await asyncio.to_thread(use) == {"a": 1}
    finally:
        await server.close()


def test_daemon_unavailable_when_the_socket_is_missing(sock_path: Path) -> None:
    with pytest.raises(DaemonUnavailable) as info:
        Client.connect(sock_path, timeout=1)
    assert info.value.code is ErrorCode.UNAVAILABLE
    assert "volee daemon run" in info.value.message


def test_daemon_unavailable_when_nothing_listens(sock_path: Path) -> None:
    sock_path.parent.mkdir()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))
    dead.close()  # the file stays, nobody accepts: connection refused
    with pytest.raises(DaemonUnavailable, match="nothing listens"):
        Client.connect(sock_path, timeout=1)


async def test_blocking_call_when_the_server_went_away(
    sock_path: Path, methods: TestMethods
) -> None:
    server = await IpcServer.start(sock_path, methods)
    client = await asyncio.to_thread(Client.connect, sock_path, timeout=5)
    try:
        await server.close()
        with pytest.raises(DaemonUnavailable):
            await asyncio.to_thread(client.call, "ping")
    finally:
        client.close()


async def test_blocking_call_times_out(
    server: IpcServer, sock_path: Path, methods: TestMethods
) -> None:
    def use() -> None:
        with Client.connect(sock_path, timeout=0.2) as client:
            client.call("hold")

    with pytest.raises(CallTimeout, match="did not answer"):
        await asyncio.to_thread(use)
    assert methods.hold_started.is_set()


def test_a_request_too_large_is_refused_before_sending() -> None:
    class Unused:
        def sendall(self, data: bytes, /) -> None:
            raise AssertionError("nothing may be sent")

        def recv(self, bufsize: int, /) -> bytes:
            raise AssertionError("nothing may be read")

        def settimeout(self, value: float | None, /) -> None: ...

        def close(self) -> None: ...

    client = Client(Unused(), Path("/nowhere"), 1.0)
    with pytest.raises(IpcError) as info:
        client.call("hook", payload="p" * MAX_MESSAGE)
    assert info.value.code is ErrorCode.TOO_LARGE


async def test_blocking_client_receives_pushes_after_the_reply(
    server: IpcServer, sock_path: Path
) -> None:
    def use() -> tuple[Any, list[Push]]:
        with Client.connect(sock_path, timeout=5) as client:
            result = client.call("subscribe", count=2)
            pushes = client.pushes()
            return result, [next(pushes) for _ in range(3)]

    result, pushes = await asyncio.to_thread(use)
    assert result == {"subscribed": True}
    assert pushes == [Push("tick", {"n": n}) for n in range(3)]


def test_the_blocking_client_does_not_import_asyncio() -> None:
    code = (
        "import sys, volee_desktop.ipc.client, volee_desktop.ipc; "
        "assert 'asyncio' not in sys.modules, 'asyncio imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_package_exports_the_clients_lazily() -> None:
    assert LazyClient is Client


# -- asyncio client ----------------------------------------------------------


async def test_concurrent_calls_on_one_connection_are_matched_by_id(
    server: IpcServer, sock_path: Path, methods: TestMethods
) -> None:
    async with await AsyncClient.connect(sock_path) as client:
        held = asyncio.create_task(client.call("hold"))
        marked = asyncio.create_task(client.call("mark"))
        echoed = asyncio.create_task(client.call("echo", {"k": "v"}))
        await methods.hold_started.wait()
        methods.release.set()
        assert list(await asyncio.gather(held, marked, echoed)) == [
            "released",
            "marked",
            {"k": "v"},
        ]


async def test_error_replies_raise_with_their_code(server: IpcServer, sock_path: Path) -> None:
    async with await AsyncClient.connect(sock_path) as client:
        with pytest.raises(IpcError) as info:
            await client.call("nope")
        assert info.value.code is ErrorCode.UNKNOWN_METHOD
        assert await client.call("ping") == "pong"


async def test_subscription_receives_pushes_in_order(server: IpcServer, sock_path: Path) -> None:
    async with await AsyncClient.connect(sock_path) as client:
        seen: list[dict[str, Any]] = []
        client.on_push("tick", seen.append)
        async with client.subscribe("tick") as ticks:
            assert await client.call("subscribe", {"count": 5}) == {"subscribed": True}
            got = [await anext(ticks) for _ in range(6)]
        assert got == [{"n": n} for n in range(6)]
        assert seen == got


async def test_subscription_and_pending_calls_fail_when_the_daemon_goes(
    sock_path: Path, methods: TestMethods
) -> None:
    server = await IpcServer.start(sock_path, methods)
    client = await AsyncClient.connect(sock_path)
    try:
        ticks = client.subscribe("tick")
        held = asyncio.create_task(client.call("hold"))
        await methods.hold_started.wait()
        await server.close()
        with pytest.raises(DaemonUnavailable):
            await held
        with pytest.raises(DaemonUnavailable):
            await anext(ticks)
        with pytest.raises(DaemonUnavailable):
            await client.call("ping")
    finally:
        await client.close()


async def test_closing_the_client_ends_subscriptions(server: IpcServer, sock_path: Path) -> None:
    client = await AsyncClient.connect(sock_path)
    ticks = client.subscribe("tick")
    await client.close()
    with pytest.raises(StopAsyncIteration):
        await anext(ticks)
    with pytest.raises(DaemonUnavailable):
        await client.call("ping")


async def test_a_subscription_that_falls_behind_says_so(
    server: IpcServer, sock_path: Path, methods: TestMethods
) -> None:
    async with await AsyncClient.connect(sock_path) as client:
        async with client.subscribe("tick", max_queued=2) as ticks:
            await client.call("subscribe", {"count": 5})
            await methods.pump_done.wait()
            await client.call("ping")  # every push is in by the time this reply is
            assert [await anext(ticks) for _ in range(2)] == [{"n": 0}, {"n": 1}]
            with pytest.raises(IpcError, match="lost 4 pushes"):
                await anext(ticks)


async def test_async_call_times_out(
    server: IpcServer, sock_path: Path, methods: TestMethods
) -> None:
    async with await AsyncClient.connect(sock_path) as client:
        with pytest.raises(CallTimeout):
            await client.call("hold", timeout=0.05)


async def test_async_connect_when_nothing_listens(sock_path: Path) -> None:
    with pytest.raises(DaemonUnavailable, match="not running"):
        await AsyncClient.connect(sock_path)

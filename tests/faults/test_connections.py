"""Connection floods: past the cap on connections or on unfinished bytes the daemon answers
(or closes cleanly, saying why) and keeps serving everyone else."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.polling import until
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc import server as ipc_server
from volee_desktop.paths import dirs

STATUS = b'{"v": 1, "id": 1, "method": "daemon.status"}\n'

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture
async def daemon(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Daemon]:
    monkeypatch.setattr(ipc_server, "connection_cap", lambda: 6)
    monkeypatch.setattr(ipc_server, "MAX_UNFINISHED_BYTES", 2 << 20)
    d = await Daemon.start(dirs())
    try:
        yield d
    finally:
        await d.close()


async def _open(d: Daemon) -> Conn:
    return await asyncio.open_unix_connection(str(d.dirs.socket))


async def _reply(conn: Conn) -> dict[str, Any]:
    line = await asyncio.wait_for(conn[0].readline(), 10)
    assert line, "the daemon closed the connection without a word"
    value: dict[str, Any] = json.loads(line)
    return value


async def _status(conn: Conn) -> dict[str, Any]:
    conn[1].write(STATUS)
    await conn[1].drain()
    return await _reply(conn)


def test_the_cap_follows_the_fd_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = ipc_server.connection_cap()
    assert 16 <= cap <= 4096
    if soft != resource.RLIM_INFINITY:
        assert cap <= max(16, soft // 2)


async def test_past_the_connection_cap_the_daemon_says_so_and_serves_the_rest(
    daemon: Daemon,
) -> None:
    opened = [await _open(daemon) for _ in range(6)]
    try:
        for conn in opened:
            assert "result" in await _status(conn)
        extra = await _open(daemon)
        refused = await _reply(extra)
        assert refused["error"]["code"] == "unavailable"
        assert "connections open" in refused["error"]["message"]
        assert await asyncio.wait_for(extra[0].read(), 10) == b""  # then closed, cleanly
        extra[1].close()
        # Everyone else is still served; a closed slot is taken again.
        assert "result" in await _status(opened[0])
        opened.pop()[1].close()

        async def served() -> dict[str, Any] | None:
            conn = await _open(daemon)
            reply = await _status(conn)
            if "result" in reply:
                opened.append(conn)
                return reply
            conn[1].close()
            return None

        assert "result" in await until(served, what="the freed slot taken again", timeout=10)
    finally:
        for _, writer in opened:
            writer.close()


async def test_past_the_cap_on_unfinished_bytes_the_sender_is_told_and_closed(
    daemon: Daemon,
) -> None:
    holders = [await _open(daemon) for _ in range(3)]
    try:
        for _, writer in holders[:2]:
            writer.write(b" " * 900_000)  # a request without its end, for now
            await writer.drain()
        third_reader, third_writer = holders[2]
        third_writer.write(b" " * 900_000)
        await third_writer.drain()
        told = await _reply(holders[2])
        assert told["error"]["code"] == "unavailable"
        assert "unfinished requests" in told["error"]["message"]
        assert await asyncio.wait_for(third_reader.read(), 10) == b""
        # The first two finish their requests and are answered.
        for conn in holders[:2]:
            assert "result" in await _status(conn)
        assert daemon.server is not None
        assert daemon.server.unfinished == 0
    finally:
        for _, writer in holders:
            writer.close()

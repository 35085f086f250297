"""Hand-written helpers for the ipc tests: a handler with test methods and a raw connection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from volee_desktop.ipc.server import Connection, MethodTable, Reply


class TestMethods:
    """The handler the tests serve: a MethodTable plus what it observed."""

    __test__ = False

    def __init__(self) -> None:
        self.table = MethodTable()
        self.calls: list[str] = []
        self.connections: list[Connection] = []
        self.hold_started = asyncio.Event()
        self.release = asyncio.Event()
        self.barrier: asyncio.Barrier | None = None
        self.pump_done = asyncio.Event()
        self.flood_sizes: list[int] = []
        self.flood_pushed = 0
        t = self.table

        @t.method("ping")
        async def ping(conn: Connection, params: dict[str, Any]) -> Any:
            self.calls.append("ping")
            self.connections.append(conn)
            return "pong"

        @t.method("echo")
        async def echo(conn: Connection, params: dict[str, Any]) -> Any:
            return params

        @t.method("len")
        async def length(conn: Connection, params: dict[str, Any]) -> Any:
            return len(params["x"])

        @t.method("boom")
        async def boom(conn: Connection, params: dict[str, Any]) -> Any:
            raise ZeroDivisionError("the test handler divided by zero")

        @t.method("refuse")
        async def refuse(conn: Connection, params: dict[str, Any]) -> Any:
            from volee_desktop.ipc.protocol import ErrorCode, IpcError

            raise IpcError(ErrorCode.REFUSED, "refused by the test; do something else")

        @t.method("not_json")
        async def not_json(conn: Connection, params: dict[str, Any]) -> Any:
            return {"set": {1, 2}}

        @t.method("huge")
        async def huge(conn: Connection, params: dict[str, Any]) -> Any:
            return "x" * (1 << 20)

        @t.method("hold")
        async def hold(conn: Connection, params: dict[str, Any]) -> Any:
            self.calls.append("hold")
            self.hold_started.set()
            await self.release.wait()
            return "released"

        @t.method("mark")
        async def mark(conn: Connection, params: dict[str, Any]) -> Any:
            self.calls.append("mark")
            return "marked"

        @t.method("meet")
        async def meet(conn: Connection, params: dict[str, Any]) -> Any:
            assert self.barrier is not None
            await self.barrier.wait()
            return params["n"]

        @t.method("subscribe")
        async def subscribe(conn: Connection, params: dict[str, Any]) -> Any:
            # A push asked for before the reply is written must still come after it.
            await conn.push("tick", {"n": 0})
            count = int(params.get("count", 3))

            async def pump() -> None:
                for n in range(1, count + 1):
                    await conn.push("tick", {"n": n})
                self.pump_done.set()

            if params.get("style") == "reply":
                return Reply({"subscribed": True}, after=pump)
            conn.after_reply(pump)
            return {"subscribed": True}

        @t.method("subscribe_then_fail")
        async def subscribe_then_fail(conn: Connection, params: dict[str, Any]) -> Any:
            async def pump() -> None:
                await conn.push("tick", {"n": 99})

            conn.after_reply(pump)
            raise ZeroDivisionError("fails after registering a pump")

        @t.method("flood")
        async def flood(conn: Connection, params: dict[str, Any]) -> Any:
            self.connections.append(conn)
            blob = "y" * int(params["size"])

            async def pump() -> None:
                n = 0
                while await conn.push("flood", {"n": n, "blob": blob}):
                    n += 1
                    self.flood_pushed += len(blob)
                    self.flood_sizes.append(conn.send_buffer_size)
                self.pump_done.set()

            conn.after_reply(pump)
            return "flooding"

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        return await self.table(conn, method, params)


class Raw:
    """A raw NDJSON connection for tests that need to send what a client never would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, path: Path) -> Raw:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=4 << 20)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send_json(self, obj: Any) -> None:
        await self.send(json.dumps(obj).encode() + b"\n")

    async def recv(self) -> dict[str, Any]:
        line = await self.reader.readline()
        assert line.endswith(b"\n"), f"connection ended: {line!r}"
        msg = json.loads(line)
        assert isinstance(msg, dict)
        return msg

    async def call(self, method: str, request_id: int | str = 1, **params: Any) -> dict[str, Any]:
        await self.send_json({"v": 1, "id": request_id, "method": method, "params": params})
        return await self.recv()

    async def closed_by_peer(self) -> None:
        """Wait until the server drops the connection; fail if it sends anything first."""
        try:
            rest = await self.reader.read()
        except ConnectionResetError:
            return  # an abort with our request still unread arrives as a reset
        assert rest == b"", f"the server sent {rest[:200]!r} before closing"

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass

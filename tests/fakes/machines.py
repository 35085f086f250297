"""Fake links to other machines: what ``daemon.machinelink.Dialer`` dials in tests, no ssh.

``SocketDialer`` reaches a real daemon (another ``Daemon.start`` in the test, under its own
folders) through its socket, the way a bridge would; ``drop()`` cuts every open link (the
network pulled), ``down`` makes dialing fail as ssh does when the host is down.
``HelloDialer`` reaches a scripted daemon that answers the handshake as told (another
version, a protocol it does not speak).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from volee_desktop.daemon.machines.link import Channel
from volee_desktop.machines import Machine


class SocketDialer:
    """Dials the socket of the daemon named by ``sockets[machine.name]``."""

    def __init__(self, sockets: dict[str, Path]) -> None:
        self.sockets = sockets
        self.down: str | None = None  # why dialing fails, as ssh would say it
        self.dialed: list[str] = []
        self._open: list[asyncio.StreamWriter] = []

    async def __call__(self, machine: Machine) -> Channel:
        self.dialed.append(machine.name)
        if self.down is not None:
            raise ConnectionError(self.down)
        reader, writer = await asyncio.open_unix_connection(str(self.sockets[machine.name]))
        self._open.append(writer)

        async def close() -> None:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass

        return Channel(reader, writer, close, lambda: self.down or "")

    def drop(self) -> None:
        """Cut every link that is open (as when the sshd child is killed)."""
        for writer in self._open:
            transport = writer.transport
            transport.abort()
        self._open.clear()


class HelloDialer:
    """A daemon that answers ``machine.hello`` with ``hello`` (None: it does not know the
    method, as an older volee) and ``daemon.status`` with ``status_version``."""

    def __init__(
        self,
        hello: dict[str, Any] | None,
        error: dict[str, Any] | None = None,
        status_version: str = "0.0.5",
    ) -> None:
        self.hello = hello
        self.status_version = status_version
        self.silent = False
        self.error = error
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, machine: Machine) -> Channel:
        ours, theirs = await _pipe()
        reader, writer = ours
        their_reader, their_writer = theirs

        async def serve() -> None:
            while line := await their_reader.readline():
                if self.silent:
                    continue  # an ssh that connected, and a far side that never answers
                request = json.loads(line)
                self.requests.append(request)
                reply: dict[str, Any] = {"v": 1, "id": request["id"]}
                if request["method"] == "machine.hello" and self.hello is not None:
                    reply["result"] = self.hello
                elif request["method"] == "daemon.status":
                    reply["result"] = {"version": self.status_version}
                else:
                    reply["error"] = self.error or {"code": "unknown_method", "message": "no"}
                their_writer.write(json.dumps(reply).encode() + b"\n")
                await their_writer.drain()
            their_writer.close()

        task = asyncio.ensure_future(serve())

        async def close() -> None:
            task.cancel()
            for end in (writer, their_writer):
                end.close()
                try:
                    await end.wait_closed()
                except (ConnectionError, OSError):
                    pass

        return Channel(reader, writer, close)


async def _pipe() -> tuple[
    tuple[asyncio.StreamReader, asyncio.StreamWriter],
    tuple[asyncio.StreamReader, asyncio.StreamWriter],
]:
    """Two connected ends of a socket pair, as asyncio streams."""
    import socket

    a, b = socket.socketpair()
    return await asyncio.open_connection(sock=a), await asyncio.open_connection(sock=b)

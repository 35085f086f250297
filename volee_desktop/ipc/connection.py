"""One client connection as a handler sees it (``Connection``), and what a handler may return
beside a plain result (``Reply``: work once the reply is written; ``Takeover``: the connection
leaves volee's protocol), the ``Handler`` the server calls and the ``MethodTable`` that
dispatches by name.

Everything sent goes through a bounded send buffer: a client that stops reading is
disconnected.  Pushes asked for while a request is handled are held until its reply is
written, so a push never overtakes the reply that started it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, overload

from volee_desktop.ipc.caller import Caller
from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    ErrorCode,
    IpcError,
    encode_push,
)
from volee_desktop.ipc.transport import PeerCredentials

log = logging.getLogger(__name__)


AfterReply = Callable[[], Awaitable[None] | None]
#: Serves a connection taken over: the bytes already received after the request, and the rest.
TakeoverServe = Callable[["Connection", bytes, asyncio.StreamReader], Awaitable[None]]


#: What a handler's reply carries (its result's type, for mypy: the wire is the same).
R = TypeVar("R")


@dataclass(frozen=True)
class Reply(Generic[R]):
    """A handler's result plus work to start once the reply is on the wire (e.g. pushes)."""

    result: R
    after: AfterReply | None = None


@dataclass(frozen=True)
class Takeover(Generic[R]):
    """A handler's result after which the connection stops speaking volee's protocol.

    Once the reply is written, ``serve`` gets the connection's raw bytes (those already
    received after the request, then its reader) until it returns; the connection then
    closes.  The MCP relays use it: the rest of their connection is one MCP session.
    """

    result: R
    serve: TakeoverServe


class Handler(Protocol):
    """What the server calls for each request; raise IpcError for expected errors."""

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any: ...


#: A method's handler as the table stores it: the connection, then what its decoder made.
Serve = Callable[["Connection", Any], Awaitable[Any]]
#: A handler that takes the request's parameters as they came (a JSON object).
Untyped = Callable[["Connection", dict[str, Any]], Awaitable[Any]]
P = TypeVar("P")


class MethodTable:
    """A Handler that dispatches by method name and answers ``unknown_method`` otherwise.

    A method added with a ``decode`` has its parameters read once, here, before its handler
    runs: the handler receives the typed value ``decode`` makes, and a wrong parameter is the
    decoder's ``bad_request`` (the daemon's decoders are in ``daemon/params.py``).
    """

    def __init__(self, server: str = "this daemon") -> None:
        self._methods: dict[str, tuple[Serve, Callable[[dict[str, Any]], Any] | None]] = {}
        self.server = server  # who answers, for the unknown_method message

    @overload
    def add(self, name: str, fn: Untyped) -> None: ...

    @overload
    def add(
        self,
        name: str,
        fn: Callable[[Connection, P], Awaitable[Any]],
        decode: Callable[[dict[str, Any]], P],
    ) -> None: ...

    def add(
        self,
        name: str,
        fn: Callable[[Connection, Any], Awaitable[Any]],
        decode: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        if name in self._methods:
            raise ValueError(f"method {name!r} is registered twice; pick another name")
        self._methods[name] = (fn, decode)

    def method(self, name: str) -> Callable[[Untyped], Untyped]:
        """Decorator form of ``add`` (for a handler that reads its parameters itself)."""

        def register(fn: Untyped) -> Untyped:
            self.add(name, fn)
            return fn

        return register

    @property
    def names(self) -> list[str]:
        return sorted(self._methods)

    def handler(self, name: str) -> Serve:
        """The handler of ``name`` (KeyError when there is none), to inspect it."""
        return self._methods[name][0]

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        found = self._methods.get(method)
        if found is None:
            raise IpcError(
                ErrorCode.UNKNOWN_METHOD,
                f"unknown method {method!r}; {self.server} knows: {', '.join(self.names)} "
                "(a newer volee may need a newer daemon: restart it)",
            )
        fn, decode = found
        return await fn(conn, params if decode is None else decode(params))


class Connection:
    """One client connection, as a handler sees it."""

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        peer: PeerCredentials,
        max_send_buffer: int,
        caller: Caller | None = None,
    ) -> None:
        self._writer = writer
        self.peer = peer
        # Who this connection speaks for (ipc/caller.py): decided once, when it was accepted.
        self.caller = caller or Caller.person(peer.pid, "this server identifies no one")
        self.max_send_buffer = max_send_buffer
        self.closed = asyncio.Event()
        self._in_request = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._after: list[AfterReply] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._takeover: TakeoverServe | None = None
        # Unfinished bytes this connection holds, as the server counts them.
        self._unfinished: int | None = None

    @property
    def peer_uid(self) -> int:
        return self.peer.uid

    @property
    def peer_pid(self) -> int | None:
        return self.peer.pid

    @property
    def send_buffer_size(self) -> int:
        """Bytes waiting to be sent to this client (held pushes included)."""
        return self._writer.transport.get_write_buffer_size() + self._held_bytes

    def __repr__(self) -> str:
        return f"<Connection uid={self.peer.uid} pid={self.peer.pid} {self.caller.kind}>"

    async def push(self, name: str, payload: dict[str, Any]) -> bool:
        """Send a push; False when the connection is closed (or just closed: too slow).

        Raises IpcError(too_large) when the push does not fit in one message and
        TypeError/ValueError when the payload is not JSON.
        """
        data = encode_push(name, payload)
        if len(data) - 1 > MAX_MESSAGE:
            raise IpcError(
                ErrorCode.TOO_LARGE,
                f"push {name!r} is {len(data) - 1} bytes, more than {MAX_MESSAGE}; "
                "split it into smaller pushes",
            )
        if self.closed.is_set():
            return False
        if self._in_request:
            self._held.append(data)
            self._held_bytes += len(data)
            return self._check_buffer()
        return self._send(data)

    def after_reply(self, fn: AfterReply) -> None:
        """Run ``fn`` once the reply to the current request is written (not if it fails).

        If ``fn`` returns an awaitable it runs as a task of this connection,
        cancelled when the connection closes.
        """
        self._after.append(fn)

    async def wait_closed(self) -> None:
        await self.closed.wait()

    async def write_raw(self, data: bytes) -> None:
        """Send bytes as they are, waiting while the client is slow (taken-over connections)."""
        if self.closed.is_set() or self._writer.transport.is_closing():
            raise ConnectionResetError("the connection is closed")
        self._writer.write(data)
        await self._writer.drain()

    def close(self) -> None:
        """Drop the connection now."""
        self._writer.transport.abort()
        self._mark_closed()

    def _close_with(self, data: bytes) -> None:
        """Send ``data`` (an error saying why) and end the sending side; the caller drains
        what the client still sends (closing with unread bytes would reset the connection
        and could lose ``data``), then closes."""
        if not self.closed.is_set() and not self._writer.transport.is_closing():
            self._writer.write(data)
            if self._writer.can_write_eof():
                self._writer.write_eof()
        self._mark_closed()

    # -- used by the server -------------------------------------------------

    def _send(self, data: bytes) -> bool:
        if self.closed.is_set() or self._writer.transport.is_closing():
            return False
        self._writer.write(data)
        return self._check_buffer()

    def _check_buffer(self) -> bool:
        size = self.send_buffer_size
        if size > self.max_send_buffer:
            log.warning(
                "disconnecting %r: it is not reading (%d bytes waiting, limit %d)",
                self,
                size,
                self.max_send_buffer,
            )
            self.close()
            return False
        return True

    def _begin_request(self) -> None:
        self._in_request = True
        self._idle.clear()
        self._after.clear()

    def _end_request(self, reply: bytes, run_after: bool) -> None:
        self._in_request = False
        self._idle.set()
        after, self._after = self._after, []
        held, self._held, self._held_bytes = self._held, [], 0
        if not self._send(reply):
            return
        for data in held:
            if not self._send(data):
                return
        if not run_after:
            return
        for fn in after:
            try:
                outcome = fn()
            except Exception:
                log.exception("after-reply callback of %r failed", self)
                continue
            if outcome is not None:
                self._spawn(outcome)

    def _spawn(self, aw: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await aw
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("after-reply task of %r failed", self)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _mark_closed(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        self._idle.set()
        self._held.clear()
        self._held_bytes = 0
        for task in list(self._tasks):
            task.cancel()

    async def _cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

"""The IPC server: accepts local connections of this user and feeds requests to a handler.

Each connection is served by one task that reads requests and handles them in
order, one at a time; different connections run concurrently.  Everything the
server sends goes through a bounded send buffer: a client that stops reading is
disconnected instead of letting the daemon's memory grow.  Pushes a handler
asks for while a request is being handled are held until that request's reply
is written, so a push never overtakes the reply that started it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from volee_desktop.ipc.caller import Caller, Identify
from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    OVERSIZED,
    ErrorCode,
    IpcError,
    LineBuffer,
    RequestError,
    decode_request,
    encode_error,
    encode_push,
    encode_result,
)
from volee_desktop.ipc.transport import Listener, PeerCredentials, Transport, default_transport

log = logging.getLogger(__name__)

# Room for a few full-size messages; a client that is further behind is not reading.
DEFAULT_MAX_SEND_BUFFER = 4 * MAX_MESSAGE
# How long close() lets requests in flight finish (their events may be on their way to disk).
CLOSE_GRACE = 5.0
_READ_CHUNK = 64 * 1024
# Unfinished request lines the server holds, all connections together (each may hold up to
# MAX_MESSAGE): past this the connection that adds more is told why and closed.
MAX_UNFINISHED_BYTES = 64 * MAX_MESSAGE


async def _drain_input(reader: asyncio.StreamReader) -> None:
    """Read and drop what a refused client still sends, for a moment (at most DRAIN_TIME s and
    DRAIN_BYTES), so that closing does not reset the connection before it read why."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_TIME
    dropped = 0
    try:
        while dropped < DRAIN_BYTES:
            left = deadline - loop.time()
            if left <= 0:
                return
            data = await asyncio.wait_for(reader.read(_READ_CHUNK), left)
            if not data:
                return
            dropped += len(data)
    except (TimeoutError, ConnectionError, OSError):
        return


DRAIN_TIME = 2.0
DRAIN_BYTES = 4 * MAX_MESSAGE


def connection_cap() -> int:
    """How many connections the server takes at once: half the fds this process may open
    (the rest is for the log, the hosts' sockets and subprocesses), 16 to 4,096."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft // 2))


AfterReply = Callable[[], Awaitable[None] | None]
#: Serves a connection taken over: the bytes already received after the request, and the rest.
TakeoverServe = Callable[["Connection", bytes, asyncio.StreamReader], Awaitable[None]]


@dataclass(frozen=True)
class Reply:
    """A handler's result plus work to start once the reply is on the wire (e.g. pushes)."""

    result: Any
    after: AfterReply | None = None


@dataclass(frozen=True)
class Takeover:
    """A handler's result after which the connection stops speaking volee's protocol.

    Once the reply is written, ``serve`` gets the connection's raw bytes (those already
    received after the request, then its reader) until it returns; the connection then
    closes.  The MCP relays use it: the rest of their connection is one MCP session.
    """

    result: Any
    serve: TakeoverServe


class Handler(Protocol):
    """What the server calls for each request; raise IpcError for expected errors."""

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any: ...


Method = Callable[["Connection", dict[str, Any]], Awaitable[Any]]


class MethodTable:
    """A Handler that dispatches by method name and answers ``unknown_method`` otherwise."""

    def __init__(self, server: str = "this daemon") -> None:
        self._methods: dict[str, Method] = {}
        self.server = server  # who answers, for the unknown_method message

    def add(self, name: str, fn: Method) -> None:
        if name in self._methods:
            raise ValueError(f"method {name!r} is registered twice; pick another name")
        self._methods[name] = fn

    def method(self, name: str) -> Callable[[Method], Method]:
        """Decorator form of ``add``."""

        def register(fn: Method) -> Method:
            self.add(name, fn)
            return fn

        return register

    @property
    def names(self) -> list[str]:
        return sorted(self._methods)

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        fn = self._methods.get(method)
        if fn is None:
            raise IpcError(
                ErrorCode.UNKNOWN_METHOD,
                f"unknown method {method!r}; {self.server} knows: {', '.join(self.names)} "
                "(a newer volee may need a newer daemon: restart it)",
            )
        return await fn(conn, params)


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


class IpcServer:
    """Serves the local API at ``path`` until closed."""

    def __init__(
        self,
        path: Path,
        handler: Handler,
        transport: Transport,
        expected_uid: int,
        max_send_buffer: int,
        identify: Identify | None = None,
    ) -> None:
        self.path = path
        self._handler = handler
        self._transport = transport
        self._expected_uid = expected_uid
        self._max_send_buffer = max_send_buffer
        self._identify = identify
        self._listener: Listener | None = None
        self._connections: set[Connection] = set()
        self._conn_tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._refusals: set[asyncio.Task[None]] = set()
        self.max_connections = connection_cap()
        self.max_unfinished = MAX_UNFINISHED_BYTES
        # Bytes of unfinished lines held for all connections (see MAX_UNFINISHED_BYTES).
        self.unfinished = 0

    @classmethod
    async def start(
        cls,
        path: Path,
        handler: Handler,
        *,
        transport: Transport | None = None,
        expected_uid: int | None = None,
        max_send_buffer: int = DEFAULT_MAX_SEND_BUFFER,
        identify: Identify | None = None,
    ) -> IpcServer:
        """Listen at ``path`` (ServerStartError when a live server is there already).

        ``expected_uid`` is the only uid admitted (default: this process's);
        tests pass another to play a foreign user.  ``identify`` decides, from the
        peer's credentials, whom each accepted connection speaks for (``conn.caller``).
        """
        server = cls(
            path,
            handler,
            transport or default_transport(),
            os.getuid() if expected_uid is None else expected_uid,
            max_send_buffer,
            identify,
        )
        server._listener = await server._transport.listen(path, server._on_connection)
        log.info("serving the local API on %s", path)
        return server

    @property
    def connections(self) -> frozenset[Connection]:
        return frozenset(self._connections)

    async def close(self) -> None:
        """Stop listening, drop every connection and remove the socket file."""
        if self._closing:
            return
        self._closing = True
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.close()
        # A request cut off mid-way leaves its client guessing whether it happened: let the
        # ones in flight answer (new ones are refused meanwhile), for a bounded time.
        busy = [c._idle.wait() for c in self._connections if not c._idle.is_set()]
        if busy:
            try:
                await asyncio.wait_for(asyncio.gather(*busy), CLOSE_GRACE)
            except TimeoutError:
                log.warning("closing with requests still in flight after %.0f s", CLOSE_GRACE)
        for conn in list(self._connections):
            conn.close()
        tasks = [*self._conn_tasks, *self._refusals]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> IpcServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.transport.abort()
            return
        if len(self._conn_tasks) >= self.max_connections:
            log.warning(
                "refused a connection: %d are open, the most this daemon takes at once",
                len(self._conn_tasks),
            )
            writer.write(
                encode_error(
                    None,
                    ErrorCode.UNAVAILABLE,
                    f"the daemon has {len(self._conn_tasks)} connections open, the most it takes "
                    "at once; try again once some have closed",
                )
            )
            if writer.can_write_eof():
                writer.write_eof()
            refusal = asyncio.get_running_loop().create_task(_drain_input(reader))
            self._refusals.add(refusal)

            def closed(task: asyncio.Task[Any]) -> None:
                self._refusals.discard(task)
                writer.transport.abort()

            refusal.add_done_callback(closed)
            return
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        self._conn_tasks.add(task)

        def done(task: asyncio.Task[Any]) -> None:
            self._conn_tasks.discard(task)
            # Also when the task was cancelled before it ran (its finally never did).
            writer.transport.abort()

        task.add_done_callback(done)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            peer = self._transport.peer_credentials(writer)
        except OSError as exc:
            log.warning("refused a connection: cannot read its peer credentials (%s)", exc)
            writer.transport.abort()
            return
        if peer.uid != self._expected_uid:
            log.warning(
                "refused a connection from uid %d (pid %s): only uid %d may use this daemon",
                peer.uid,
                peer.pid,
                self._expected_uid,
            )
            writer.transport.abort()
            return
        caller = None
        if self._identify is not None:
            # At once, while the peer still runs: the process that connected is the one whose
            # ancestry counts, not whatever holds the socket later.
            try:
                caller = self._identify(peer)
            except Exception:
                log.exception("refused a connection (pid %s): cannot tell who it is", peer.pid)
                writer.transport.abort()
                return
        conn = Connection(writer, peer, self._max_send_buffer, caller)
        self._connections.add(conn)
        log.debug("accepted %r", conn)
        try:
            await self._read_loop(conn, reader)
        except (ConnectionError, OSError) as exc:
            log.debug("%r dropped: %s", conn, exc)
        finally:
            self._connections.discard(conn)
            conn._mark_closed()
            await conn._cancel_tasks()
            writer.transport.abort()
            log.debug("closed %r", conn)

    async def _read_loop(self, conn: Connection, reader: asyncio.StreamReader) -> None:
        lines = LineBuffer(MAX_MESSAGE)
        try:
            await self._read_lines(conn, reader, lines, lambda n: self._hold(conn, n))
        finally:
            self.unfinished -= conn._unfinished or 0
            conn._unfinished = 0

    def _hold(self, conn: Connection, pending: int) -> bool:
        """Count ``pending`` unfinished bytes of ``conn``; False (told, closed) past the cap."""
        before = conn._unfinished or 0
        self.unfinished += pending - before
        conn._unfinished = pending
        if pending <= before or self.unfinished <= self.max_unfinished:
            return True
        log.warning(
            "closing %r: %d bytes of unfinished requests held in all, more than %d",
            conn,
            self.unfinished,
            self.max_unfinished,
        )
        conn._close_with(
            encode_error(
                None,
                ErrorCode.UNAVAILABLE,
                f"the daemon holds more than {self.max_unfinished} bytes of unfinished requests "
                "(lines without their newline); this connection was closed: end each request "
                "with a newline",
            )
        )
        return False

    async def _read_lines(
        self,
        conn: Connection,
        reader: asyncio.StreamReader,
        lines: LineBuffer,
        hold: Callable[[int], bool],
    ) -> None:
        while not conn.closed.is_set():
            data = await reader.read(_READ_CHUNK)
            if not data:
                return
            received = lines.feed(data)
            if not hold(lines.pending):
                lines.take()
                hold(0)
                await _drain_input(reader)
                return
            for index, line in enumerate(received):
                if conn.closed.is_set():
                    return
                if line is OVERSIZED:
                    log.warning("%r sent a line over %d bytes; dropped it", conn, MAX_MESSAGE)
                    conn._send(
                        encode_error(
                            None,
                            ErrorCode.TOO_LARGE,
                            f"the request is larger than {MAX_MESSAGE} bytes and was dropped; "
                            "send smaller requests",
                        )
                    )
                    continue
                assert isinstance(line, bytes)
                await self._handle_line(conn, line)
                serve = conn._takeover
                if serve is not None:
                    later = [x + b"\n" for x in received[index + 1 :] if isinstance(x, bytes)]
                    rest = lines.take()
                    hold(0)  # handed over: no longer held here
                    await serve(conn, b"".join(later) + rest, reader)
                    return

    async def _handle_line(self, conn: Connection, line: bytes) -> None:
        try:
            request = decode_request(line)
        except RequestError as exc:
            log.info("bad request from %r: %s", conn, exc)
            conn._send(encode_error(exc.request_id, exc.code, exc.message, exc.extra))
            return
        if self._closing:
            conn._send(
                encode_error(
                    request.id,
                    ErrorCode.UNAVAILABLE,
                    f"the daemon is stopping and did not run {request.method!r}; "
                    "run the command again (it starts a new daemon)",
                )
            )
            return
        conn._begin_request()
        ok = False
        takeover: TakeoverServe | None = None
        try:
            outcome = await self._handler(conn, request.method, request.params)
            after = None
            if isinstance(outcome, Reply):
                outcome, after = outcome.result, outcome.after
            elif isinstance(outcome, Takeover):
                outcome, takeover = outcome.result, outcome.serve
            reply = self._encode_result(request.id, request.method, outcome)
            if reply is None:
                reply = encode_error(
                    request.id,
                    ErrorCode.INTERNAL,
                    f"the daemon could not encode its reply to {request.method!r} as JSON; "
                    "this is a bug in volee: the daemon log has the details",
                )
            else:
                ok = True
                if after is not None:
                    conn.after_reply(after)
        except IpcError as exc:
            reply = encode_error(request.id, exc.code, exc.message)
        except Exception as exc:
            log.exception("handler failed on %r from %r", request.method, conn)
            reply = encode_error(
                request.id,
                ErrorCode.INTERNAL,
                f"the daemon failed while handling {request.method!r} "
                f"({type(exc).__name__}: {exc}); this is a bug in volee: "
                "the daemon log has the traceback",
            )
        if len(reply) - 1 > MAX_MESSAGE:
            ok = False
            reply = encode_error(
                request.id,
                ErrorCode.TOO_LARGE,
                f"the reply to {request.method!r} is larger than {MAX_MESSAGE} bytes; "
                "ask for less (a narrower filter or a smaller page)",
            )
        conn._end_request(reply, run_after=ok)
        if ok and takeover is not None and not conn.closed.is_set():
            conn._takeover = takeover

    @staticmethod
    def _encode_result(request_id: int | str, method: str, result: Any) -> bytes | None:
        try:
            return encode_result(request_id, result)
        except (TypeError, ValueError):
            log.exception("the result of %r is not JSON", method)
            return None


__all__ = [
    "DEFAULT_MAX_SEND_BUFFER",
    "Connection",
    "Handler",
    "IpcServer",
    "MethodTable",
    "Reply",
    "Takeover",
]

"""The IPC server: accepts local connections of this user and feeds requests to a handler.

Each connection is served by one task that reads requests and handles them in
order, one at a time; different connections run concurrently.  Everything the
server sends goes through a bounded send buffer: a client that stops reading is
disconnected instead of letting the daemon's memory grow.  Pushes a handler
asks for while a request is being handled are held until that request's reply
is written, so a push never overtakes the reply that started it (``connection.py``: a
connection as a handler sees it, and the ``MethodTable``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from volee_desktop.ipc.caller import Identify
from volee_desktop.ipc.connection import (
    Connection,
    Handler,
    MethodTable,
    Reply,
    Takeover,
    TakeoverServe,
)
from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    OVERSIZED,
    ErrorCode,
    IpcError,
    LineBuffer,
    RequestError,
    decode_request,
    encode_error,
    encode_result,
)
from volee_desktop.ipc.transport import (
    Listener,
    Transport,
    default_transport,
    release,
)

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

    def _forget_peer(self, writer: asyncio.StreamWriter) -> None:
        """A connection refused before it is served: let go of what accept read of its peer
        (its pidfd), so that refusing many connections does not hold as many fds."""
        try:
            release(self._transport.peer_credentials(writer))
        except OSError:
            pass

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            self._forget_peer(writer)
            writer.transport.abort()
            return
        if len(self._conn_tasks) >= self.max_connections:
            self._forget_peer(writer)
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
            release(peer)
            log.warning(
                "refused a connection from uid %d (pid %s): only uid %d may use this daemon",
                peer.uid,
                peer.pid,
                self._expected_uid,
            )
            writer.transport.abort()
            return
        caller = None
        try:
            if self._identify is not None:
                # At once, while the peer still runs: the process that connected is the one
                # whose ancestry counts, not whatever holds the socket later.  A peer that
                # cannot be identified is never the person (daemon/serving/identity.py).
                try:
                    caller = self._identify(peer)
                except Exception:
                    log.exception("refused a connection (pid %s): cannot tell who it is", peer.pid)
                    writer.transport.abort()
                    return
        finally:
            peer = release(peer)
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

"""volee's MCP endpoint over HTTP on 127.0.0.1: Claude Code's sessions with no process between.

With the relay (``mcp/relay.py``) every Claude Code agent ran one more Python process,
9.7 MB of RSS for moving lines; sixty agents, 580 MB.  Claude Code speaks MCP's
streamable HTTP itself, so on Linux its ``--mcp-config`` names this endpoint
(``http://127.0.0.1:<port>/mcp/<agent>``) and the daemon serves the session directly
(docs/at-rest.md).

Who is calling.  Anything on the machine may open a TCP connection to 127.0.0.1, so a
connection is served only when the daemon identifies its peer as an agent: the kernel's
socket table gives the peer socket's owner and inode, the fd tables the process holding
it (``ipc/tcppeer.py``), and the daemon's identification its ancestry
(``daemon/serving/identity.py``), exactly as for the Unix socket.  The person's processes get
403 here: a web page in their browser could reach this port, never their socket; the
person's own MCP client uses ``volee mcp``; so do peers the daemon cannot identify
(``unknown``: fail closed).  A request with an ``Origin`` header (what browsers add) or a
``Host`` that is not this address (``127.0.0.1:<port>`` or ``localhost:<port>``, both the
loopback) is refused too (DNS rebinding), and kept in the caller's timeline when the caller
is an agent.
The agent named in the path is a claim: another agent's name there is recorded as
refused in the caller's timeline, and the session is the caller's all the same.

The protocol.  Each POST carries one JSON-RPC message; a request gets its reply as
``application/json``, a notification or a response 202.  The server keeps no session
(no ``Mcp-Session-Id``): identity is the connection's, every request stands alone, and
a restarted daemon answers the next request with nothing to re-establish.  GET (a
stream of server messages, which volee never sends) and DELETE get 405.

The port.  Agents outlive the daemon, and their harness read the URL once, at start: the
daemon keeps its port in ``state/mcp-http.port`` and binds the same one when it starts
again.  When another program took it meanwhile, the daemon binds a new one, says so in
its log and status, and the agents started before lose volee's MCP tools until they are
resumed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...atomicfile import write_atomic
from ...ipc import tcppeer
from ...ipc.caller import Caller, Identify
from ...ipc.server import Connection
from ...ipc.transport import PeerCredentials, release
from ...mcp import protocol
from ...mcp.protocol import VERSIONS
from ...mcp.tools import Session
from ..errors import Error
from .mcpadmission import HOST, admit, claim_of, unidentified
from .mcphub import McpHub

log = logging.getLogger(__name__)

#: An MCP message over this is refused (volee's tools exchange a few KiB).
MAX_BODY = 8 << 20
#: The request line and headers together.
MAX_HEAD = 16 * 1024
#: Connections served at once (an agent uses one or two).
MAX_CONNECTIONS = 512
#: How long a client may take to send a request's head once it began, and its body.
REQUEST_TIMEOUT = 30.0

_REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    503: "Service Unavailable",
}


class HttpError(Error):
    """A request this endpoint answers with an HTTP error (status, and a message in words)."""

    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.close = close


@dataclass
class Request:
    """One HTTP request's head and body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""

    @property
    def keep_alive(self) -> bool:
        return self.headers.get("connection", "").lower() != "close"


def parse_head(head: bytes) -> Request:
    """The request line and headers (HttpError 400 when they are not HTTP/1.x)."""
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise HttpError(400, "not an HTTP request line", close=True) from None
    if not version.startswith("HTTP/1."):
        raise HttpError(400, f"HTTP version {version[:20]!r} is not served here", close=True)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(400, "a malformed header line", close=True)
        key = name.lower()
        if key in headers and key in ("content-length", "host", "transfer-encoding"):
            raise HttpError(400, f"two {name} headers", close=True)
        headers[key] = value.strip()
    return Request(method, target.split("?", 1)[0], headers)


def body_length(request: Request) -> int:
    if "transfer-encoding" in request.headers:
        raise HttpError(411, "send the message with a Content-Length", close=True)
    raw = request.headers.get("content-length", "0")
    if not raw.isdigit():
        raise HttpError(400, f"Content-Length {raw[:20]!r} is not a number", close=True)
    length = int(raw)
    if length > MAX_BODY:
        raise HttpError(413, f"a message of {length} bytes; the most is {MAX_BODY}", close=True)
    return length


def response(
    status: int, body: bytes = b"", *, json_body: bool = False, close: bool = False
) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}"]
    if json_body:
        lines.append("Content-Type: application/json")
    elif body:
        lines.append("Content-Type: text/plain; charset=utf-8")
    if status == 405:
        lines.append("Allow: POST")
    lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class Counts:
    """What the endpoint did, for ``daemon status``."""

    connections: int = 0
    requests: int = 0
    refused: int = 0
    live: set[asyncio.Task[None]] = field(default_factory=set)


class McpHttp:
    """The HTTP endpoint: ``start()`` binds it, ``url(agent)`` is what a harness is given."""

    def __init__(
        self,
        hub: McpHub,
        identify: Identify,
        likely: Callable[[], Iterable[int]],
        port_file: Path,
    ) -> None:
        self.hub = hub
        self.identify = identify
        self.likely = likely
        self.port_file = port_file
        self.port: int | None = None
        self.moved_from: int | None = None
        self.counts = Counts()
        self._server: asyncio.Server | None = None

    def url(self, agent: str) -> str | None:
        """The endpoint for ``agent`` (None when it is not serving)."""
        return None if self.port is None else f"http://{HOST}:{self.port}/mcp/{agent}"

    def status(self) -> dict[str, Any]:
        return {
            "url": self.url(""),
            "moved_from": self.moved_from,
            "connections": len(self.counts.live),
            "opened": self.counts.connections,
            "requests": self.counts.requests,
            "refused": self.counts.refused,
        }

    def _kept_port(self) -> int | None:
        try:
            text = self.port_file.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() and 0 < int(text) < 65536 else None

    async def start(self) -> bool:
        """Listen on the port of the last run (else a new one); False when it cannot."""
        if not tcppeer.supported():
            log.info("MCP over HTTP: this system does not say who holds a TCP socket; relays")
            return False
        kept = self._kept_port()
        for port in ([kept] if kept else []) + [0]:
            try:
                self._server = await asyncio.start_server(
                    self._on_connection, HOST, port, limit=MAX_HEAD, reuse_address=True
                )
            except OSError as exc:
                log.warning("MCP over HTTP: cannot listen on %s:%s (%s)", HOST, port, exc)
                continue
            break
        if self._server is None:
            return False
        self.port = self._server.sockets[0].getsockname()[1]
        if kept and self.port != kept:
            self.moved_from = kept
            log.warning(
                "MCP over HTTP: port %d is taken; now on %d. Agents started before keep asking "
                "%d: their volee tools are gone until they are resumed",
                kept,
                self.port,
                kept,
            )
        if self.port != kept:
            write_atomic(self.port_file, f"{self.port}\n".encode())
        log.info("MCP over HTTP on %s:%d", HOST, self.port)
        return True

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self.counts.live):
            task.cancel()
        await asyncio.gather(*self.counts.live, return_exceptions=True)
        await server.wait_closed()

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.counts.live) >= MAX_CONNECTIONS:
            log.warning("MCP over HTTP: %d connections open; refused one", MAX_CONNECTIONS)
            writer.write(response(503, b"too many connections; try again", close=True))
            writer.transport.close()
            return
        task = asyncio.ensure_future(self._serve(reader, writer))
        self.counts.live.add(task)
        self.counts.connections += 1

        def done(task: asyncio.Task[None]) -> None:
            self.counts.live.discard(task)
            writer.transport.abort()

        task.add_done_callback(done)

    async def caller(self, writer: asyncio.StreamWriter) -> tuple[PeerCredentials, Caller]:
        """Who holds the other end: the socket and fd tables are read in a thread (file I/O,
        no shared state); the identification proper runs here, on the loop, like the IPC
        server's.  A peer no process of this user can be named for is ``unknown``: refused."""
        # asyncio's TransportSocket: the socket's names without its I/O.
        sock = writer.get_extra_info("socket")
        if sock is None:
            return PeerCredentials(-1, None, None), Caller.unknown(None, "no socket")
        likely = list(self.likely())
        peer = await asyncio.to_thread(tcppeer.peer_of, sock, likely)
        why = unidentified(peer, os.geteuid())
        if why is not None:
            held = release(peer) if peer is not None else PeerCredentials(-1, None, None)
            return held, Caller.unknown(None, why)
        assert peer is not None
        try:
            caller = self.identify(peer)
        finally:
            peer = release(peer)
        return peer, caller

    async def _refuse(self, caller: Caller, attempt: str) -> None:
        """A request refused before it reached the tools: logged, counted, and kept in the
        caller's timeline when the caller is an agent (the audit's 30 s dedupe applies)."""
        self.counts.refused += 1
        if caller.is_agent:
            await self.hub.audit.record(caller, "mcp.http", f"tried to {attempt}")
        else:
            log.warning("MCP over HTTP: refused %s: tried to %s", caller, attempt)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer, caller = await self.caller(writer)
        conn = Connection(writer, peer, 1 << 20, caller)
        # The connection's agent, for all its requests (the person's are refused before).
        session = self.hub.session(conn, caller.agent)
        claimed: set[str] = set()
        first = True
        try:
            while True:
                try:
                    request = await self._read(reader, first)
                except HttpError as exc:
                    writer.write(response(exc.status, str(exc).encode(), close=True))
                    await writer.drain()
                    return
                if request is None:
                    return
                first = False
                status, body, is_json = await self._answer(request, session, conn, claimed)
                close = not request.keep_alive or status == 403
                writer.write(response(status, body, json_body=is_json, close=close))
                await writer.drain()
                if close:
                    return
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as exc:
            log.debug("MCP over HTTP: %s: %s", caller, exc)

    async def _read(self, reader: asyncio.StreamReader, first: bool) -> Request | None:
        """The next request; None when the client closed the connection between two."""
        try:
            # Between requests an agent's connection may idle for hours (keep-alive).
            start = await reader.read(1) if not first else b""
            if not first and not start:
                return None
            head = start + await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT)
            request = parse_head(head[:-4])
            length = body_length(request)
            if length:
                request.body = await asyncio.wait_for(reader.readexactly(length), REQUEST_TIMEOUT)
        except TimeoutError:
            raise HttpError(408, "the request took too long to arrive", close=True) from None
        except asyncio.LimitOverrunError:
            raise HttpError(400, f"a request head over {MAX_HEAD} bytes", close=True) from None
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and not start:
                return None
            raise
        return request

    async def _answer(
        self, request: Request, session: Session, conn: Connection, claimed: set[str]
    ) -> tuple[int, bytes, bool]:
        self.counts.requests += 1
        caller = conn.caller
        refused = admit(request.path, request.headers, self.port, caller)
        if refused is not None:
            if refused.attempt is not None:
                await self._refuse(caller, refused.attempt)
            elif refused.counted:
                self.counts.refused += 1
                log.warning("MCP over HTTP: refused %s: not an agent", caller)
            return refused.status, refused.message.encode(), False
        assert caller.agent is not None
        claim = claim_of(request.path)
        if claim and claim != caller.agent and claim not in claimed:
            claimed.add(claim)
            await self.hub.claimed(caller, claim, f"the URL says /mcp/{claim[:40]}")
        if request.method != "POST":
            return 405, b"volee's MCP endpoint takes POST only (it sends no server messages)", False
        asked = request.headers.get("mcp-protocol-version")
        if asked is not None and asked not in VERSIONS:
            message = f"MCP-Protocol-Version {asked[:20]!r} is not one of {', '.join(VERSIONS)}"
            return 400, message.encode(), False
        try:
            message = protocol.parse(request.body)
        except protocol.RequestError as exc:
            return 400, protocol.encode(protocol.error_reply(None, exc.code, str(exc))), True
        reply = await self.hub.answer(message, session)
        if reply is None:
            return 202, b"", False
        return 200, protocol.encode(reply), True


__all__ = ["McpHttp", "parse_head"]

"""The daemon's MCP side: one server (``mcp/protocol.py``) for every agent's MCP session.

A session reaches the daemon one of two ways:

- over HTTP (``daemon/serving/mcphttp.py``): Claude Code on Linux posts each message to the
  daemon's endpoint on 127.0.0.1, and the daemon knows the caller from the TCP peer;
- through a relay (``mcp/relay.py``, stdlib only, ``-I -S``) that sends
  ``mcp.session`` on the daemon's socket and then relays its stdio: the rest of that
  connection is one session, a JSON-RPC message per line.

Each tool runs the daemon's own methods *on the session's connection*, so whatever the
daemon decides from a connection (its caller) holds for the MCP tools too.

Who the session speaks for: the agent the daemon identified the connection as
(``ipc.caller``, docs/trust-model.md); a relay whose ``VOLEE_AGENT`` says otherwise is
that agent all the same, and the claim is recorded as refused in its timeline.  Only a
relay the daemon takes for the person uses the ``agent`` it sends (never the person or
volee itself): the person may act as one of their agents.  The HTTP endpoint serves
agents only (a browser's page could reach 127.0.0.1, never the person's socket).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, TypedDict

from ...core.model import HUMAN, VOLEE
from ...ipc.caller import Caller, caller_of
from ...ipc.methods import Method
from ...ipc.server import Connection, Handler, Takeover
from ...mcp import protocol
from ...mcp.tools import Session, server
from ..context import Context
from ..errors import Forbidden
from ..params import Parameters, decoder
from .access import Audit

log = logging.getLogger(__name__)

#: An MCP message longer than this closes the session (volee's tools exchange a few KiB).
MAX_LINE = 8 << 20
#: Requests of one line session answered at once; past it a request waits its turn.
MAX_IN_FLIGHT = 16
_CHUNK = 64 * 1024


async def lines_of(rest: bytes, reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The non-empty lines of ``rest`` followed by the reader's bytes, until EOF."""
    buf = bytearray(rest)
    while True:
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            if line.strip():
                yield line
        if len(buf) > MAX_LINE:
            log.warning("an MCP relay sent a line over %d bytes; closing its session", MAX_LINE)
            return
        data = await reader.read(_CHUNK)
        if not data:
            return
        buf += data


class SessionParams(Parameters, frozen=True, kw_only=True):
    """``mcp.session``: the agent the relay's environment names (believed of the person only)."""

    agent: str | None = None


class SessionOpened(TypedDict):
    """``mcp.session``: the reply after which the connection is one MCP session."""

    session: bool


class McpHub:
    """The MCP server of the daemon: ``mcp.session`` for relays, ``answer`` for HTTP."""

    def __init__(self, ctx: Context, api: Handler, audit: Audit) -> None:
        self.service = ctx.service
        self.api = api
        self.audit = audit
        self.server = server()
        self.live = 0
        self.opened = 0
        ctx.methods.add(Method.MCP_SESSION, self.api_session, decoder(SessionParams))
        ctx.status.add("mcp", self.status)

    def status(self) -> dict[str, int]:
        return {"sessions": self.live, "opened": self.opened}

    async def api_session(self, conn: Connection, params: SessionParams) -> Takeover[SessionOpened]:
        agent = params.agent
        why = None
        caller = caller_of(conn)
        if not caller.is_person:
            # The daemon knows whose relay this is; what its environment says does not count.
            assert caller.agent is not None
            if agent not in (None, caller.agent):
                await self.claimed(caller, agent, f"VOLEE_AGENT={agent}")
            agent = caller.agent
        elif agent in (HUMAN, VOLEE):
            why = (
                f"VOLEE_AGENT={agent} is not an agent: volee's MCP tools speak only for the "
                "agent that runs them, never for the person or volee"
            )
            agent = None

        async def serve(conn: Connection, rest: bytes, reader: asyncio.StreamReader) -> None:
            await self.serve(conn, rest, reader, agent or None, why)

        return Takeover({"session": True}, serve)

    async def claimed(self, caller: Caller, claim: str | None, where: str) -> None:
        """Record, in the caller's timeline, an MCP session that claimed another identity."""
        assert caller.agent is not None
        what = {HUMAN: "the person", VOLEE: "volee"}.get(claim or "", f"agent {claim}")
        name = self.service.registry.name_of(caller.agent) or caller.agent
        refused = Forbidden(
            f"use volee's MCP tools as {what} ({where})",
            f"forbidden: {where}, but this session is agent {name}'s",
        )
        await self.audit.refused(caller, Method.MCP_SESSION, refused)

    def session(self, conn: Connection, agent: str | None, why: str | None = None) -> Session:
        """An MCP session speaking for ``agent``, calling the daemon as ``conn``."""

        async def call(method: str, params: dict[str, Any]) -> Any:
            return await self.api(conn, method, params)

        return Session(agent, call) if why is None else Session(agent, call, why)

    async def answer(self, message: Any, session: Session) -> dict[str, Any] | None:
        """The server's reply to one MCP message of ``session``."""
        return await self.server.handle(message, session)

    async def serve(
        self,
        conn: Connection,
        rest: bytes,
        reader: asyncio.StreamReader,
        agent: str | None,
        why: str | None,
    ) -> None:
        """A relay's session: a message per line each way, requests answered as they end."""
        session = self.session(conn, agent, why)
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        running: set[asyncio.Task[None]] = set()

        async def one(line: bytes) -> None:
            try:
                try:
                    reply = await self.answer(protocol.parse(line), session)
                except protocol.RequestError as exc:
                    reply = protocol.error_reply(None, exc.code, str(exc))
                if reply is not None:
                    await conn.write_raw(protocol.encode(reply) + b"\n")
            except (ConnectionError, OSError) as exc:
                log.debug("MCP session of %s: could not answer: %s", agent, exc)
            finally:
                slots.release()

        self.live += 1
        self.opened += 1
        try:
            async for line in lines_of(rest, reader):
                await slots.acquire()
                task = asyncio.ensure_future(one(line))
                running.add(task)
                task.add_done_callback(running.discard)
        except (ConnectionError, OSError) as exc:
            log.debug("MCP session of %s ended: %s", agent, exc)
        finally:
            self.live -= 1
            for task in list(running):
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

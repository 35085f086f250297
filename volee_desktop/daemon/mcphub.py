"""The daemon's MCP side: one ``mcp`` SDK server for the sessions every agent's relay opens.

An agent's harness starts ``mcp/relay.py`` (stdlib only, ``-I -S``), which sends
``mcp.session`` and then relays its stdio: the rest of that connection is one MCP
session, served by ``mcp/server.py``'s tools.  Each tool runs the daemon's own methods
*on the relay's connection*, so whatever the daemon decides from a connection (its
caller) holds for the MCP tools too.  The SDK is imported at the first session (it
costs about 40 MB and half a second of CPU), in a thread.

Who the session speaks for: the agent the daemon identified the relay's connection as
(``ipc.caller``, docs/trust-model.md); a relay whose ``VOLEE_AGENT`` says otherwise is
that agent all the same, and the claim is recorded as refused in its timeline.  Only a
relay the daemon takes for the person uses the ``agent`` it sends (never the person or
volee itself): the person may act as one of their agents.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from ..core import events as ev
from ..core.model import HUMAN, VOLEE, Harness
from ..ipc.caller import caller_of
from ..ipc.server import Connection, Handler, Takeover
from .access import Audit
from .context import Context
from .errors import Forbidden
from .params import text

log = logging.getLogger(__name__)

#: An MCP message longer than this closes the session (volee's tools exchange a few KiB).
MAX_LINE = 8 << 20
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


class McpHub:
    """``mcp.session``: the sessions of the agents' relays."""

    def __init__(self, ctx: Context, api: Handler, audit: Audit) -> None:
        self.service = ctx.service
        self.tasks = ctx.tasks
        self.api = api
        self.audit = audit
        self.live = 0
        self.opened = 0
        self._loading: asyncio.Future[Any] | None = None
        ctx.methods.add("mcp.session", self.api_session)
        ctx.status.add("mcp", self.status)
        self.service.listen(self._on_event)

    def _on_event(self, _seq: int, event: ev.Event) -> None:
        # A Claude Code agent starting will open a session in a moment: load the SDK now, so
        # that its tools are there by the time it asks (Claude Code lists them at start).
        if isinstance(event, ev.HostStarted) and self._loading is None:
            agent = self.service.registry.agents.get(event.agent)
            if agent is not None and agent.harness is Harness.CLAUDE:
                self.tasks.spawn(self.sdk(), "mcp-sdk")

    async def sdk(self) -> Any:
        """``mcp/server.py`` (with the SDK), imported once, in a thread."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(
                asyncio.to_thread(importlib.import_module, "volee_desktop.mcp.server")
            )
        return await asyncio.shield(self._loading)

    def status(self) -> dict[str, int]:
        return {"sessions": self.live, "opened": self.opened}

    async def api_session(self, conn: Connection, params: dict[str, Any]) -> Any:
        agent = text(params, "agent", required=False)
        why = None
        caller = caller_of(conn)
        if not caller.is_person:
            # The daemon knows whose relay this is; what its environment says does not count.
            assert caller.agent is not None
            if agent not in (None, caller.agent):
                what = {HUMAN: "the person", VOLEE: "volee"}.get(agent, f"agent {agent}")
                name = self.service.registry.name_of(caller.agent) or caller.agent
                refused = Forbidden(
                    f"use volee's MCP tools as {what} (VOLEE_AGENT={agent})",
                    f"forbidden: VOLEE_AGENT={agent}, but this relay is agent {name}'s",
                )
                await self.audit.refused(caller, "mcp.session", refused)
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

    async def serve(
        self,
        conn: Connection,
        rest: bytes,
        reader: asyncio.StreamReader,
        agent: str | None,
        why: str | None,
    ) -> None:
        module = await self.sdk()

        async def call(method: str, params: dict[str, Any]) -> Any:
            return await self.api(conn, method, params)

        session = module.Session(agent, call) if why is None else module.Session(agent, call, why)
        self.live += 1
        self.opened += 1
        try:
            await module.serve(session, lines_of(rest, reader), conn.write_raw)
        except (ConnectionError, OSError) as exc:
            log.debug("MCP session of %s ended: %s", agent, exc)
        finally:
            self.live -= 1

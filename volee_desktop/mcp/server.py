"""volee's MCP tools, served by the daemon for every agent (one ``mcp`` SDK server).

Each agent's harness starts a relay (``mcp/relay.py``, stdlib only) that hands its MCP
session to the daemon over the socket; the daemon serves it here with the session's
agent and connection in ``SESSION``.  Each tool is one request to the daemon's own method
table, on the relay's connection, so the daemon enforces the rules (routing, who may
present a report or spawn a worker) exactly as for any client; its refusal becomes the
tool's error text, which the model reads.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server

from ..ipc.protocol import IpcError

INSTRUCTIONS = (
    "volee supervises the coding agents of this machine. These tools let you talk to the "
    "human and to other agents of your mission, report findings, present your report for "
    "approval (coordinators), and spawn and list workers (coordinators)."
)


class Error(Exception):
    """Root of the mcp package's errors."""


Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Session:
    """One agent's MCP session: who it is (None: not known) and how to ask the daemon."""

    agent: str | None
    call: Call
    why_unknown: str = (
        "VOLEE_AGENT is not set: volee's MCP tools work inside agents volee launched "
        "(volee spawn, volee mission create)"
    )


SESSION: contextvars.ContextVar[Session] = contextvars.ContextVar("volee_mcp_session")


def agent_id() -> str:
    """This session's agent (a ToolError when it is not one volee launched)."""
    session = SESSION.get()
    if not session.agent:
        raise ToolError(session.why_unknown)
    return session.agent


async def ask(method: str, **params: Any) -> Any:
    """One request to the daemon's methods, as the session's connection."""
    clean = {k: v for k, v in params.items() if v is not None}
    try:
        return await SESSION.get().call(method, clean)
    except IpcError as exc:
        raise ToolError(str(exc)) from exc


def _brief(message: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "id",
        "sender",
        "sender_name",
        "kind",
        "body",
        "reply_to",
        "references",
        "options",
        "at",
    )
    return {k: message.get(k) for k in keep}


def build_server() -> MCPServer:
    """The server and its tools."""
    server: MCPServer = MCPServer("volee", instructions=INSTRUCTIONS)

    @server.tool()
    async def post_message(
        to: list[str],
        body: str,
        kind: str = "text",
        reply_to: str | None = None,
        references: list[str] | None = None,
    ) -> dict[str, Any]:
        """Send a message to "human" or to agents (ids or names) you may write to.

        You may write to people, to members of your mission, your parent, your children,
        your mission's coordinator and the agent that requested your mission.  kind is
        text, question, answer, report or notice; reply_to is a message id.
        """
        result: dict[str, Any] = await ask(
            "messages.post",
            sender=agent_id(),
            to=to,
            body=body,
            kind=kind,
            reply_to=reply_to,
            references=references,
        )
        return result

    @server.tool()
    async def read_messages(unread_only: bool = True) -> list[dict[str, Any]]:
        """The messages sent to you (unread ones by default); they are marked read."""
        messages = await ask("messages.read", agent=agent_id(), unread_only=unread_only)
        return [_brief(m) for m in messages]

    @server.tool()
    async def report(body: str) -> dict[str, Any]:
        """Deliver your findings (analysis missions): a report to your mission's coordinator."""
        me = await ask("agents.get", agent=agent_id())
        mission = me.get("mission")
        if not mission:
            raise ToolError("you are not part of a mission: join one first (join_mission)")
        view = await ask("missions.show", mission=mission)
        to = view.get("coordinator") or "human"
        if to == me["id"]:
            to = "human"
        result: dict[str, Any] = await ask(
            "messages.post", sender=me["id"], to=[to], body=body, kind="report"
        )
        return result

    @server.tool()
    async def present_report(
        body: str, options: list[str] | None = None, approving: str | None = None
    ) -> dict[str, Any]:
        """Coordinators: present your report to the human, once every worker delivered.

        It is a question with options (default: approve, revise); the approving option,
        chosen by the human, makes volee merge every worker's branch and close the mission.
        """
        result: dict[str, Any] = await ask(
            "missions.request_approval",
            agent=agent_id(),
            body=body,
            options=options,
            approving=approving,
        )
        return result

    @server.tool()
    async def spawn_worker(
        task: str, name: str | None = None, repo: str | None = None, harness: str | None = None
    ) -> dict[str, Any]:
        """Coordinators: start a worker of your mission on a task, in its own worktree."""
        view = await ask(
            "missions.spawn_worker",
            agent=agent_id(),
            prompt=task,
            name=name,
            repo=repo,
            harness=harness,
        )
        return {k: view.get(k) for k in ("id", "name", "state", "worktree", "branch")}

    @server.tool()
    async def list_workers() -> list[dict[str, Any]]:
        """Coordinators: your mission's workers, their state and volee's verdict on each."""
        workers = await ask("missions.workers", agent=agent_id())
        keep = ("id", "name", "state", "detail", "branch", "worktree", "verdict", "verdict_reason")
        return [{k: w.get(k) for k in keep} for w in workers]

    @server.tool()
    async def invite_to_mission(agent: str) -> dict[str, Any]:
        """Coordinators: invite an agent (id or name) to your mission; it may then join it."""
        me = await ask("agents.get", agent=agent_id())
        if not me.get("mission"):
            raise ToolError("you are not part of a mission: only its coordinator invites")
        view = await ask("missions.invite", mission=me["mission"], agent=agent)
        return {"mission": view["id"], "invited": view.get("invited", [])}

    @server.tool()
    async def join_mission(mission: str) -> dict[str, Any]:
        """Take part in a mission (its id): you can then write to its members."""
        view = await ask("missions.join", agent=agent_id(), mission=mission)
        return {"agent": view["id"], "mission": view["mission"]}

    return server


_SERVER: MCPServer | None = None


def server() -> MCPServer:
    """The one server of the daemon (built at the first session)."""
    global _SERVER
    if _SERVER is None:
        _SERVER = build_server()
    return _SERVER


class _Lines:
    """The session's incoming lines as the text file ``stdio_server`` reads."""

    def __init__(self, lines: AsyncIterator[bytes]) -> None:
        self._lines = lines

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._lines.__anext__()
        return line.decode("utf-8", "replace")


class _Out:
    """The session's outgoing side as the text file ``stdio_server`` writes."""

    def __init__(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        self._write = write

    async def write(self, text: str) -> None:
        await self._write(text.encode())

    async def flush(self) -> None:
        return None


async def serve(
    session: Session, lines: AsyncIterator[bytes], write: Callable[[bytes], Awaitable[None]]
) -> None:
    """Serve one MCP session (JSON-RPC lines in and out) until its lines end."""
    SESSION.set(session)
    low = server()._lowlevel_server
    stdin = cast(anyio.AsyncFile[str], _Lines(lines))
    stdout = cast(anyio.AsyncFile[str], _Out(write))
    async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
        await low.run(read_stream, write_stream, low.create_initialization_options())

"""``volee mcp``: the MCP server (stdio) an agent's harness starts; it forwards to the daemon.

The agent is known from ``VOLEE_AGENT`` (set by volee in every agent it
launches).  Each tool is one IPC request to the daemon; the daemon enforces the
rules (routing, who may present a report or spawn a worker) and its refusal
becomes the tool's error text, which the model reads.  Requests block, so they
run in a worker thread.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ..ipc.client import Client
from ..ipc.protocol import DaemonUnavailable, IpcError
from ..paths import dirs

INSTRUCTIONS = (
    "volee supervises the coding agents of this machine. These tools let you talk to the "
    "human and to other agents of your mission, report findings, present your report for "
    "approval (coordinators), and spawn and list workers (coordinators)."
)
CALL_TIMEOUT = 120.0


class Error(Exception):
    """Root of the mcp package's errors."""


def agent_id() -> str:
    """This server's agent, from VOLEE_AGENT (a ToolError when volee did not launch it)."""
    agent = os.environ.get("VOLEE_AGENT", "")
    if not agent:
        raise ToolError(
            "VOLEE_AGENT is not set: volee's MCP tools work inside agents volee launched "
            "(volee spawn, volee mission create)"
        )
    return agent


def _request(method: str, params: dict[str, Any]) -> Any:
    try:
        with Client.connect(dirs().socket, timeout=CALL_TIMEOUT) as client:
            return client.request(method, params)
    except IpcError as exc:
        raise ToolError(str(exc)) from exc
    except DaemonUnavailable as exc:
        raise ToolError(f"the volee daemon is not reachable: {exc}") from exc


async def ask(method: str, **params: Any) -> Any:
    """One daemon request, off the event loop."""
    clean = {k: v for k, v in params.items() if v is not None}
    return await anyio.to_thread.run_sync(_request, method, clean)


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
    async def join_mission(mission: str) -> dict[str, Any]:
        """Take part in a mission (its id): you can then write to its members."""
        view = await ask("missions.join", agent=agent_id(), mission=mission)
        return {"agent": view["id"], "mission": view["mission"]}

    return server


def run() -> int:
    """Serve on stdio until the client hangs up."""
    build_server().run("stdio")
    return 0

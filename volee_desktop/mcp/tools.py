"""volee's MCP tools, served by the daemon for every agent (``mcp/protocol.py``).

An agent's MCP session reaches the daemon either over HTTP (Claude Code on Linux:
``daemon/serving/mcphttp.py``) or through a relay on the daemon's socket (``mcp/relay.py``);
either way the daemon serves it here with the session's agent and a way to call its own
methods *as that session's connection*, so the daemon enforces the rules (routing, who
may present a report or spawn a worker) exactly as for any client.  Its refusal becomes
the tool's error text, which the model reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ..ipc.methods import Method
from ..ipc.protocol import IpcError
from .protocol import Param, Server, Tool, ToolError

INSTRUCTIONS = (
    "volee supervises the coding agents of this machine. These tools let you talk to the "
    "human and to other agents of your mission, report findings, present your report for "
    "approval (coordinators), and spawn and list workers (coordinators)."
)

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

    def agent_id(self) -> str:
        """This session's agent (a ToolError when it is not one volee launched)."""
        if not self.agent:
            raise ToolError(self.why_unknown)
        return self.agent

    async def ask(self, method: str, **params: Any) -> Any:
        """One request to the daemon's methods, as the session's connection."""
        clean = {k: v for k, v in params.items() if v is not None}
        try:
            return await self.call(method, clean)
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


async def post_message(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await s.ask(Method.MESSAGES_POST, sender=s.agent_id(), **a)
    return result


async def read_messages(s: Session, a: dict[str, Any]) -> list[dict[str, Any]]:
    messages = await s.ask(Method.MESSAGES_READ, agent=s.agent_id(), unread_only=a["unread_only"])
    return [_brief(m) for m in messages]


async def report(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    me = await s.ask(Method.AGENTS_GET, agent=s.agent_id())
    mission = me.get("mission")
    if not mission:
        raise ToolError("you are not part of a mission: join one first (join_mission)")
    view = await s.ask(Method.MISSIONS_SHOW, mission=mission)
    to = view.get("coordinator") or "human"
    if to == me["id"]:
        to = "human"
    result: dict[str, Any] = await s.ask(
        Method.MESSAGES_POST, sender=me["id"], to=[to], body=a["body"], kind="report"
    )
    return result


async def present_report(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await s.ask(Method.MISSIONS_REQUEST_APPROVAL, agent=s.agent_id(), **a)
    return result


async def spawn_worker(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    view = await s.ask(
        Method.MISSIONS_SPAWN_WORKER,
        agent=s.agent_id(),
        prompt=a["task"],
        name=a["name"],
        repo=a["repo"],
        harness=a["harness"],
    )
    return {k: view.get(k) for k in ("id", "name", "state", "worktree", "branch")}


async def list_workers(s: Session, _a: dict[str, Any]) -> list[dict[str, Any]]:
    workers = await s.ask(Method.MISSIONS_WORKERS, agent=s.agent_id())
    keep = ("id", "name", "state", "detail", "branch", "worktree", "verdict", "verdict_reason")
    return [{k: w.get(k) for k in keep} for w in workers]


async def invite_to_mission(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    me = await s.ask(Method.AGENTS_GET, agent=s.agent_id())
    if not me.get("mission"):
        raise ToolError("you are not part of a mission: only its coordinator invites")
    view = await s.ask(Method.MISSIONS_INVITE, mission=me["mission"], agent=a["agent"])
    return {"mission": view["id"], "invited": view.get("invited", [])}


async def join_mission(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    view = await s.ask(Method.MISSIONS_JOIN, agent=s.agent_id(), mission=a["mission"])
    return {"agent": view["id"], "mission": view["mission"]}


def _text(name: str, description: str = "", *, required: bool = False) -> Param:
    return Param(name, "string", description, required=required)


TOOLS = [
    Tool(
        "post_message",
        'Send a message to "human" or to agents (ids or names) you may write to.\n\n'
        "You may write to people, to members of your mission, your parent, your children, "
        "your mission's coordinator and the agent that requested your mission.  kind is "
        "text, question, answer, report or notice; reply_to is a message id.",
        post_message,
        (
            Param("to", "array", 'recipients: "human", agent ids or names', required=True),
            _text("body", required=True),
            Param("kind", "string", "text, question, answer, report or notice", default="text"),
            _text("reply_to", "the id of the message this answers"),
            Param("references", "array", "ids of messages this refers to"),
        ),
    ),
    Tool(
        "read_messages",
        "The messages sent to you (unread ones by default); they are marked read.",
        read_messages,
        (Param("unread_only", "boolean", default=True),),
    ),
    Tool(
        "report",
        "Deliver your findings (analysis missions): a report to your mission's coordinator.",
        report,
        (_text("body", required=True),),
    ),
    Tool(
        "present_report",
        "Coordinators: present your report to the human, once every worker delivered.\n\n"
        "It is a question with options (default: approve, revise); the approving option, "
        "chosen by the human, makes volee merge every worker's branch and close the mission.",
        present_report,
        (
            _text("body", required=True),
            Param("options", "array", "the answers the human may choose"),
            _text("approving", "the option that approves (merges and closes)"),
        ),
    ),
    Tool(
        "spawn_worker",
        "Coordinators: start a worker of your mission on a task, in its own worktree.",
        spawn_worker,
        (
            _text("task", required=True),
            _text("name"),
            _text("repo", "which of the mission's repositories (default: the first)"),
            _text("harness", "claude, codex, pi or generic"),
        ),
    ),
    Tool(
        "list_workers",
        "Coordinators: your mission's workers, their state and volee's verdict on each.",
        list_workers,
    ),
    Tool(
        "invite_to_mission",
        "Coordinators: invite an agent (id or name) to your mission; it may then join it.",
        invite_to_mission,
        (_text("agent", required=True),),
    ),
    Tool(
        "join_mission",
        "Take part in a mission (its id): you can then write to its members.",
        join_mission,
        (_text("mission", required=True),),
    ),
]


def server() -> Server:
    """volee's MCP server: its tools, its name and what it tells the model it is for."""
    return Server.of("volee", __version__, INSTRUCTIONS, TOOLS)


__all__ = ["INSTRUCTIONS", "TOOLS", "Session", "server"]

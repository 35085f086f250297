"""volee's MCP server through a real MCP client session (the SDK's stdio client) and daemon."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.daemon.gitrepos import make_repo
from tests.daemon.helpers import close_stopping_agents
from tests.daemon.test_missions import call
from tests.polling import until
from volee_desktop.core.model import MissionStatus
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.main import Daemon
from volee_desktop.paths import dirs

pytestmark = pytest.mark.e2e

#: volee's MCP tools, in the order tools/list gives them.
TOOL_NAMES = [
    "post_message",
    "read_messages",
    "report",
    "present_report",
    "spawn_worker",
    "list_workers",
    "invite_to_mission",
    "join_mission",
]


@pytest.fixture
def root(fake_claude: Path) -> Path:
    return fake_claude


@pytest.fixture
async def daemon(root: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await close_stopping_agents(d)


@asynccontextmanager
async def session_as(agent: str | None) -> AsyncIterator[ClientSession]:
    env = {"VOLEE_HOME": os.environ["VOLEE_HOME"]}
    if agent:
        env["VOLEE_AGENT"] = agent
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "volee_desktop.cli", "mcp"], env=env
    )
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def tool(session: ClientSession, tool_name: str, /, **arguments: Any) -> Any:
    result = await session.call_tool(tool_name, arguments)
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(cast(Any, result.content[0]).text)


async def tool_error(session: ClientSession, tool_name: str, /, **arguments: Any) -> str:
    result = await session.call_tool(tool_name, arguments)
    assert result.is_error
    return cast(str, cast(Any, result.content[0]).text)


async def test_the_tools_drive_an_analysis_mission_end_to_end(root: Path, daemon: Daemon) -> None:
    folder = root / "notes"
    folder.mkdir()
    view = await call(
        daemon, "missions.create", goal="find issues", kind="analysis", repositories=[str(folder)]
    )
    mission, coordinator = view["id"], view["coordinator"]
    registry = daemon.service.registry

    async with session_as(coordinator) as coord:
        names = [t.name for t in (await coord.list_tools()).tools]
        assert names == TOOL_NAMES
        posted = await tool(coord, "post_message", to=["human"], body="starting")
        assert registry.messages[posted["message"]].sender == coordinator
        spawned = await tool(coord, "spawn_worker", task="look at the notes", name="looker")
        worker = spawned["id"]
        assert registry.agents[worker].parent == coordinator
        assert registry.agents[worker].mission == mission
        # Not yet reporting: a report now is refused, and the tool says why.
        said = await tool_error(coord, "present_report", body="too early")
        assert "reporting" in said

    await until(
        lambda: registry.agents[worker].state is AgentState.DONE,
        what="the worker's turn",
        timeout=20,
    )
    async with session_as(worker) as me:
        with_reason = await tool_error(me, "spawn_worker", task="more")
        assert "only the coordinator" in with_reason
        await tool(me, "report", body="two issues in notes")
    await until(
        lambda: registry.missions[mission].status is MissionStatus.REPORTING,
        what="reporting",
        timeout=20,
    )

    async with session_as(coordinator) as coord:
        workers = await tool(coord, "list_workers")
        assert [(w["name"], w["verdict"]) for w in workers] == [("looker", "delivered")]
        unread = await tool(coord, "read_messages")
        assert any(m["kind"] == "report" and "two issues" in m["body"] for m in unread)
        assert await tool(coord, "read_messages") == []
        presented = await tool(
            coord, "present_report", body="two issues", options=["ship", "redo"], approving="ship"
        )
    m = registry.missions[mission]
    assert m.status is MissionStatus.AWAITING_APPROVAL
    assert m.report == presented["message"]
    assert registry.messages[m.report].approving == "ship"


async def test_routing_refusals_reach_the_model_and_join_mission_opens_the_way(
    root: Path, daemon: Daemon
) -> None:
    repo = make_repo(root, remote=False)
    view = await call(daemon, "missions.create", goal="g", kind="change", repositories=[str(repo)])
    coordinator = view["coordinator"]
    stranger = await call(
        daemon, "agents.spawn", harness="claude", prompt="hi", cwd=str(root), name="stranger"
    )
    async with session_as(stranger["id"]) as me:
        said = await tool_error(me, "post_message", to=[coordinator], body="hello")
        assert "may not write" in said
        # Seed 002: only an invited agent joins, by itself; its coordinator invites it.
        said = await tool_error(me, "join_mission", mission=view["id"])
        assert "was not invited" in said
        async with session_as(coordinator) as coord:
            invited = await tool(coord, "invite_to_mission", agent="stranger")
            assert invited["invited"] == [stranger["id"]]
        joined = await tool(me, "join_mission", mission=view["id"])
        assert joined["mission"] == view["id"]
        await tool(me, "post_message", to=[coordinator], body="hello")


async def test_without_volee_agent_the_tools_say_so(daemon: Daemon) -> None:
    async with session_as(None) as anon:
        said = await tool_error(anon, "read_messages")
        assert "VOLEE_AGENT" in said

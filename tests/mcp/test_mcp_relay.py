"""The MCP relay (``mcp/relay.py``) as agents run it (``-I -S``), through the real MCP client.

The daemon serves every agent's MCP session (``daemon/serving/mcphub.py``); the relay only moves
lines, replays the handshake when the daemon comes back, and answers what a lost
connection left unanswered.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.daemon.test_missions import call
from tests.mcp.test_mcp_server import tool, tool_error
from volee_desktop.daemon.main import Daemon
from volee_desktop.mcp import relay
from volee_desktop.paths import dirs

pytestmark = pytest.mark.e2e


@pytest.fixture
async def daemon(fake_claude: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await d.close()


@asynccontextmanager
async def lean_session(agent: str) -> AsyncIterator[ClientSession]:
    """A session through the relay exactly as the daemon configures it for Claude Code."""
    env = {"VOLEE_SOCKET": str(dirs().socket), "VOLEE_AGENT": agent}
    params = StdioServerParameters(
        command=sys.executable, args=["-I", "-S", relay.__file__], env=env
    )
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def an_agent(d: Daemon, root: Path, name: str) -> str:
    view = await call(d, "agents.spawn", harness="claude", prompt="hi", cwd=str(root), name=name)
    return str(view["id"])


async def test_the_lean_relay_serves_the_tools_for_its_agent(
    fake_claude: Path, daemon: Daemon
) -> None:
    me = await an_agent(daemon, fake_claude, "writer")
    async with lean_session(me) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"post_message", "read_messages", "report"} <= names
        posted = await tool(session, "post_message", to=["human"], body="from the relay")
        message = daemon.service.registry.messages[posted["message"]]
        assert (message.sender, message.body) == (me, "from the relay")
    assert daemon.mcp.status()["opened"] == 1


async def test_a_daemon_restart_keeps_the_session_and_the_gap_is_an_error(
    fake_claude: Path, daemon: Daemon
) -> None:
    me = await an_agent(daemon, fake_claude, "survivor")
    async with lean_session(me) as session:
        assert await tool(session, "read_messages") == []
        await daemon.close()
        said = await tool_error(session, "read_messages")
        assert "not reachable" in said
        again = await Daemon.start(dirs())
        try:
            # The relay connects again and replays the handshake: the same session works.
            await tool(session, "post_message", to=["human"], body="still here")
            assert any(m.body == "still here" for m in again.service.registry.messages.values())
        finally:
            await again.close()


async def test_the_relay_never_speaks_for_the_person(daemon: Daemon) -> None:
    async with lean_session("human") as session:
        said = await tool_error(session, "post_message", to=["human"], body="as you")
        assert "never for the person" in said
    assert not daemon.service.registry.messages


def test_the_relay_runs_without_json_socket_asyncio_or_the_package(tmp_path: Path) -> None:
    """As agents run it (-I -S) it loads only C halves and a few small modules."""
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", relay.__file__],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
        env={"VOLEE_SOCKET": str(tmp_path / "nobody.sock"), "VOLEE_AGENT": "ag_x"},
    )
    assert result.returncode == 0, result.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert {"_json", "select"} <= imported  # the probe sees imports at all
    heavy = {"json", "socket", "asyncio", "typing", "re", "enum", "mcp", "volee_desktop"}
    assert imported.isdisjoint(heavy)


def test_a_request_while_the_daemon_is_away_is_answered_with_an_error(tmp_path: Path) -> None:
    """No daemon: ``initialize`` waits a moment, then every request gets an error answer."""
    lines = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}\n'
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}\n'
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", relay.__file__],
        input=lines,
        capture_output=True,
        timeout=30,
        env={"VOLEE_SOCKET": str(tmp_path / "nobody.sock"), "VOLEE_AGENT": "ag_x"},
    )
    assert result.returncode == 0, result.stderr
    answers = [relay.parse(line) for line in result.stdout.splitlines()]
    assert len(answers) == 1  # the notification has no answer
    assert answers[0]["id"] == 7
    assert "not reachable" in answers[0]["error"]["message"]

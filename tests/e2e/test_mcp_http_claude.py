"""The REAL Claude Code uses volee's MCP tools over HTTP: no relay process, and a daemon
killed and started again serves its next call on the same port (daemon/serving/mcphttp.py)."""

from __future__ import annotations

import json

import psutil
import pytest

from tests.e2e.recovery_rig import Rig
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import claude_env
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(120)]


@pytest.fixture
def rig(claude_rig: Rig) -> Rig:
    return claude_rig


def posted(rig: Rig, name: str) -> list[str]:
    bodies = []
    for entry in rig.timeline(name):
        if entry.get("type") == "message-posted":
            bodies.append(entry.get("body") or entry.get("message", {}).get("body"))
    return bodies


def command_lines(processes: list[psutil.Process]) -> list[str]:
    """The command lines of those still there (Claude Code's own children come and go)."""
    lines = []
    for process in processes:
        try:
            lines.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return lines


def tool_call(body: str) -> str:
    return f"MCP: mcp__volee__post_message {json.dumps({'to': ['human'], 'body': body})}"


def test_claude_code_posts_over_http_and_goes_on_after_the_daemon_is_killed(
    rig: Rig, real_fake_anthropic: FakeAnthropic
) -> None:
    harness = claude_env(rig.root / "h", real_fake_anthropic.port, rig.project)
    harness.pop("VOLEE_HOME", None)
    rig.env.update(harness)
    agent = rig.spawn(f"say hello\n{tool_call('first')}", name="poster")
    config = json.loads((rig.home / "state" / "agents" / agent / "mcp.json").read_text())
    url = config["mcpServers"]["volee"]["url"]
    port = int((rig.home / "state" / "mcp-http.port").read_text())
    assert url == f"http://127.0.0.1:{port}/mcp/{agent}"
    wait_until(lambda: "first" in posted(rig, "poster"), 60, "the first message through MCP")
    record = rig.record(agent)
    lines = command_lines(psutil.Process(record["host_pid"]).children(recursive=True))
    assert lines, "the host runs Claude Code"
    assert not [line for line in lines if "relay" in line or "volee_desktop.cli mcp" in line]
    rig.wait_state("poster", "done", timeout=30)

    rig.kill_daemon()
    rig.volee("ls")  # any command but `daemon status` starts it again
    status = json.loads(rig.volee("daemon", "status", "--json"))
    assert status["extra"]["mcp_http"]["url"] == f"http://127.0.0.1:{port}/mcp/"
    rig.volee("send", "poster", tool_call("second"))
    wait_until(lambda: "second" in posted(rig, "poster"), 60, "the message after the restart")

"""volee with the REAL Claude Code (against the fake Anthropic API): spawn, permission, stop.

The daemon runs as a subprocess with ``VOLEE_CLAUDE_BIN`` and the throwaway HOME in its
environment; every command is the real ``volee`` CLI; ``volee spawn`` passes its env
allow-list (the fake API's URL and key) to the agent.  Waiting is on ``volee ls --json``.
"""

from __future__ import annotations

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.harness_env import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(60)]


@pytest.fixture
def volee(claude_volee: Volee) -> Volee:
    return claude_volee


def test_spawn_runs_the_tool_then_stop_holds_and_a_restart_adopts(
    volee: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    agent_id = volee.cli(
        "spawn",
        "--cwd",
        str(project),
        "--name",
        "c1",
        "--permission-mode",
        "bypassPermissions",
        "--",
        "RUN: echo hi > out.txt",
    ).stdout.strip()

    agent = volee.wait_state("c1", "done", timeout=30)

    assert (project / "out.txt").read_text() == "hi\n"
    assert agent["id"] == agent_id
    assert agent["activity"] == "Bash: echo hi > out.txt"
    record = volee.record(agent_id)
    assert agent["session_id"] == record["argv"][record["argv"].index("--session-id") + 1]
    timeline = volee.cli("timeline", "c1").stdout
    assert "working" in timeline
    assert "done" in timeline

    # The daemon stops and starts again: the host lives on and is taken back, not restarted.
    volee.stop()
    volee.start()
    adopted = volee.agent("c1")
    assert volee.record(agent_id)["host_pid"] == record["host_pid"]
    assert adopted["pid"] == record["program_pid"]
    assert f"host {record['host_pid']} re-adopted" in volee.cli("timeline", "c1").stdout

    # Still the same program: a message is a new turn in it.
    volee.cli("send", "c1", "RUN: echo again > again.txt")
    volee.wait(
        "c1",
        lambda a: a["state"] == "done" and a["activity"] == "Bash: echo again > again.txt",
        "the second turn",
        timeout=30,
    )
    assert volee.record(agent_id)["program_pid"] == record["program_pid"]

    stopped = volee.cli("stop", "c1").stdout
    assert "held" in stopped
    agent = volee.wait_state("c1", "stopped", timeout=15)
    assert agent["held"] == "stopped by you"
    assert volee.record(agent_id)["exit"] is not None

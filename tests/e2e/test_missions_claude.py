"""A mission whose coordinator is the REAL Claude Code (fake model API) calling volee MCP tools.

The fake model turns ``MCP: <tool> <json>`` lines into tool calls: the coordinator's brief
carries a ``post_message`` call, and a later message a ``present_report`` call.  The worker
is a plain command that reports through IPC; the human answers with ``volee mission answer``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.recovery_rig import Rig
from tests.fakes.fake_anthropic import FakeAnthropic, last_user_message
from tests.fakes.harness_env import claude_env
from tests.polling import wait_until
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(120)]


@pytest.fixture
def rig(claude_rig: Rig) -> Rig:
    return claude_rig


def show(rig: Rig, mission: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(rig.volee("mission", "show", mission, "--json"))
    return data


def test_a_real_claude_coordinator_posts_and_presents_its_report_through_mcp(
    rig: Rig, real_fake_anthropic: FakeAnthropic
) -> None:
    server = real_fake_anthropic
    # Claude Code's environment, but not the sandbox's VOLEE_HOME: the daemon, its hosts and
    # `volee mcp` must run under the rig's home, which rig.close() stops (they outlived the
    # test when the daemon ran under the other one).
    harness = claude_env(rig.root / "h", server.port, rig.project)
    harness.pop("VOLEE_HOME", None)
    rig.env.update(harness)
    post = json.dumps({"to": ["human"], "body": "hello from the coordinator"})
    goal = f"survey the project\nMCP: mcp__volee__post_message {post}"
    mission = rig.volee(
        "mission", "create", "--goal", goal, "--kind", "analysis", "--repo", str(rig.project)
    ).strip()
    view = show(rig, mission)
    coordinator = view["coordinator"]
    wait_until(
        lambda: any(
            m["sender"] == coordinator and m["body"] == "hello from the coordinator"
            for m in show(rig, mission)["messages"]
        ),
        60,
        "the coordinator's message through MCP",
    )

    # A worker: a plain command that ends at once and reports through IPC.
    worker = rig.volee(
        "spawn", "--harness", "generic", "--mission", mission, "--role", "worker",
        "--name", "surveyor", "--", "sh", "-c", "exit 0",
    ).strip()  # fmt: skip
    rig.wait_state("surveyor", "stopped", timeout=20)
    with Client.connect(dirs(rig.env).socket, timeout=10) as client:
        client.call(
            "messages.post", sender=worker, to=[coordinator], body="all fine", kind="report"
        )
    wait_until(lambda: show(rig, mission)["status"] == "reporting", 30, "reporting")
    # volee's "every worker delivered" notice is typed into the coordinator while it may still
    # be in the turns of the messages before it; the person's message typed right behind it
    # can land in the same prompt box and reach the model on the same line as the notice
    # ("...approving option).MCP: ..."), where the fake does not read it as a tool call.  So
    # the person writes once the notice has reached the model and the coordinator's turn ended.
    wait_until(
        lambda: any(
            "Every worker delivered" in json.dumps(last_user_message(r["body"]["messages"]))
            for r in server.requests("/v1/messages")
            if isinstance(r.get("body"), dict) and r["body"].get("messages")
        ),
        30,
        "the notice reaching the model",
    )
    name = next(a["name"] for a in rig.agents().values() if a["id"] == coordinator)
    rig.wait_state(name, "done", timeout=30)

    present = json.dumps(
        {"body": "the survey is done", "options": ["ship", "redo"], "approving": "ship"}
    )
    rig.volee("send", coordinator, f"MCP: mcp__volee__present_report {present}")
    m = wait_until(
        lambda: (v := show(rig, mission))["status"] == "awaiting-approval" and v,
        60,
        "awaiting-approval",
    )
    report = next(msg for msg in m["messages"] if msg["id"] == m["report"])
    assert report["sender"] == coordinator
    assert list(report["options"]) == ["ship", "redo"]
    rig.volee("mission", "answer", mission, "--option", "ship")
    assert show(rig, mission)["status"] == "closed"

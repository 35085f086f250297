"""Recovery with the REAL Claude Code against the fake Anthropic API, killed like a machine.

Three agents: one mid-turn (the fake server holds its reply), one stopped by volee, one
done.  Every host and the daemon are SIGKILLed and the records made to say an earlier
boot; then the daemon starts.  The mid-turn agent is resumed with ``--resume`` and the
model receives its earlier conversation plus volee's resume prompt; the stopped one stays
stopped; the done one is stopped-interrupted and resumes with a later message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.recovery_rig import Rig
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import claude_env
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(90)]


@pytest.fixture
def rig(claude_rig: Rig) -> Rig:
    return claude_rig


def conversation(server: FakeAnthropic, needle: str) -> str | None:
    """The JSON of the last /v1/messages conversation that mentions ``needle``."""
    for request in reversed(server.requests("/v1/messages")):
        text = json.dumps(request["body"].get("messages", []))
        if needle in text:
            return text
    return None


def automatic_starts(rig: Rig, name: str) -> list[dict[str, Any]]:
    return [i for i in rig.timeline(name) if i["type"] == "host-started" and i.get("automatic")]


def test_real_claude_mid_turn_is_resumed_stopped_stays_done_waits_for_a_message(
    rig: Rig, real_fake_anthropic: FakeAnthropic
) -> None:
    server = real_fake_anthropic
    env = claude_env(rig.root / "h", server.port, rig.project)
    env.pop("VOLEE_HOME", None)  # the rig's own, not the sandbox fixture's
    rig.env.update(env)
    rig.spawn("HOLD first task of mid", name="mid")
    rig.spawn("task of stopped", name="stopped")
    rig.spawn("task of done", name="done")
    wait_until(lambda: conversation(server, "HOLD first task of mid"), 90, "mid's turn held")
    rig.wait_state("mid", "working", timeout=60)
    rig.wait_state("stopped", "done", timeout=60)
    rig.wait_state("done", "done", timeout=60)
    rig.volee("stop", "stopped")
    mid_session = rig.agent("mid")["session_id"]
    done_session = rig.agent("done")["session_id"]

    rig.crash_machine(reboot=True)
    rig.volee("ls", "--no-refresh")  # the first use after the "reboot" starts the daemon

    resumed = wait_until(
        lambda: conversation(server, "[volee] The machine restarted while you were working"),
        90,
        "mid resumed with volee's prompt",
    )
    assert resumed.index("HOLD first task of mid") < resumed.index("[volee] The machine")
    mid = rig.agent("mid")
    argv = rig.record(mid["id"])["argv"]
    assert argv[argv.index("--resume") + 1] == mid_session
    assert mid["session_id"] == mid_session
    assert [s["how"] for s in automatic_starts(rig, "mid")] == ["resume"]
    notice = [
        i for i in rig.timeline("mid") if i["type"] == "message-posted" and i["sender"] == "volee"
    ]
    assert [n["kind"] for n in notice] == ["notice"]

    stopped = rig.agent("stopped")
    assert stopped["state"] == "stopped"
    assert automatic_starts(rig, "stopped") == []

    done = rig.agent("done")
    decided = [
        (i["rule"], i["outcome"]) for i in rig.timeline("done") if i["type"] == "recovery-decided"
    ]
    assert decided == [(5, "stopped")]
    # Then stopped and marked interrupted (discovery may later re-read Claude's stale session
    # file of the killed process: see the report; the decision is what matters here).
    changed = [i for i in rig.timeline("done") if i["type"] == "state-changed"]
    assert any(
        c["state"] == "stopped" and c["detail"] == "interrupted: the machine restarted"
        for c in changed
    )
    assert automatic_starts(rig, "done") == []
    rig.volee("send", "done", "a later message for done")
    later = wait_until(
        lambda: conversation(server, "a later message for done"),
        90,
        "done resumed with the message",
    )
    assert later.index("task of done") < later.index("a later message for done")
    argv = rig.record(done["id"])["argv"]
    assert argv[argv.index("--resume") + 1] == done_session

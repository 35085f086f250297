"""Recovery end to end: a real daemon, real hosts and the fake claude, killed with SIGKILL.

Every stop path of recovery.md is followed by a machine crash and a daemon start, and
none of them comes back by itself; a working agent beside them does (so the test can
fail).  Also: a crash loop restarted exactly as often as the budget allows, and an agent
interrupted twice within ten minutes failed rather than resumed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.recovery_rig import Rig
from tests.polling import wait_until
from volee_desktop.core import events as ev
from volee_desktop.core.ids import MISSION
from volee_desktop.core.model import MissionKind, MissionStatus
from volee_desktop.daemon.agents.sessions import FRESH_SESSION_NOTICE, TASK_AGAIN
from volee_desktop.daemon.ids import fresh
from volee_desktop.hosts.records import HostRecord, host_alive

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig(config="[agents]\nrestart_delays = [0.1, 0.1, 0.1]\n")
    yield r
    r.close()


def automatic_starts(rig: Rig, name: str) -> list[dict[str, object]]:
    return [
        item
        for item in rig.timeline(name)
        if item["type"] == "host-started" and item.get("automatic")
    ]


def test_no_stop_path_is_followed_by_an_automatic_resume(rig: Rig) -> None:
    mission = fresh(MISSION)
    rig.append(ev.MissionCreated(at=1.0, mission=mission, goal="g", kind=MissionKind.CHANGE))
    for name in ("stopped", "forgotten", "control"):
        rig.spawn("SLEEP: 60", name=name)
    rig.volee(
        "spawn",
        "--name",
        "mission",
        "--cwd",
        str(rig.project),
        "--mission",
        mission,
        "--",
        "SLEEP: 60",
    )
    for name in ("left", "done"):
        rig.spawn("hello", name=name)
    for name in ("stopped", "forgotten", "control", "mission"):
        rig.wait_state(name, "working")
    rig.wait_state("done", "done")
    rig.wait_state("left", "done")

    rig.volee("stop", "stopped")  # volee stop
    forgotten = rig.agent("forgotten")["id"]
    rig.volee("forget", "forgotten")  # volee forget
    rig.volee("send", "left", "/exit")  # the person leaves: SessionEnd prompt_input_exit
    left = rig.wait_state("left", "stopped")
    assert left["held"]
    # The mission ends while its agent runs: the daemon goes down, the end is written,
    # the daemon comes back and adopts the live hosts.
    rig.kill_daemon()
    rig.append(ev.MissionUpdated(at=2.0, mission=mission, status=MissionStatus.CLOSED))
    assert rig.agent("mission")["held"] == "mission over"

    rig.crash_machine(reboot=True)
    control = rig.wait_state("control", "done")  # resumed; its resumed turn ended
    assert len(automatic_starts(rig, "control")) == 1

    agents = rig.agents()
    assert "forgotten" not in agents
    assert not (rig.hosts / f"{forgotten}.json").exists()
    for name in ("stopped", "left", "done", "mission"):
        assert agents[name]["state"] == "stopped", agents[name]
        assert automatic_starts(rig, name) == [], name
    decided = {
        name: [i for i in rig.timeline(name) if i["type"] == "recovery-decided"]
        for name in ("mission", "done")
    }
    assert [(d["rule"], d["outcome"]) for d in decided["mission"]] == [(2, "held")]
    assert [(d["rule"], d["outcome"]) for d in decided["done"]] == [(5, "stopped")]
    assert agents["done"]["interrupted"] == "machine-restarted"
    assert control["interrupted"] is None
    live = {r["agent"] for r in rig.records() if host_alive(HostRecord.from_dict(r))}
    assert live == {control["id"]}  # done, its host lingers or is gone; no other host


def test_a_crash_loop_is_restarted_as_often_as_the_budget_allows_then_failed(rig: Rig) -> None:
    rig.spawn("sh", "-c", "sleep 0.2; exit 3", name="loop", harness="generic")
    failed = rig.wait_state("loop", "failed", timeout=25)
    assert failed["detail"] == (
        "exited with code 3; not restarted again after 3 automatic restarts in a row "
        "(reply to continue)"
    )
    starts = automatic_starts(rig, "loop")
    assert [s["how"] for s in starts] == ["restart"] * 3
    texts = [i["text"] for i in rig.timeline("loop")]
    assert any("continuing in 0.1 s (automatic restart 3 of 3)" in t for t in texts)


def test_an_agent_interrupted_twice_within_ten_minutes_is_failed(rig: Rig) -> None:
    rig.spawn("SLEEP: 60", name="twice")
    rig.wait_state("twice", "working")
    rig.crash_machine(reboot=True)
    wait_until(lambda: automatic_starts(rig, "twice"), 15.0, "resumed")
    rig.crash_machine(reboot=True)
    failed = rig.wait_state("twice", "failed")
    assert failed["detail"] == "interrupted twice within 10 minutes; not resumed"
    assert len(automatic_starts(rig, "twice")) == 1


def user_prompts(rig: Rig, session: str) -> list[str]:
    """What the fake claude was asked in ``session`` (its own transcript)."""
    path = rig.root / "fh" / f"{session}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [str(e["message"]["content"]) for e in lines if e["type"] == "user"]


def test_a_task_killed_before_anything_was_saved_is_given_again_only_if_no_tool_ran(
    rig: Rig,
) -> None:
    """recovery.md row 9: a session never written runs its first task again. Claude Code
    writes its conversation through a queue, so killed right after its first prompt it saved
    nothing: the new session gets the task again, unless a tool of the agent had started."""
    rig.spawn("UNSAVED: write the report", name="fresh")
    rig.spawn("RUN: echo ran >> ran.txt", name="tooled")
    first = rig.wait_state("fresh", "working")
    tooled = rig.wait_state("tooled", "done")
    rig.volee("send", "tooled", "UNSAVED: and then more")
    rig.wait_state("tooled", "working")
    # The tooled agent's conversation cannot be found either (say its folder moved).
    config = Path(rig.env["CLAUDE_CONFIG_DIR"]) / "projects"
    for path in config.glob(f"*/{tooled['session_id']}.jsonl"):
        path.unlink()
    assert not list(config.glob(f"*/{first['session_id']}.jsonl"))  # nothing saved

    rig.crash_machine(reboot=True)
    fresh = rig.wait_state("fresh", "done", timeout=20)
    again = rig.wait_state("tooled", "done", timeout=20)

    assert fresh["session_id"] != first["session_id"]  # a new session: nothing to resume
    (prompt,) = user_prompts(rig, fresh["session_id"])
    assert prompt.startswith(FRESH_SESSION_NOTICE)
    assert prompt.endswith(f"{TASK_AGAIN}\n\nUNSAVED: write the report")
    # Recorded as volee's notice (never the person's message), the task quoted in it.
    notices = [i for i in rig.timeline("fresh") if "notice from volee" in i["text"]]
    (notice,) = notices
    assert notice["body"] == prompt

    assert again["session_id"] != tooled["session_id"]
    assert user_prompts(rig, again["session_id"]) == [FRESH_SESSION_NOTICE]
    assert (rig.project / "ran.txt").read_text() == "ran\n"  # its command never ran twice

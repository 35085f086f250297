"""The pi profile: the shipped extension, --session resume, and the extension's reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, LaunchSettings
from volee_desktop.core.states import AgentState
from volee_desktop.harness.base import Error, PayloadError
from volee_desktop.harness.pi import PiProfile, extension_path, has_conversation, hook_events

from .support import AT, SAMPLES, agent, context, sample

S = LaunchSettings(harness=Harness.PI, cwd="/p", prompt="fix it", model="fake/fake-model")


def states(events: list[ev.Event]) -> list[tuple[str, str]]:
    return [(e.state, e.detail) for e in events if isinstance(e, ev.StateChanged)]


def test_the_extension_ships_and_reports_every_event_the_profile_reads() -> None:
    text = extension_path().read_text()

    for name in ("session_start", "agent_start", "tool_call", "agent_end", "session_shutdown"):
        assert f'pi.on("{name}"' in text
    assert "VOLEE_HOOK_ARGV" in text


def test_launch_loads_the_extension_and_tells_it_how_to_reach_volee() -> None:
    plan = PiProfile().launch("ag_1", S, context("/opt/pi"))

    assert plan.argv == (
        "/opt/pi",
        "-e",
        str(extension_path()),
        "--model",
        "fake/fake-model",
        "fix it",
    )
    assert json.loads(plan.env["VOLEE_HOOK_ARGV"]) == [
        "/usr/bin/python3",
        "-m",
        "volee_desktop.cli",
        "hook",
    ]
    assert plan.session_id is None


def test_resume_uses_session() -> None:
    plan = PiProfile().resume("ag_1", S, "01a22bf4", "next", context())

    assert plan.argv[-3:] == ("--session", "01a22bf4", "next")
    assert "fix it" not in plan.argv
    assert plan.session_id == "01a22bf4"


def test_pi_has_no_permission_modes() -> None:
    settings = LaunchSettings(harness=Harness.PI, cwd="/p", permission_mode="manual")
    with pytest.raises(Error, match="pi has no permission modes"):
        PiProfile().launch("ag_1", settings, context())


def test_session_start_links_the_reported_session() -> None:
    payload = sample("pi-hook-session_start")
    events = hook_events(agent(Harness.PI, AgentState.LAUNCHING), "session_start", payload, AT)

    linked = [e for e in events if isinstance(e, ev.SessionLinked)]
    assert [(e.session, e.how) for e in linked] == [(payload["session_id"], "started")]
    assert states(events) == [(AgentState.IDLE, "")]


@pytest.mark.parametrize(
    ("hook", "state", "activity"),
    [
        ("agent_start", AgentState.WORKING, None),
        ("tool_call", AgentState.WORKING, "bash: echo pi > pi.txt"),
        ("agent_end", AgentState.DONE, None),
    ],
)
def test_turn_events(hook: str, state: AgentState, activity: str | None) -> None:
    payload = sample(f"pi-hook-{hook}")
    a = agent(Harness.PI, AgentState.IDLE, sessions=(payload["session_id"],))

    events = hook_events(a, hook, payload, AT)

    assert [e.state for e in events if isinstance(e, ev.StateChanged)] == [state]
    got = [e.activity for e in events if isinstance(e, ev.ActivityRecorded)]
    assert got == ([activity] if activity else [])


def test_quit_without_a_signal_is_the_persons_own_stop() -> None:
    payload = sample("pi-hook-session_shutdown-quit")
    a = agent(Harness.PI, AgentState.DONE, sessions=(payload["session_id"],))

    events = hook_events(a, "session_shutdown", payload, AT)

    assert states(events) == [(AgentState.STOPPED, "you left pi")]
    assert [e.by for e in events if isinstance(e, ev.StopRequested)] == ["human"]


def test_quit_on_a_signal_is_stopped_without_a_hold() -> None:
    payload = sample("pi-hook-session_shutdown-signal")
    a = agent(Harness.PI, AgentState.DONE, sessions=(payload["session_id"],))
    held = agent(
        Harness.PI,
        AgentState.STOPPED,
        sessions=(payload["session_id"],),
        detail="stopped by you",
        held="stopped by you",
    )

    events = hook_events(a, "session_shutdown", payload, AT)

    assert states(events) == [(AgentState.STOPPED, "session ended (SIGTERM)")]
    assert not any(isinstance(e, ev.StopRequested) for e in events)
    assert hook_events(held, "session_shutdown", payload, AT) == []


def test_session_switch_is_not_an_end() -> None:
    payload = {**sample("pi-hook-session_shutdown-quit"), "reason": "new"}
    a = agent(Harness.PI, AgentState.DONE, sessions=(payload["session_id"],))

    assert hook_events(a, "session_shutdown", payload, AT) == []


def test_a_report_without_a_session_id_still_counts() -> None:
    payload = {**sample("pi-hook-agent_end"), "session_id": None}
    a = agent(Harness.PI, AgentState.WORKING, sessions=("s",))

    assert states(hook_events(a, "agent_end", payload, AT)) == [(AgentState.DONE, "")]


def test_bad_reports_are_payload_errors() -> None:
    with pytest.raises(PayloadError, match="unknown pi event 'turn_start'"):
        hook_events(agent(Harness.PI), "turn_start", {}, AT)
    with pytest.raises(PayloadError, match="session_id"):
        hook_events(agent(Harness.PI), "agent_end", {"session_id": 3}, AT)


def test_every_sample_is_understood() -> None:
    for path in sorted(SAMPLES.glob("pi-hook-*.json")):
        payload = json.loads(path.read_text())
        hook_events(agent(Harness.PI), payload["hook_event_name"], payload, AT)


SESSION = "019a6f2e-7c1d-7b3a-9f00-5e1d2c3b4a59"


def test_a_session_with_its_file_has_a_conversation(tmp_path: Path) -> None:
    folder = tmp_path / ".pi" / "agent" / "sessions" / "--p--"
    folder.mkdir(parents=True)
    (folder / f"2026-12-01T09-00-00-000Z_{SESSION}.jsonl").write_text('{"type":"session"}\n')

    assert has_conversation(SESSION, {"HOME": str(tmp_path)})
    settings = LaunchSettings(harness=Harness.PI, cwd="/p", env={"HOME": str(tmp_path)})
    assert PiProfile().has_conversation(SESSION, settings)


def test_a_session_killed_before_its_first_reply_has_none(tmp_path: Path) -> None:
    # pi writes the file only with its first reply: `--session` would say "No session found".
    (tmp_path / ".pi" / "agent" / "sessions" / "--p--").mkdir(parents=True)

    assert not has_conversation(SESSION, {"HOME": str(tmp_path)})
    assert not has_conversation("", {"HOME": str(tmp_path)})


def test_pi_coding_agent_dir_moves_the_sessions(tmp_path: Path) -> None:
    folder = tmp_path / "pi-dir" / "sessions" / "--p--"
    folder.mkdir(parents=True)
    (folder / f"x_{SESSION}.jsonl").write_text("{}\n")
    env = {"HOME": str(tmp_path / "elsewhere"), "PI_CODING_AGENT_DIR": str(tmp_path / "pi-dir")}

    assert has_conversation(SESSION, env)

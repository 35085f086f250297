"""The Claude Code profile: argv for launch/resume and the hook mapping, on real payloads."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, LaunchSettings, Request, RequestKind
from volee_desktop.core.states import AgentState
from volee_desktop.harness.base import PayloadError
from volee_desktop.harness.claude import (
    HOOK_EVENTS,
    ClaudeProfile,
    has_conversation,
    hook_events,
)

from .support import AT, agent, context, sample

S = LaunchSettings(harness=Harness.CLAUDE, cwd="/p", prompt="fix it")


def states(events: list[ev.Event]) -> list[tuple[str, str]]:
    return [(e.state, e.detail) for e in events if isinstance(e, ev.StateChanged)]


def activities(events: list[ev.Event]) -> list[str]:
    return [e.activity for e in events if isinstance(e, ev.ActivityRecorded)]


def test_launch_chooses_the_session_and_writes_the_hooks_file() -> None:
    plan = ClaudeProfile().launch("ag_1", S, context("/opt/claude"))

    settings = "/state/agents/ag_1/claude-settings.json"
    assert plan.argv == (
        "/opt/claude",
        "--session-id",
        "11111111-2222-4333-8444-555555555555",
        "--settings",
        settings,
        "--mcp-config",
        "/state/agents/ag_1/mcp.json",
        "--permission-mode",
        "acceptEdits",
        "fix it",
    )
    assert plan.session_id == "11111111-2222-4333-8444-555555555555"
    hooks = json.loads(plan.files[settings])["hooks"]
    assert set(hooks) == set(HOOK_EVENTS)
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert command == "/usr/bin/python3 -m volee_desktop.cli hook PreToolUse"
    assert hooks["PreToolUse"][0]["matcher"] == "*"


def test_the_notification_hook_runs_only_for_the_kinds_volee_reads() -> None:
    # An idle_prompt comes a minute after every turn and changes nothing (below): a shim
    # started for it in every idle agent would be CPU volee adds to the agent for nothing.
    plan = ClaudeProfile().launch("ag_1", S, context("/opt/claude"))

    [entry] = json.loads(plan.files["/state/agents/ag_1/claude-settings.json"])["hooks"][
        "Notification"
    ]
    kinds = set(entry["matcher"].split("|"))
    assert kinds == {"permission_prompt", "elicitation_dialog"}
    assert all(re.fullmatch(entry["matcher"], kind) for kind in kinds)
    assert not re.search(entry["matcher"], "idle_prompt")


def test_launch_adds_volees_mcp_server_knowing_its_agent() -> None:
    plan = ClaudeProfile().launch("ag_1", S, context("/opt/claude"))

    config = json.loads(plan.files["/state/agents/ag_1/mcp.json"])["mcpServers"]["volee"]
    assert config["command"] == "/usr/bin/python3"
    assert config["args"] == ["-m", "volee_desktop.cli", "mcp"]
    assert config["env"] == {"VOLEE_AGENT": "ag_1"}
    allowed = json.loads(plan.files["/state/agents/ag_1/claude-settings.json"])["permissions"]
    assert allowed == {"allow": ["mcp__volee"]}


def test_resume_keeps_the_recorded_settings() -> None:
    settings = LaunchSettings(
        harness=Harness.CLAUDE,
        cwd="/p",
        argv=("--add-dir", "/x"),
        env={"HOME": "/h"},
        model="opus",
        permission_mode="manual",
        prompt="first task",
    )
    plan = ClaudeProfile().resume("ag_1", settings, "sess-1", "next", context())

    assert plan.argv[:3] == ("claude", "--resume", "sess-1")
    assert plan.argv[-1] == "next"
    assert "first task" not in plan.argv
    assert plan.argv[7:9] == ("--permission-mode", "manual")
    assert plan.argv[9:11] == ("--model", "opus")
    assert plan.argv[11:13] == ("--add-dir", "/x")
    assert plan.env == {"HOME": "/h"}
    assert plan.session_id == "sess-1"


def test_session_start_links_the_session_and_leaves_launching() -> None:
    payload = sample("claude-hook-SessionStart-startup")
    events = hook_events(agent(state=AgentState.LAUNCHING), "SessionStart", payload, AT)

    assert isinstance(events[0], ev.SessionLinked)
    assert (events[0].session, events[0].how) == (payload["session_id"], "started")
    assert states(events) == [(AgentState.IDLE, "")]


def test_session_start_tells_the_model_once_it_changes() -> None:
    # Seed 002: model-changed, better knowledge of how the agent runs (interactive starts only).
    payload = {**sample("claude-hook-SessionStart-startup"), "model": "claude-sonnet-5"}

    events = hook_events(agent(), "SessionStart", payload, AT)
    assert [e.model for e in events if isinstance(e, ev.ModelChanged)] == ["claude-sonnet-5"]

    same = hook_events(replace(agent(), model="claude-sonnet-5"), "SessionStart", payload, AT)
    assert not [e for e in same if isinstance(e, ev.ModelChanged)]
    without = {k: v for k, v in payload.items() if k != "model"}
    assert not [
        e
        for e in hook_events(agent(), "SessionStart", without, AT)
        if isinstance(e, ev.ModelChanged)
    ]


def test_resumed_session_start_is_a_resume() -> None:
    payload = {**sample("claude-hook-SessionStart-startup"), "source": "resume"}
    events = hook_events(agent(sessions=("old",)), "SessionStart", payload, AT)

    assert [(e.session, e.how) for e in events if isinstance(e, ev.SessionLinked)] == [
        (payload["session_id"], "resumed")
    ]


def test_user_prompt_is_working_and_clears_done() -> None:
    payload = sample("claude-hook-UserPromptSubmit")
    a = agent(state=AgentState.DONE, sessions=(payload["session_id"],))

    assert states(hook_events(a, "UserPromptSubmit", payload, AT)) == [(AgentState.WORKING, "")]


@pytest.mark.parametrize(
    ("hook", "activity"),
    [
        ("PreToolUse", "Bash: echo s > s.txt"),
        ("PostToolUse", "Bash: echo s > s.txt"),
        ("PostToolUseFailure", "Bash: false (failed)"),
    ],
)
def test_tool_hooks_are_activity(hook: str, activity: str) -> None:
    payload = sample(f"claude-hook-{hook}")
    a = agent(
        state=AgentState.NEEDS_INPUT,
        detail="permission for Bash",
        sessions=(payload["session_id"],),
    )

    events = hook_events(a, hook, payload, AT)

    # A tool running after a permission dialog is how needs-input ends.
    assert states(events) == [(AgentState.WORKING, "")]
    assert activities(events) == [activity]


def test_permission_request_is_needs_input_naming_the_tool() -> None:
    payload = sample("claude-hook-PermissionRequest")
    a = agent(sessions=(payload["session_id"],))

    assert states(hook_events(a, "PermissionRequest", payload, AT)) == [
        (AgentState.NEEDS_INPUT, "permission for Bash")
    ]


def requests(events: list[ev.Event]) -> list[Request | None]:
    return [e.request for e in events if isinstance(e, ev.StateChanged)]


def test_permission_request_carries_the_request_in_words() -> None:
    payload = sample("claude-hook-PermissionRequest")
    a = agent(sessions=(payload["session_id"],))

    [request] = requests(hook_events(a, "PermissionRequest", payload, AT))

    assert request is not None
    assert (request.kind, request.tool, request.summary) == (
        RequestKind.PERMISSION,
        "Bash",
        "Bash: touch p2.txt",
    )
    assert request.input == {"command": "touch p2.txt", "description": "run command"}
    # A second dialog while the first is open (the same detail) is a new request.
    asking = agent(state=AgentState.NEEDS_INPUT, detail="permission for Bash", sessions=a.sessions)
    [again] = requests(hook_events(asking, "PermissionRequest", payload, AT + 1))
    assert again is not None
    assert again.id != request.id


def test_permission_request_without_tool_input_says_what_is_known() -> None:
    payload = sample("claude-hook-PermissionRequest")
    del payload["tool_input"]
    a = agent(sessions=(payload["session_id"],))

    [request] = requests(hook_events(a, "PermissionRequest", payload, AT))

    assert request is not None
    assert request.summary == "Bash (its input was not given)"
    assert request.input is None


def test_ask_user_question_is_a_question_with_its_options() -> None:
    payload = {
        **sample("claude-hook-PreToolUse"),
        "tool_name": "AskUserQuestion",
        "tool_input": {
            "questions": [
                {
                    "question": "Which one?",
                    "header": "Pick",
                    "options": [{"label": "A", "description": ""}, {"label": "B"}],
                    "multiSelect": False,
                }
            ]
        },
    }
    a = agent(sessions=(payload["session_id"],))

    events = hook_events(a, "PreToolUse", payload, AT)

    assert states(events) == [(AgentState.NEEDS_INPUT, "question: AskUserQuestion")]
    [request] = requests(events)
    assert request is not None
    assert request.kind is RequestKind.QUESTION
    assert (request.question, request.options) == ("Which one?", ("A", "B"))
    assert request.summary == "Which one? (A / B)"


def test_permission_notification_is_needs_input_but_keeps_the_richer_detail() -> None:
    payload = sample("claude-hook-Notification-permission_prompt")
    working = agent(sessions=(payload["session_id"],))
    asking = agent(
        state=AgentState.NEEDS_INPUT,
        detail="permission for Bash",
        sessions=(payload["session_id"],),
    )

    assert states(hook_events(working, "Notification", payload, AT)) == [
        (AgentState.NEEDS_INPUT, "permission")
    ]
    [request] = requests(hook_events(working, "Notification", payload, AT))
    assert request is not None
    assert request.kind is RequestKind.PERMISSION
    assert request.summary == "Claude needs your permission"
    assert hook_events(asking, "Notification", payload, AT) == []


def test_idle_prompt_is_not_needs_input() -> None:
    payload = {
        **sample("claude-hook-Notification-permission_prompt"),
        "message": "Claude is waiting for your input",
        "notification_type": "idle_prompt",
    }
    a = agent(state=AgentState.DONE, sessions=(payload["session_id"],))

    assert hook_events(a, "Notification", payload, AT) == []


def test_stop_is_done() -> None:
    payload = sample("claude-hook-Stop")
    a = agent(sessions=(payload["session_id"],))

    assert states(hook_events(a, "Stop", payload, AT)) == [
        (AgentState.DONE, "Done: (Bash completed with no output)")
    ]
    payload.pop("last_assistant_message")
    assert states(hook_events(a, "Stop", payload, AT)) == [(AgentState.DONE, "")]


@pytest.mark.parametrize("hook", ["SubagentStart", "SubagentStop"])
def test_subagents_are_activity_of_the_same_agent(hook: str) -> None:
    payload = sample(f"claude-hook-{hook}")
    a = agent(state=AgentState.WORKING, sessions=(payload["session_id"],))

    events = hook_events(a, hook, payload, AT)

    verb = "started" if hook == "SubagentStart" else "finished"
    assert activities(events) == [f"subagent general-purpose {verb}"]
    assert not any(isinstance(e, ev.SessionLinked) for e in events)
    assert states(events) == []


def test_own_exit_is_stopped_and_held() -> None:
    payload = sample("claude-hook-SessionEnd-prompt_input_exit")
    a = agent(state=AgentState.DONE, sessions=(payload["session_id"],))

    events = hook_events(a, "SessionEnd", payload, AT)

    assert states(events) == [(AgentState.STOPPED, "you left Claude Code")]
    stops = [e for e in events if isinstance(e, ev.StopRequested)]
    assert [(s.by, s.reason) for s in stops] == [("human", "you left Claude Code")]


def test_other_session_end_is_stopped_without_a_hold() -> None:
    payload = sample("claude-hook-SessionEnd-other")
    a = agent(state=AgentState.DONE, sessions=(payload["session_id"],))

    events = hook_events(a, "SessionEnd", payload, AT)

    assert states(events) == [(AgentState.STOPPED, "session ended (other)")]
    assert not any(isinstance(e, ev.StopRequested) for e in events)


def test_session_end_after_a_stop_keeps_the_stop_detail() -> None:
    payload = sample("claude-hook-SessionEnd-other")
    a = agent(
        state=AgentState.STOPPED,
        detail="stopped by you",
        held="stopped by you",
        sessions=(payload["session_id"],),
    )

    assert hook_events(a, "SessionEnd", payload, AT) == []


@pytest.mark.parametrize("name", ["PostToolBatch", "MessageDisplay"])
def test_quiet_hooks_change_nothing(name: str) -> None:
    payload = sample(f"claude-hook-{name}")
    a = agent(sessions=(payload["session_id"],))

    assert hook_events(a, name, payload, AT) == []


def test_stop_failure_is_failed_with_the_error() -> None:
    payload = {**sample("claude-hook-Stop"), "hook_event_name": "StopFailure", "error": "rate"}
    a = agent(sessions=(payload["session_id"],))

    assert states(hook_events(a, "StopFailure", payload, AT)) == [(AgentState.FAILED, "rate")]


def test_bad_payloads_are_payload_errors() -> None:
    a = agent()
    with pytest.raises(PayloadError, match="session_id"):
        hook_events(a, "Stop", {"hook_event_name": "Stop"}, AT)
    with pytest.raises(PayloadError, match="unknown Claude Code hook 'Bogus'"):
        hook_events(a, "Bogus", sample("claude-hook-Stop"), AT)


def test_every_sample_is_understood() -> None:
    from .support import SAMPLES

    for path in sorted(SAMPLES.glob("claude-hook-*.json")):
        payload = json.loads(path.read_text())
        hook_events(agent(), payload["hook_event_name"], payload, AT)


SESSION_ID = "458c6f8c-9494-4e5b-9161-f890013732dc"


def test_a_session_resumes_only_when_its_transcript_holds_a_conversation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    folder = home / ".claude" / "projects" / "-work-proj"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION_ID}.jsonl"
    settings = LaunchSettings(harness=Harness.CLAUDE, cwd="/work/proj", env=env)
    profile = ClaudeProfile()
    assert not profile.has_conversation(SESSION_ID, settings)  # killed before any write
    # What 2.1.332 leaves when killed before its queue wrote the prompt.
    meta = [{"type": "mode", "mode": "normal"}, {"type": "permission-mode"}]
    transcript.write_text("".join(json.dumps(m) + "\n" for m in meta))
    assert not profile.has_conversation(SESSION_ID, settings)
    with transcript.open("a") as f:
        f.write(json.dumps({"type": "user", "message": {"content": "HOLD"}}) + "\n")
    assert profile.has_conversation(SESSION_ID, settings)
    assert has_conversation(SESSION_ID, {"CLAUDE_CONFIG_DIR": str(home / ".claude")})
    assert not has_conversation(SESSION_ID, {"HOME": str(tmp_path / "elsewhere")})


# --- the status line: context share and cost (docs/context.md) ------


def statusline_settings(tmp_path: Path, own: dict[str, object] | None) -> dict[str, object]:
    home = tmp_path / "home"
    if own is not None:
        (home / ".claude").mkdir(parents=True)
        (home / ".claude" / "settings.json").write_text(json.dumps({"statusLine": own}))
    settings = replace(S, cwd=str(tmp_path / "project"), env={"HOME": str(home)})
    ctx = replace(context("/opt/claude"), statusline=("/usr/bin/python3", "-I", "-S", "/v/sl.py"))
    plan = ClaudeProfile().launch("ag_1", settings, ctx)
    line: dict[str, object] = json.loads(plan.files["/state/agents/ag_1/claude-settings.json"])[
        "statusLine"
    ]
    return line


def test_the_status_line_is_volees_wrapper(tmp_path: Path) -> None:
    line = statusline_settings(tmp_path, None)
    assert line == {
        "type": "command",
        "command": "/usr/bin/python3 -I -S /v/sl.py /state/agents/ag_1/statusline.last",
    }


def test_the_persons_own_status_line_is_run_by_the_wrapper(tmp_path: Path) -> None:
    own = {"type": "command", "command": "~/bin/my-line --git 'a b'", "padding": 2}
    line = statusline_settings(tmp_path, own)
    assert line["padding"] == 2
    assert shlex.split(str(line["command"]))[-1] == "~/bin/my-line --git 'a b'"


def test_a_projects_own_status_line_comes_before_the_persons(tmp_path: Path) -> None:
    (tmp_path / "project" / ".claude").mkdir(parents=True)
    (tmp_path / "project" / ".claude" / "settings.local.json").write_text(
        json.dumps({"statusLine": {"type": "command", "command": "project-line"}})
    )
    line = statusline_settings(tmp_path, {"type": "command", "command": "mine"})
    assert str(line["command"]).endswith(" project-line")


def test_no_wrapper_no_status_line() -> None:
    plan = ClaudeProfile().launch("ag_1", S, context("/opt/claude"))
    assert "statusLine" not in json.loads(plan.files["/state/agents/ag_1/claude-settings.json"])


def test_status_line_is_context_used_only_when_it_changed() -> None:
    a = agent()
    payload = {"session_id": "s", "context": 0.42, "cost_usd": 0.5}
    [used] = hook_events(a, "StatusLine", payload, AT)
    assert used == ev.ContextUsed(at=AT, agent="ag_1", share=0.42, cost_usd=0.5)
    same = replace(a, context_share=0.42, cost_usd=0.5)
    assert hook_events(same, "StatusLine", payload, AT) == []
    # It says nothing about the agent's state.
    assert states(hook_events(a, "StatusLine", payload, AT)) == []


@pytest.mark.parametrize(
    "payload",
    [{"context_window": {"used_percentage": 3}}, {"context": "lots"}, {"context": 1.5}, {}],
)
def test_a_status_line_volee_cannot_read_is_refused(payload: dict[str, object]) -> None:
    with pytest.raises(PayloadError, match="status line volee cannot read"):
        hook_events(agent(), "StatusLine", payload, AT)


def test_a_new_prompt_clears_the_last_turns_activity() -> None:
    payload = sample("claude-hook-UserPromptSubmit")
    done = agent(state=AgentState.DONE, sessions=(payload["session_id"],))
    a = replace(done, activity="Bash: ls")
    assert activities(hook_events(a, "UserPromptSubmit", payload, AT)) == [""]


def test_the_plans_use_from_the_status_line_is_plan_used_only_when_it_changed() -> None:
    from volee_desktop.core.model import PlanUse

    plan = {"five_hour": {"used": 0.72, "resets_at": AT + 3600}, "seven_day": {"used": 0.31}}
    payload = {"session_id": "s", "context": 0.1, "plan": plan}
    a = agent(sessions=("s",))
    out = hook_events(a, "StatusLine", payload, AT)
    [used] = [e for e in out if isinstance(e, ev.PlanUsed)]
    assert (used.five_hour, used.five_hour_resets_at) == (0.72, AT + 3600)
    assert (used.seven_day, used.seven_day_resets_at) == (0.31, None)
    held = PlanUse(at=AT, five_hour=0.72, five_hour_resets_at=AT + 3600, seven_day=0.31)
    same = replace(a, plan=held, context_share=0.1)
    assert hook_events(same, "StatusLine", payload, AT) == []
    # Nothing reported (an API key), or nothing readable: no plan-used.
    bad = {"five_hour": {"used": 7}, "seven_day": "x"}
    for plan_payload in (None, bad):
        out = hook_events(same, "StatusLine", {**payload, "plan": plan_payload}, AT)
        assert not [e for e in out if isinstance(e, ev.PlanUsed)]

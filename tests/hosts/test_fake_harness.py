"""The fake harness behaves like Claude Code where volee looks: hooks, transcript, resume."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FAKE_HARNESS, Rig

COMMON = {"session_id", "transcript_path", "cwd", "hook_event_name"}
# Keys of the real Claude Code 2.1.332 payloads (the team's harness-samples), minus
# "effort", which needs a model.
REAL_KEYS = {
    "SessionStart": COMMON | {"source"},
    "UserPromptSubmit": COMMON | {"prompt_id", "permission_mode", "prompt"},
    "PreToolUse": COMMON
    | {"prompt_id", "permission_mode", "tool_name", "tool_input", "tool_use_id"},
    "PostToolUse": COMMON
    | {
        "prompt_id",
        "permission_mode",
        "tool_name",
        "tool_input",
        "tool_use_id",
        "tool_response",
        "duration_ms",
    },
    "Stop": COMMON
    | {
        "prompt_id",
        "permission_mode",
        "stop_hook_active",
        "last_assistant_message",
        "background_tasks",
        "session_crons",
    },
    "SessionEnd": COMMON | {"prompt_id", "reason"},
}
PROMPT = "❯ ".encode()


def _events(rig: Rig) -> list[str]:
    return [h["hook_event_name"] for h in rig.hooks()]


def test_a_run_fires_claude_hooks_in_order(rig: Rig) -> None:
    rig.launch_fake("--session-id", "11111111-2222-4333-a444-555555555555")
    stream = rig.stream()
    stream.read_until(PROMPT, 10)

    rig.client().send_text("RUN: echo hi > out.txt")

    stop = rig.wait_hook("Stop")
    assert (rig.project / "out.txt").read_text() == "hi\n"
    assert _events(rig) == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    start, prompt, pre, post = rig.hooks()[:4]
    assert start["source"] == "startup"
    assert start["session_id"] == "11111111-2222-4333-a444-555555555555"
    assert start["transcript_path"] == str(rig.harness_home / f"{start['session_id']}.jsonl")
    assert start["cwd"] == str(rig.project)
    assert prompt["prompt"] == "RUN: echo hi > out.txt"
    assert pre["tool_name"] == "Bash"
    assert pre["tool_input"]["command"] == "echo hi > out.txt"
    assert post["tool_use_id"] == pre["tool_use_id"]
    assert stop["last_assistant_message"].startswith("Done")


def test_payloads_have_the_shape_of_real_ones(rig: Rig) -> None:
    rig.launch_fake("RUN: true")
    rig.wait_hook("Stop")
    rig.client().send_text("/exit")
    rig.wait_hook("SessionEnd")
    hooks = rig.hooks()
    assert {h["hook_event_name"] for h in hooks} == set(REAL_KEYS)
    for hook in hooks:
        assert REAL_KEYS[hook["hook_event_name"]] <= set(hook), hook["hook_event_name"]


def test_a_failing_command_fires_post_tool_use_failure(rig: Rig) -> None:
    rig.launch_fake("RUN: exit 4")
    failure = rig.wait_hook("PostToolUseFailure")
    assert failure["error"] == "Exit code 4"


def test_ask_waits_for_permission(rig: Rig) -> None:
    rig.launch_fake("--permission-mode", "manual", "ASK: touch granted.txt")
    request = rig.wait_hook("PermissionRequest")
    note = rig.wait_hook("Notification")
    assert request["tool_name"] == "Bash"
    assert note["notification_type"] == "permission_prompt"
    assert not (rig.project / "granted.txt").exists()

    rig.client().send_text("y")

    rig.wait_hook("PostToolUse")
    rig.wait_hook("Stop")
    assert (rig.project / "granted.txt").exists()


def test_resume_keeps_the_history(rig: Rig) -> None:
    session = "aaaaaaaa-bbbb-4ccc-addd-eeeeeeeeeeee"
    rig.launch_fake("--session-id", session, "first task")
    rig.wait_hook("Stop")
    rig.client().send_text("/exit")
    rig.wait_exit()

    rig.launch_fake("--resume", session, "second task", agent="ag_2")

    start = rig.wait_hook("SessionStart", source="resume")
    assert start["session_id"] == session
    rig.wait_hook("Stop", last_assistant_message="ok: second task")
    transcript = rig.harness_home / f"{session}.jsonl"
    users = [
        json.loads(line)["message"]["content"]
        for line in transcript.read_text().splitlines()
        if json.loads(line)["type"] == "user"
    ]
    assert users == ["first task", "second task"]


def test_resume_of_an_unknown_session_fails_like_claude(rig: Rig) -> None:
    done = subprocess.run(
        [sys.executable, str(FAKE_HARNESS), "--resume", "nope"],
        env=rig.env(),
        cwd=rig.project,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert "No conversation found" in done.stderr


def test_no_hooks_mode_runs_no_hook(rig: Rig) -> None:
    rig.launch(rig.fake_argv("RUN: echo x > x.txt", hooks=False))
    stream = rig.stream()
    stream.read_until(b"Done: ", 10)
    assert (rig.project / "x.txt").exists()
    assert rig.hooks() == []

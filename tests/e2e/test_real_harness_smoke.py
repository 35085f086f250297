"""Smoke tests of the offline rig: the real Claude Code, codex and pi against the fake model APIs.

No volee involved: these prove the fakes, the throwaway environments and the hook logging that
volee's end-to-end tests build on, and pin down what each harness does (hook order, resume).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic, anthropic_reply
from tests.fakes.fake_openai import FakeOpenAI, openai_reply
from tests.fakes.harness_env import (
    DUMMY_ANTHROPIC_KEY,
    Sandbox,
    claude_env,
    claude_hook_settings,
    claude_transcript,
    codex_env,
    pi_env,
    read_jsonl,
)
from tests.fakes.pty_program import PtyProgram, submit
from tests.polling import wait_until

FAKES = Path(__file__).resolve().parents[1] / "fakes"


# -- helpers ------------------------------------------------------------------------------


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    # Every harness runs in its own session; take down whatever it left behind too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=10)


def run_harness(
    argv: Sequence[str | Path], cwd: Path, env: dict[str, str], timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run a harness non-interactively (stdin closed) and reap its whole process group."""
    proc = subprocess.Popen(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        pytest.fail(f"{argv[0]} did not finish within {timeout} s\nstdout: {out}\nstderr: {err}")
    finally:
        _kill_group(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def hook_events(log: Path) -> list[str]:
    """The hook event names logged so far, in order."""
    return [h["hook_event_name"] for h in read_jsonl(log)]


def user_texts(messages: list[dict[str, Any]]) -> str:
    """All the text of a Messages request's conversation, for substring assertions."""
    return json.dumps(messages)


def write_claude_settings(sandbox: Sandbox) -> tuple[Path, Path]:
    """A ``--settings`` file whose hooks log to ``<root>/hooks.jsonl``; returns both paths."""
    hooks_log = sandbox.root / "hooks.jsonl"
    settings = sandbox.root / "settings.json"
    settings.write_text(json.dumps(claude_hook_settings(hooks_log)), encoding="utf-8")
    return settings, hooks_log


# -- the fakes on their own -----------------------------------------------------------------


def test_anthropic_rules_adapt_tool_names_and_ignore_reminders() -> None:
    prompt = [
        {"type": "text", "text": "<system-reminder>\nHOLD\nRUN: no\n</system-reminder>\n"},
        {"type": "text", "text": "RUN: echo hi > out.txt"},
    ]
    body = {"messages": [{"role": "user", "content": prompt}, {"role": "system", "content": "x"}]}

    claude = anthropic_reply({**body, "tools": [{"name": "Read"}, {"name": "Bash"}]})
    pi = anthropic_reply({**body, "tools": [{"name": "read"}, {"name": "bash"}]})
    side_request = anthropic_reply(body)

    assert (claude.tool, claude.tool_input["command"], claude.hold) == (
        "Bash",
        "echo hi > out.txt",
        False,
    )
    assert pi.tool == "bash"
    assert (side_request.tool, side_request.text) == (None, "OK")


def test_anthropic_rules_answer_tool_results_and_mcp() -> None:
    result = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "x" * 300}],
    }
    done = anthropic_reply({"messages": [{"role": "user", "content": [result]}]})
    mcp = anthropic_reply(
        {
            "messages": [
                {
                    "role": "user",
                    "content": 'SLEEP: 0.5\nMCP: mcp__volee__post_message {"text": "hi"}',
                }
            ]
        }
    )

    assert done.text == "Done: " + "x" * 200
    assert (mcp.tool, mcp.tool_input, mcp.sleep) == (
        "mcp__volee__post_message",
        {"text": "hi"},
        0.5,
    )


def test_anthropic_rules_answer_a_message_typed_mid_turn_beside_the_tool_result() -> None:
    # Claude Code 2.1.332 sends what the person typed while a tool ran in the same user
    # message as the tool's result (seen: the missions e2e's present_report lost in CI).
    result = {"type": "tool_result", "tool_use_id": "t", "content": "(Bash completed)"}
    typed = {
        "type": "text",
        "text": "The user sent a new message while you were working:\n"
        'MCP: mcp__volee__present_report {"body": "done"}\n\nAddress the message above.',
    }
    plain = {"type": "text", "text": "The user sent a new message while you were working:\nhi"}

    answered = anthropic_reply({"messages": [{"role": "user", "content": [result, typed]}]})
    chatted = anthropic_reply({"messages": [{"role": "user", "content": [result, plain]}]})

    assert (answered.tool, answered.tool_input) == (
        "mcp__volee__present_report",
        {"body": "done"},
    )
    assert chatted.text == "Done: (Bash completed)"


def test_openai_rules_shape_the_call_after_the_offered_tool() -> None:
    exec_tool = {
        "type": "function",
        "name": "exec_command",
        "parameters": {"properties": {"cmd": {"type": "string"}}},
    }
    shell_tool = {
        "type": "function",
        "name": "shell",
        "parameters": {"properties": {"command": {"type": "array"}}},
    }
    prompt = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "RUN: ls"}],
    }
    output = {"type": "function_call_output", "call_id": "c", "output": "listing"}

    new = openai_reply({"input": [prompt], "tools": [exec_tool]})
    old = openai_reply({"input": [prompt], "tools": [shell_tool]})
    done = openai_reply({"input": [prompt, {"type": "function_call"}, output]})

    assert (new.tool, new.tool_input) == ("exec_command", {"cmd": "ls"})
    assert (old.tool, old.tool_input) == ("shell", {"command": ["bash", "-lc", "ls"]})
    assert done.text == "Done: listing"


def _post(url: str, body: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def test_hold_keeps_the_reply_until_released(real_sandbox: Sandbox) -> None:
    replies: list[dict[str, Any]] = []
    with FakeAnthropic().start() as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "HOLD"}]}
        client = threading.Thread(
            target=lambda: replies.append(_post(server.url + "/v1/messages", body))
        )
        client.start()
        server.wait_for(lambda reqs: len(reqs) == 1)
        client.join(timeout=0.3)
        held = client.is_alive()

        server.release()
        client.join(timeout=5)

    assert held
    assert replies[0]["content"] == [{"type": "text", "text": "OK"}]


@pytest.mark.parametrize("program", ["fake_anthropic.py", "fake_openai.py"])
def test_fake_program_prints_port_logs_and_stops_on_sigterm(
    program: str, real_sandbox: Sandbox
) -> None:
    log = real_sandbox.root / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(FAKES / program), "--port", "0", "--log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        path = "/v1/messages" if program == "fake_anthropic.py" else "/v1/responses"
        body = {"stream": False, "messages": [], "input": [], "model": "m"}
        reply = _post(f"http://127.0.0.1:{port}{path}", body)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=5)
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()

    assert reply["model"] == "m"
    assert [(r["method"], r["path"], r["body"]["model"]) for r in read_jsonl(log)] == [
        ("POST", path, "m")
    ]
    assert code == 0


# -- Claude Code ----------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.claude
def test_claude_print_runs_the_tool_and_fires_every_hook(
    real_claude: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    sandbox = real_sandbox
    settings, hooks_log = write_claude_settings(sandbox)
    env = claude_env(sandbox.home, real_fake_anthropic.port, sandbox.project)
    session_id = str(uuid.uuid4())

    result = run_harness(
        [
            real_claude,
            "-p",
            "RUN: echo hi > out.txt",
            "--session-id",
            session_id,
            "--settings",
            settings,
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "json",
        ],
        sandbox.project,
        env,
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session_id"] == session_id
    assert (sandbox.project / "out.txt").read_text() == "hi\n"
    hooks = read_jsonl(hooks_log)
    assert [h["hook_event_name"] for h in hooks] == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ]
    assert {h["session_id"] for h in hooks} == {session_id}
    assert {h["_env"]["CLAUDE_CODE_SESSION_ID"] for h in hooks} == {session_id}
    assert hooks[0]["source"] == "startup"
    assert hooks[1]["prompt"] == "RUN: echo hi > out.txt"
    assert (hooks[2]["tool_name"], hooks[2]["tool_input"]["command"]) == (
        "Bash",
        "echo hi > out.txt",
    )
    assert hooks[-1]["reason"] == "other"
    transcript = claude_transcript(sandbox.home, sandbox.project, session_id)
    assert hooks[0]["transcript_path"] == str(transcript)
    assert transcript.exists()
    requests = real_fake_anthropic.requests("/v1/messages")
    assert len(requests) == 2
    assert {r["headers"]["x-claude-code-session-id"] for r in requests} == {session_id}
    assert {r["headers"]["x-api-key"] for r in requests} == {DUMMY_ANTHROPIC_KEY}


@pytest.mark.e2e
@pytest.mark.claude
def test_claude_resume_sends_the_earlier_conversation(
    real_claude: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    sandbox = real_sandbox
    settings, hooks_log = write_claude_settings(sandbox)
    env = claude_env(sandbox.home, real_fake_anthropic.port, sandbox.project)
    session_id = str(uuid.uuid4())
    common: list[str | Path] = [
        "--settings",
        settings,
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "json",
    ]
    first = run_harness(
        [real_claude, "-p", "first prompt", "--session-id", session_id, *common],
        sandbox.project,
        env,
    )
    assert first.returncode == 0, first.stderr
    started = len(read_jsonl(hooks_log))

    second = run_harness(
        [real_claude, "--resume", session_id, "-p", "next", *common], sandbox.project, env
    )

    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["session_id"] == session_id
    conversation = user_texts(real_fake_anthropic.requests("/v1/messages")[-1]["body"]["messages"])
    assert (
        conversation.index("first prompt") < conversation.index('"OK"') < conversation.index("next")
    )
    resumed = read_jsonl(hooks_log)[started:]
    assert [h["hook_event_name"] for h in resumed] == [
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "SessionEnd",
    ]
    assert resumed[0]["source"] == "resume"
    assert {h["session_id"] for h in resumed} == {session_id}


@pytest.mark.e2e
@pytest.mark.claude
def test_claude_interactive_asks_permission_then_exits(
    real_claude: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    sandbox = real_sandbox
    settings, hooks_log = write_claude_settings(sandbox)
    env = claude_env(sandbox.home, real_fake_anthropic.port, sandbox.project)
    session_id = str(uuid.uuid4())
    program = PtyProgram(
        [
            real_claude,
            "--session-id",
            session_id,
            "--settings",
            settings,
            "--permission-mode",
            "manual",
        ],
        sandbox.project,
        env,
    )
    try:
        # Keystrokes typed once SessionStart ran are buffered by the terminal and not lost.
        wait_until(lambda: "SessionStart" in hook_events(hooks_log), 15, "SessionStart")
        # Keys typed right after SessionStart may arrive as one chunk, taken as a paste: press
        # Enter until the model is asked (the test failed under load).
        submit(program, real_fake_anthropic, "RUN: touch p2.txt")
        wait_until(lambda: "PermissionRequest" in hook_events(hooks_log), 10, "PermissionRequest")
        assert not (sandbox.project / "p2.txt").exists()
        # The hook runs before the dialog is drawn, and the dialog takes keys only some
        # milliseconds after it is drawn: an Enter sent earlier is lost. So press Enter until the
        # tool runs; an extra Enter lands on the empty prompt box, where it does nothing.
        wait_until(lambda: "proceed?" in program.screen(), 10, "the permission dialog")

        def approved() -> bool:
            program.type("\r")  # "1. Yes" is preselected
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                if "PostToolUse" in hook_events(hooks_log):
                    return True
                time.sleep(0.05)
            return False

        wait_until(approved, 10, "the tool to run after approval")
        wait_until(lambda: "Stop" in hook_events(hooks_log), 10, "Stop after approval")
        program.type("/exit\r")
        wait_until(lambda: "SessionEnd" in hook_events(hooks_log), 10, "SessionEnd")
        code = program.proc.wait(timeout=10)
    except BaseException:
        print(program.screen()[-3000:])
        print(hook_events(hooks_log))
        raise
    finally:
        program.close()

    assert code == 0
    assert (sandbox.project / "p2.txt").exists()
    hooks = read_jsonl(hooks_log)
    # Notification (permission_prompt) comes ~6 s after the dialog opens, only on a slow run.
    assert [h["hook_event_name"] for h in hooks if h["hook_event_name"] != "Notification"] == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ]
    assert {h["session_id"] for h in hooks} == {session_id}
    assert {h["_env"]["CLAUDE_PID"] for h in hooks} == {str(program.proc.pid)}
    assert hooks[3]["tool_input"]["command"] == "touch p2.txt"
    assert hooks[-1]["reason"] == "prompt_input_exit"


# -- codex and pi ---------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.codex
def test_codex_exec_runs_the_tool_and_fires_hooks(
    real_codex: Path, real_sandbox: Sandbox, real_fake_openai: FakeOpenAI
) -> None:
    sandbox = real_sandbox
    hooks_log = sandbox.root / "hooks.jsonl"
    env = codex_env(sandbox.home, real_fake_openai.port, sandbox.project, hooks_log=hooks_log)

    result = run_harness(
        [
            real_codex,
            "exec",
            "--skip-git-repo-check",
            "--json",
            "-s",
            "workspace-write",
            "--dangerously-bypass-hook-trust",
            "RUN: echo codex > codex.txt",
        ],
        sandbox.project,
        env,
    )

    assert result.returncode == 0, result.stderr
    assert (sandbox.project / "codex.txt").read_text() == "codex\n"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    thread_id = events[0]["thread_id"]
    assert events[-1]["type"] == "turn.completed"
    hooks = read_jsonl(hooks_log)
    assert [h["hook_event_name"] for h in hooks] == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
    ]
    assert {h["session_id"] for h in hooks} == {thread_id}
    requests = real_fake_openai.requests("/v1/responses")
    assert len(requests) == 2
    assert requests[1]["body"]["input"][-1]["type"] == "function_call_output"


@pytest.mark.e2e
@pytest.mark.pi
def test_pi_print_runs_the_tool(
    real_pi: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    sandbox = real_sandbox
    env = pi_env(sandbox.home, real_fake_anthropic.port, sandbox.project)

    result = run_harness(
        [real_pi, "--model", "fake/fake-model", "--mode", "json", "-p", "RUN: echo pi > pi.txt"],
        sandbox.project,
        env,
    )

    assert result.returncode == 0, result.stderr
    assert (sandbox.project / "pi.txt").read_text() == "pi\n"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert (events[0]["type"], events[-1]["type"]) == ("session", "agent_end")
    assert "tool_execution_end" in [e["type"] for e in events]
    sessions = list((sandbox.home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))
    assert [s.name.endswith(f"_{events[0]['id']}.jsonl") for s in sessions] == [True]
    requests = real_fake_anthropic.requests("/v1/messages")
    assert "bash" in [t["name"] for t in requests[0]["body"]["tools"]]

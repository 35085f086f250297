"""Discovery end to end: the real Claude Code, started outside volee in its own PTY, is found.

The daemon runs with ``VOLEE_CLAUDE_BIN`` = the real binary and the same HOME as the Claude
session, so ``claude agents --json --all`` sees it. Every ``volee ls`` sends a
``discovery.refresh`` first, which answers once a listing that started after it is applied.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import (
    Sandbox,
    claude_env,
    claude_hook_settings,
    claude_transcript,
    read_jsonl,
)
from tests.fakes.pty_program import PtyProgram, submit
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.claude]


@pytest.fixture
def daemon_env(
    real_claude: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> Iterator[dict[str, str]]:
    """A running daemon sharing HOME with the Claude sessions; yields the env of both."""
    env = claude_env(real_sandbox.home, real_fake_anthropic.port, real_sandbox.project)
    env["VOLEE_HOME"] = str(real_sandbox.root / "volee")
    env["VOLEE_CLAUDE_BIN"] = str(real_claude)
    log = (real_sandbox.root / "daemon.log").open("w")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(
            lambda: volee(env, "daemon", "status", check=False).returncode == 0, 45, "the daemon"
        )
        yield env
    finally:
        # SIGTERM, not `volee daemon stop`: that polls the pid, which stays (a zombie) until
        # this test reaps its child.
        daemon.terminate()
        try:
            daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        # Shown by pytest only when the test failed.
        print((real_sandbox.root / "daemon.log").read_text(errors="replace")[-6000:])


def volee(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def ls(env: dict[str, str]) -> list[dict[str, Any]]:
    """``volee ls --all --json`` (it refreshes discovery first)."""
    items: list[dict[str, Any]] = json.loads(volee(env, "ls", "--all", "--json").stdout)
    return items


def agent_of(env: dict[str, str], session: str) -> dict[str, Any] | None:
    return next((a for a in ls(env) if a["session_id"] == session), None)


def start_claude(
    sandbox: Sandbox, env: dict[str, str], real_claude: Path
) -> tuple[PtyProgram, str]:
    """Claude Code in a PTY with logging hooks; returns it and its session id once started."""
    hooks_log = sandbox.root / f"hooks-{time.monotonic_ns()}.jsonl"
    settings = sandbox.root / f"settings-{time.monotonic_ns()}.json"
    settings.write_text(json.dumps(claude_hook_settings(hooks_log)), encoding="utf-8")
    program = PtyProgram(
        [real_claude, "--settings", settings, "--permission-mode", "bypassPermissions"],
        sandbox.project,
        env,
    )
    started = wait_until(
        lambda: [h for h in read_jsonl(hooks_log) if h["hook_event_name"] == "SessionStart"],
        20,
        "SessionStart",
    )
    # The listing reads ~/.claude/sessions/<pid>.json: wait until Claude wrote it.
    wait_until(
        (sandbox.home / ".claude" / "sessions" / f"{program.proc.pid}.json").exists,
        10,
        "the session file",
    )
    return program, started[0]["session_id"]


def test_a_claude_session_started_outside_volee_is_followed_until_it_exits(
    real_claude: Path,
    real_sandbox: Sandbox,
    real_fake_anthropic: FakeAnthropic,
    daemon_env: dict[str, str],
) -> None:
    env = daemon_env
    program, session = start_claude(real_sandbox, env, real_claude)
    try:
        found = agent_of(env, session)  # one `volee ls`: one refresh
        assert found is not None, ls(env)
        assert (found["role"], found["launched_by_volee"], found["location"]) == (
            "independent",
            False,
            "terminal",
        )
        assert (found["cwd"], found["pid"], found["live"]) == (
            str(real_sandbox.project),
            program.proc.pid,
            True,
        )

        submit(program, real_fake_anthropic, "HOLD")
        wait_until(lambda: (agent_of(env, session) or {}).get("state") == "working", 15, "busy")
        real_fake_anthropic.release()
        wait_until(lambda: (agent_of(env, session) or {}).get("state") == "idle", 15, "idle")

        program.type("/exit\r")
        program.proc.wait(timeout=15)
        gone = wait_until(
            lambda: (a := agent_of(env, session)) and a["state"] == "stopped" and a, 10, "stopped"
        )
    except BaseException:
        print(program.screen()[-2000:])
        raise
    finally:
        program.close()
    assert gone["interrupted"] is None
    assert gone["action"] is None
    assert len([a for a in ls(env) if a["session_id"] == session]) == 1


def test_a_claude_session_killed_mid_turn_shows_as_interrupted_with_a_resume_action(
    real_claude: Path,
    real_sandbox: Sandbox,
    real_fake_anthropic: FakeAnthropic,
    daemon_env: dict[str, str],
) -> None:
    env = daemon_env
    program, session = start_claude(real_sandbox, env, real_claude)
    try:
        submit(program, real_fake_anthropic, "HOLD")
        wait_until(lambda: (agent_of(env, session) or {}).get("state") == "working", 15, "busy")
        program.kill()
    except BaseException:
        print(program.screen()[-2000:])
        raise
    finally:
        program.close()
        real_fake_anthropic.release()

    agent = wait_until(
        lambda: (a := agent_of(env, session)) and a["state"] == "stopped" and a, 10, "stopped"
    )
    assert (agent["interrupted"], agent["action"]) == ("crashed", "resume")
    # Never resumed on its own: volee did not launch it.
    assert agent["pid"] is None
    assert agent["location"] == "terminal"
    timeline = json.loads(volee(env, "timeline", agent["id"], "--json").stdout)
    assert not any(item["type"] == "host-started" for item in timeline)


def prompt_on_disk(sandbox: Sandbox, session: str) -> bool:
    """Whether Claude Code wrote a user message to the session's transcript (it queues it)."""
    path = claude_transcript(sandbox.home, sandbox.project, session)
    return path.exists() and any(e.get("type") == "user" for e in read_jsonl(path))


@pytest.mark.parametrize(
    "prompt_written",
    [
        True,
        False,
    ],
    ids=["resumed", "no-conversation"],
)
def test_volee_resume_continues_an_interrupted_outside_session_in_a_host(
    real_claude: Path,
    real_sandbox: Sandbox,
    real_fake_anthropic: FakeAnthropic,
    daemon_env: dict[str, str],
    prompt_written: bool,
) -> None:
    """Killed mid-turn outside volee, then ``volee resume``: the agent goes on in a host.

    Claude Code writes its transcript through a queue: killed within ~150 ms of the prompt,
    the session has no conversation and ``claude --resume`` ends at once ("No conversation
    found", exit 1); the case is made certain here by removing the transcript the kill would
    have left unwritten.
    """
    env = daemon_env
    program, session = start_claude(real_sandbox, env, real_claude)
    try:
        submit(program, real_fake_anthropic, "HOLD")
        wait_until(lambda: (agent_of(env, session) or {}).get("state") == "working", 15, "busy")
        if prompt_written:
            wait_until(lambda: prompt_on_disk(real_sandbox, session), 10, "the prompt on disk")
        program.kill()
    finally:
        program.close()
        real_fake_anthropic.release()
    if not prompt_written:
        claude_transcript(real_sandbox.home, real_sandbox.project, session).unlink(missing_ok=True)
    agent = wait_until(
        lambda: (a := agent_of(env, session)) and a["action"] == "resume" and a, 10, "interrupted"
    )

    def this_agent() -> dict[str, Any] | None:
        # By id: with no conversation to resume, the agent's session is a new one.
        return next((a for a in ls(env) if a["id"] == agent["id"]), None)

    volee(env, "resume", agent["id"])
    try:
        # volee's notice is the resumed turn's prompt: the fake model answers it at once.
        resumed = wait_until(
            lambda: (a := this_agent()) and a["state"] in ("done", "failed") and a,
            30,
            "the resumed turn to end or the session to fail",
        )
    except BaseException:
        print(json.dumps(ls(env), indent=1))
        print(volee(env, "timeline", agent["id"], check=False).stdout)
        raise
    finally:
        volee(env, "stop", agent["id"], check=False)

    history = volee(env, "timeline", agent["id"], check=False).stdout
    assert (resumed["state"], resumed["location"], resumed["cwd"]) == (
        "done",
        "host",
        str(real_sandbox.project),
    ), history
    assert (resumed["session_id"] == session) is prompt_written, history
    # With no conversation, the new session is told it remembers nothing (no "cut off").
    notice = (
        "Your process ended without closing the session"
        if prompt_written
        else "Your previous session ended before it saved anything"
    )
    assert any(notice in json.dumps(r.get("body")) for r in real_fake_anthropic.requests())
    # Recorded as volee's notice, never as the person's message.
    assert any("notice from volee" in line and notice in line for line in history.splitlines())
    # Still one agent: the killed session's leftover file registers no other.
    assert [a["id"] for a in ls(env)] == [agent["id"]], history


def ls_quietly(env: dict[str, str]) -> list[dict[str, Any]]:
    """``volee ls --all --json --no-refresh``: what the daemon knows, asking for nothing."""
    out = volee(env, "ls", "--all", "--json", "--no-refresh").stdout
    items: list[dict[str, Any]] = json.loads(out)
    return items


def discovery_status(env: dict[str, str]) -> dict[str, Any]:
    status = json.loads(volee(env, "daemon", "status", "--json").stdout)
    part: dict[str, Any] = status["extra"]["discovery"]
    return part


def test_the_session_registry_watch_finds_a_terminal_session_and_its_end_by_itself(
    daemon_env: dict[str, str], real_sandbox: Sandbox, real_claude: Path
) -> None:
    """No refresh and no interactive client (the seed's cadence would wait 30 s, the safety
    listing 300 s): Claude Code writing its session file is what makes volee list."""
    env = daemon_env
    wait_until(lambda: discovery_status(env)["listings"] >= 1, 15, "the first listing")
    before = discovery_status(env)
    assert before["watch"] == "on"
    program, session = start_claude(real_sandbox, env, real_claude)
    try:
        began = time.monotonic()

        def found() -> dict[str, Any] | None:
            return next((a for a in ls_quietly(env) if a["session_id"] == session), None)

        agent = wait_until(found, 20, "the session found by the watch")
        print(f"found {time.monotonic() - began:.1f} s after its session file was written")
        assert agent["location"] == "terminal"
        assert agent["pid"] == program.proc.pid
        after = discovery_status(env)
        assert after["changes"] > before["changes"]
        program.type("/exit\r")
        program.proc.wait(timeout=15)

        def stopped() -> bool:
            return any(a["session_id"] == session and a["state"] == "stopped"
                       for a in ls_quietly(env))  # fmt: skip

        wait_until(stopped, 20, "its end, by itself")
    finally:
        print(program.screen()[-2000:])
        program.close()


def test_with_the_list_shown_the_watch_alone_finds_a_session_and_its_kill(
    daemon_env: dict[str, str], real_sandbox: Sandbox, real_claude: Path
) -> None:
    """An interactive client subscribed (the tray's list shown) and the watches healthy: no
    clock lists (the wait is the safety listing's), and still a terminal session shows, and
    its end by kill -9 (its file left behind: only its pidfd tells), with no refresh."""
    from volee_desktop.ipc.client import Client
    from volee_desktop.paths import dirs

    env = daemon_env
    wait_until(lambda: discovery_status(env)["listings"] >= 1, 15, "the first listing")
    with Client.connect(dirs(env).socket, timeout=10) as shown:
        shown.request("subscribe.interactive", {"interactive": True})
        status = discovery_status(env)
        assert (status["interactive_clients"], status["cadence"]) == (1, "watch")
        assert status["wait"] == 300.0  # the safety listing, not the seed's 2-10 s
        program, session = start_claude(real_sandbox, env, real_claude)
        try:

            def found() -> dict[str, Any] | None:
                return next((a for a in ls_quietly(env) if a["session_id"] == session), None)

            agent = wait_until(found, 20, "the session found by the watch")
            assert agent["location"] == "terminal"
            program.kill()
            program.proc.wait(timeout=15)

            def stopped() -> bool:
                return any(a["session_id"] == session and a["state"] == "stopped"
                           for a in ls_quietly(env))  # fmt: skip

            wait_until(stopped, 20, "its end, told by its pidfd")
            assert discovery_status(env)["cadence"] == "watch"
        finally:
            print(program.screen()[-2000:])
            program.close()

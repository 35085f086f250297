"""Discovery of the REAL pi started in a terminal outside volee, with no Claude Code installed
(issue 16, item 4): found from its process and session file, done read from the file, woken
by the watch of pi's sessions folder (no refresh, no interactive client)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.harness_env import FAKE_MODEL, Sandbox, codex_env, pi_env
from tests.fakes.pty_program import PtyProgram, submit
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.pi]


def volee(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def quietly(env: dict[str, str]) -> list[dict[str, Any]]:
    """What the daemon knows, asking for no listing (``--no-refresh``)."""
    items: list[dict[str, Any]] = json.loads(volee(env, "ls", "--all", "--json", "--no-refresh"))
    return items


def _daemon_without_claude(env: dict[str, str], root: Path) -> Iterator[dict[str, str]]:
    """A real daemon with no Claude Code anywhere on its PATH; its log printed at the end."""
    env["VOLEE_HOME"] = str(root / "volee")
    env.pop("VOLEE_CLAUDE_BIN", None)
    env["PATH"] = "/usr/bin:/bin"  # no Claude Code anywhere
    log = (root / "daemon.log").open("w")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: Path(env["VOLEE_HOME"], "run", "volee.sock").exists(), 15, "daemon")
        yield env
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        print((root / "daemon.log").read_text(errors="replace")[-4000:])


@pytest.fixture
def pi_daemon(
    real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> Iterator[dict[str, str]]:
    env = pi_env(real_sandbox.home, real_fake_anthropic.port, real_sandbox.project)
    yield from _daemon_without_claude(env, real_sandbox.root)


def test_an_outside_pi_is_found_without_claude_code_and_shows_done_from_its_session_file(
    real_pi: Path,
    real_sandbox: Sandbox,
    real_fake_anthropic: FakeAnthropic,
    pi_daemon: dict[str, str],
) -> None:
    env = pi_daemon
    status = json.loads(volee(env, "daemon", "status", "--json"))["extra"]["discovery"]
    assert status["state"] == "on"
    assert status["claude"].startswith("off: Claude Code not found")
    program = PtyProgram([real_pi, "--model", f"fake/{FAKE_MODEL}"], real_sandbox.project, env)
    try:
        submit(program, real_fake_anthropic, "say hello")  # pi writes its file with its reply

        def pi_done() -> dict[str, Any] | None:
            return next(
                (a for a in quietly(env) if a["harness"] == "pi" and a["state"] == "done"), None
            )

        agent = wait_until(pi_done, 30, "the pi session, done, found by the watch")
        assert agent["pid"] == program.proc.pid
        assert agent["location"] == "terminal"
        assert not agent["session_id"].startswith("pid-")  # its own id, from its session file
    except BaseException:
        print("AGENTS", json.dumps(quietly(env)))
        for a in quietly(env):
            print("TIMELINE", volee(env, "timeline", a["id"]))
        raise
    finally:
        print(program.screen()[-2000:])
        program.close()
    wait_until(
        lambda: any(a["id"] == agent["id"] and a["state"] == "stopped" for a in quietly(env)),
        20,
        "its end (the exit watch)",
    )


@pytest.fixture
def codex_daemon(real_sandbox: Sandbox, real_fake_openai: FakeOpenAI) -> Iterator[dict[str, str]]:
    env = codex_env(real_sandbox.home, real_fake_openai.port, real_sandbox.project)
    yield from _daemon_without_claude(env, real_sandbox.root)


@pytest.mark.codex
def test_an_outside_codex_is_found_without_claude_code_and_shows_done_from_its_rollout(
    real_codex: Path,
    real_sandbox: Sandbox,
    real_fake_openai: FakeOpenAI,
    codex_daemon: dict[str, str],
) -> None:
    env = codex_daemon
    # --no-daemon: no shared background server (it would outlive the test).
    program = PtyProgram([real_codex, "--no-daemon", "-a", "never"], real_sandbox.project, env)
    try:
        wait_until(lambda: "›" in program.screen() or ">" in program.screen(), 30, "codex's box")
        submit(program, real_fake_openai, "say hello", "/v1/responses")

        def codex_done() -> dict[str, Any] | None:
            return next(
                (a for a in quietly(env) if a["harness"] == "codex" and a["state"] == "done"),
                None,
            )

        agent = wait_until(codex_done, 30, "the codex session, done, found by the watch")
        assert agent["pid"] == program.proc.pid
        assert agent["location"] == "terminal"
        assert not agent["session_id"].startswith("pid-")  # its own id, from its rollout
    except BaseException:
        print("AGENTS", json.dumps(quietly(env)))
        print(program.screen()[-2000:])
        raise
    finally:
        program.close()


@pytest.mark.codex
def test_an_outside_codex_waiting_for_an_approval_shows_waiting_with_its_command(
    real_codex: Path,
    real_sandbox: Sandbox,
    real_fake_openai: FakeOpenAI,
    codex_daemon: dict[str, str],
) -> None:
    env = codex_daemon
    program = PtyProgram(
        [real_codex, "--no-daemon", "-s", "workspace-write", "-a", "on-request"],
        real_sandbox.project,
        env,
    )
    prompt = (
        'MCP: exec_command {"cmd": "touch approved.txt", '
        '"sandbox_permissions": "require_escalated", "justification": "to make a file"}'
    )
    try:
        wait_until(lambda: "›" in program.screen(), 30, "codex's box")
        submit(program, real_fake_openai, prompt, "/v1/responses")
        wait_until(lambda: "would you like to run" in program.screen().lower(), 30, "its dialog")

        def waiting() -> dict[str, Any] | None:
            return next(
                (
                    a
                    for a in quietly(env)
                    if a["harness"] == "codex" and a["state"] == "needs-input"
                ),
                None,
            )

        agent = wait_until(waiting, 30, "the codex session, waiting, found by the watch")
        assert agent["detail"] == "permission for touch approved.txt"
        assert not (real_sandbox.project / "approved.txt").exists()
    except BaseException:
        print("AGENTS", json.dumps(quietly(env)))
        print(program.screen()[-2000:])
        raise
    finally:
        program.close()

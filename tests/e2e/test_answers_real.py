"""Answering the REAL Claude Code and codex (against the fake model APIs) through volee.

Claude Code 2.1.332 in ``manual`` mode and codex 0.171.0 with ``on-request`` approvals ask
before running a command; ``volee allow`` / ``volee deny`` answer on their rendered screen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.agents_rig import Agent, Volee
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox
from volee_desktop.hosts.launcher import HostClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def asks(volee: Volee, name: str, summary: str, dialog: str) -> Agent:
    """Wait until ``name`` asks ``summary`` and its dialog is on its rendered screen."""
    agent = volee.wait(
        name,
        lambda a: a["state"] == "needs-input" and (a["request"] or {}).get("summary") == summary,
        f"the request {summary!r}",
        timeout=40,
    )
    volee.wait(
        name,
        lambda _a: dialog in volee.cli("output", name).stdout,
        "its dialog on the screen",
        timeout=20,
    )
    return agent


# --- Claude Code ------------------------------------------------------------------------------


@pytest.fixture
def claude(claude_volee: Volee) -> Volee:
    return claude_volee


def spawn_manual(
    volee: Volee, project: Path, name: str, prompt: str, harness: str = "claude"
) -> str:
    mode = "manual" if harness == "claude" else "default"
    return volee.cli(
        "spawn", "--harness", harness, "--cwd", str(project), "--name", name,
        "--permission-mode", mode, "--", prompt,
    ).stdout.strip()  # fmt: skip


@pytest.mark.claude
@pytest.mark.parametrize("always", [False, True], ids=["once", "always"])
def test_claude_allow_runs_the_command(claude: Volee, real_sandbox: Sandbox, always: bool) -> None:
    project = real_sandbox.project
    spawn_manual(claude, project, "c1", "RUN: touch allowed.txt")
    agent = asks(claude, "c1", "Bash: touch allowed.txt", "Do you want to proceed?")
    assert agent["request"]["kind"] == "permission"
    assert agent["request"]["input"]["command"] == "touch allowed.txt"
    assert agent["project"]["folder"] == str(project)
    assert not (project / "allowed.txt").exists()

    # A message would answer the dialog: refused, nothing typed.
    sent = claude.cli("send", "c1", "no, do not run it", check=False)
    assert sent.returncode == 1
    assert "waits for an approval" in sent.stderr

    out = claude.cli("allow", "c1", *(["--always"] if always else [])).stdout
    word = "allow-always" if always else "allow"
    assert f"c1: {word} (Bash: touch allowed.txt)" in out
    claude.wait_state("c1", "done", timeout=30)
    assert (project / "allowed.txt").exists()
    assert claude.agent("c1")["request"] is None


@pytest.mark.claude
def test_claude_deny_does_not_run_it_and_the_agent_carries_on(
    claude: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    spawn_manual(claude, project, "c2", "RUN: touch denied.txt")
    asks(claude, "c2", "Bash: touch denied.txt", "Do you want to proceed?")

    claude.cli("deny", "c2", "--reason", "do not touch files; just say hello")

    done = claude.wait(
        "c2",
        lambda a: a["state"] == "done" and a["request"] is None,
        "the agent to carry on after the refusal",
        timeout=30,
    )
    assert not (project / "denied.txt").exists()
    timeline = claude.cli("timeline", "c2").stdout
    assert "request answered by human: deny" in timeline
    assert "you denied Bash: touch denied.txt" in timeline
    assert done["live"] is True


@pytest.mark.claude
@pytest.mark.parametrize(("key", "ran"), [(b"1", True), (b"\x1b", False)], ids=["yes", "esc"])
def test_claude_answered_in_its_own_terminal_then_a_later_allow_is_refused(
    claude: Volee, real_sandbox: Sandbox, key: bytes, ran: bool
) -> None:
    project = real_sandbox.project
    agent_id = spawn_manual(claude, project, "c3", "RUN: touch own.txt")
    request = asks(claude, "c3", "Bash: touch own.txt", "Do you want to proceed?")["request"]

    # The person answers in the agent's own terminal (attached), with Claude Code's keys:
    # "1" runs it (hooks say so); Esc refuses it and no hook fires (the screen says so).
    with HostClient(claude.record(agent_id)["socket"]).open_stream() as stream:
        stream.write(key)
        claude.wait("c3", lambda a: a["request"] is None, "the request to end", timeout=30)
    agent = claude.wait(
        "c3", lambda a: a["state"] in ("done", "idle"), "the turn to end", timeout=30
    )
    assert (project / "own.txt").exists() is ran
    if not ran:
        assert agent["detail"] == "answered in its terminal"

    late = claude.cli("allow", "c3", "--request", request["id"], check=False)
    assert late.returncode == 1
    assert "c3 asks nothing now" in late.stderr
    assert (project / "own.txt").exists() is ran


@pytest.mark.claude
def test_claude_output_shows_the_dialog_as_the_terminal_would(
    claude: Volee, real_sandbox: Sandbox
) -> None:
    spawn_manual(claude, real_sandbox.project, "c4", "RUN: touch shown.txt")
    asks(claude, "c4", "Bash: touch shown.txt", "Do you want to proceed?")

    screen = json.loads(claude.cli("output", "c4", "--json").stdout)

    lines = [line.strip() for line in screen["lines"]]
    assert "Do you want to proceed?" in lines
    assert "❯ 1. Yes" in lines
    assert "touch shown.txt" in lines
    assert screen["live"] is True
    claude.cli("deny", "c4")


# --- codex ------------------------------------------------------------------------------------

ESCALATED = (
    'MCP: exec_command {{"cmd": "{cmd}", "sandbox_permissions": "require_escalated", '
    '"justification": "{why}"}}'
)


@pytest.fixture
def codex(codex_volee: Volee) -> Volee:
    return codex_volee


@pytest.mark.codex
@pytest.mark.parametrize("always", [False, True], ids=["once", "always"])
def test_codex_allow_runs_it_and_send_is_refused_while_it_asks(
    codex: Volee, real_sandbox: Sandbox, always: bool
) -> None:
    project = real_sandbox.project
    prompt = ESCALATED.format(cmd="touch second.txt", why="to create second.txt")
    spawn_manual(codex, project, "x1", prompt, harness="codex")
    agent = asks(codex, "x1", "Bash: touch second.txt", "Would you like to run the following")
    assert agent["request"]["reason"] == "to create second.txt"

    # Before: `send x1 "no, do not run it"` approved it (Enter is codex's "Yes, proceed").
    sent = codex.cli("send", "x1", "no, do not run it", check=False)
    assert sent.returncode == 1
    assert "waits for an approval (Bash: touch second.txt)" in sent.stderr
    assert not (project / "second.txt").exists()

    out = codex.cli("allow", "x1", *(["--always"] if always else [])).stdout
    assert ("allow-always" in out) is always

    codex.wait_state("x1", "done", timeout=30)
    assert (project / "second.txt").exists()


@pytest.mark.codex
def test_codex_deny_does_not_run_it(codex: Volee, real_sandbox: Sandbox) -> None:
    project = real_sandbox.project
    prompt = ESCALATED.format(cmd="touch third.txt", why="to create third.txt")
    spawn_manual(codex, project, "x2", prompt, harness="codex")
    asks(codex, "x2", "Bash: touch third.txt", "Would you like to run the following")

    codex.cli("deny", "x2", "--reason", "say hello instead")

    codex.wait(
        "x2",
        lambda a: a["state"] in ("done", "idle") and a["request"] is None,
        "codex to carry on",
        timeout=30,
    )
    assert not (project / "third.txt").exists()
    assert "request answered by human: deny" in codex.cli("timeline", "x2").stdout


QUESTION = (
    'MCP: AskUserQuestion {"questions": [{"question": "Which database should we use?", '
    '"header": "Database", "options": [{"label": "Postgres", "description": "a server"}, '
    '{"label": "SQLite", "description": "a file"}], "multiSelect": false}]}'
)


@pytest.mark.claude
@pytest.mark.parametrize(
    ("args", "answered"), [(["2"], '=\\"SQLite\\"'), (["--reply", "MySQL"], '=\\"MySQL\\"')]
)
def test_claude_question_answered_by_option_or_reply(
    claude: Volee,
    real_sandbox: Sandbox,
    real_fake_anthropic: FakeAnthropic,
    args: list[str],
    answered: str,
) -> None:
    spawn_manual(claude, real_sandbox.project, "q1", QUESTION)
    agent = asks(
        claude, "q1", "Which database should we use? (Postgres / SQLite)", "Type something"
    )
    assert agent["request"]["kind"] == "question"
    assert agent["request"]["options"] == ["Postgres", "SQLite"]
    assert "asks a question" in claude.cli("send", "q1", "SQLite", check=False).stderr

    claude.cli("answer", "q1", *args)

    claude.wait_state("q1", "done", timeout=30)
    log = (real_sandbox.root / "anthropic.jsonl").read_text()
    assert f'Which database should we use?\\"{answered}' in log

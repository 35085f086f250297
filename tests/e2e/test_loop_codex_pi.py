"""``volee log`` and the outcome with the REAL codex and pi (against the fake model APIs).

volee finds each harness's own session file (codex's rollout under CODEX_HOME, pi's session
under ~/.pi) from the session id the harness reported, and reads the tool call and the reply.
"""

from __future__ import annotations

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.harness_env import FAKE_MODEL, Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.mark.codex
def test_codex_log_shows_the_shell_call_and_the_reply(
    codex_volee: Volee, real_sandbox: Sandbox
) -> None:
    codex_volee.cli(
        "spawn", "--harness", "codex", "--cwd", str(real_sandbox.project), "--name", "x1",
        "--permission-mode", "workspace-write", "--", "RUN: echo codex > codex.txt",
    )  # fmt: skip
    codex_volee.wait_state("x1", "done", timeout=30)
    entries = codex_volee.log_to_reply("x1")
    assert entries[0] == {
        "kind": "user",
        "text": "RUN: echo codex > codex.txt",
        "at": entries[0]["at"],
    }
    tool = next(e for e in entries if e["kind"] == "tool")
    assert tool["tool"] == "exec_command"
    assert tool["input"] == {"cmd": "echo codex > codex.txt"}
    assert tool["error"] is False
    assert entries[-1]["kind"] == "assistant"
    listed = codex_volee.wait("x1", lambda a: a["last_message"] is not None, "last message")
    assert str(listed["last_message"]).startswith("Done:")
    assert listed["change"] is None  # not a git folder


@pytest.mark.pi
def test_pi_log_shows_the_bash_call_and_the_reply(pi_volee: Volee, real_sandbox: Sandbox) -> None:
    pi_volee.cli(
        "spawn", "--harness", "pi", "--cwd", str(real_sandbox.project), "--name", "p1",
        "--model", f"fake/{FAKE_MODEL}", "--", "RUN: echo pi > pi.txt",
    )  # fmt: skip
    pi_volee.wait_state("p1", "done", timeout=30)
    entries = pi_volee.log_to_reply("p1")
    assert [e["kind"] for e in entries] == ["user", "tool", "assistant"]
    assert entries[1]["tool"] == "bash"
    assert entries[1]["result"] is not None
    assert str(entries[2]["text"]).startswith("Done:")

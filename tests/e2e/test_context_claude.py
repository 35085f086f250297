"""The REAL Claude Code's status line tells volee its context share and cost, while the
person's own status line still shows (against the fake Anthropic API, whose usage grows with
the conversation as the real one does)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from tests import polling
from tests.e2e.agents_rig import Volee
from tests.fakes.harness_env import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(90)]

OWN_LINE = "MY-OWN-STATUS-LINE"


@pytest.fixture
def volee(
    real_claude_env: dict[str, str], start_volee: Callable[..., Volee], real_sandbox: Sandbox
) -> Volee:
    # The person's own status line, in their own settings: it reads the same input.
    seen = real_sandbox.home / "own-status-input.json"
    settings = real_sandbox.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    command = f"cat > {seen}; printf '{OWN_LINE}'"
    settings.write_text(json.dumps({"statusLine": {"type": "command", "command": command}}))
    return start_volee(real_claude_env)


def test_the_context_share_moves_as_the_conversation_grows(
    volee: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    volee.cli(
        "spawn",
        "--cwd",
        str(project),
        "--name",
        "ctx",
        "--permission-mode",
        "bypassPermissions",
        "--",
        "RUN: echo one > one.txt",
    ).stdout.strip()
    volee.wait_state("ctx", "done", timeout=40)
    first = volee.wait(
        "ctx", lambda a: bool(a.get("context")), "a context share from the status line", 30
    )
    assert 0 < first["context"] < 1
    assert first["cost_usd"] is not None
    assert first["cost_usd"] >= 0

    # A long message: every request after it holds it, so the window fills further.
    filler = " ".join(f"word{i}" for i in range(4000))
    volee.cli("send", "ctx", f"RUN: echo {filler} > two.txt")
    polling.wait_until(lambda: (project / "two.txt").exists(), timeout=40, what="the 2nd turn")
    grown = volee.wait(
        "ctx",
        lambda a: (a.get("context") or 0) > first["context"],
        "a larger context share",
        40,
    )
    print(f"context share: {first['context']:.2f} -> {grown['context']:.2f}")
    listed = volee.cli("ls", "--no-refresh").stdout
    assert "CONTEXT" in listed
    row = next(line for line in listed.splitlines() if line.split()[1:2] == ["ctx"])
    assert re.search(r"  [1-9]\d*% \$\d+\.\d\d  ", row), listed

    # The person's own status line still ran, on the same input, and is what shows.
    seen = json.loads((real_sandbox.home / "own-status-input.json").read_text())
    assert "context_window" in seen
    assert OWN_LINE in volee.cli("output", "ctx").stdout  # the rendered screen

"""The whole loop with the REAL Claude Code (against the fake Anthropic API), through the CLI.

``volee spawn --worktree`` -> Claude Code runs the fake model's ``RUN:`` line, which commits in
its worktree -> ``volee log`` shows the tool call with its result, read from Claude Code's own
transcript -> ``volee ls --json`` shows the change and the last message -> ``volee merge``
puts the commit on main.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.daemon.gitrepos import GIT_ENV, git
from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(90)]

COMMIT = "RUN: printf 'one\\ntwo\\n' > f.txt && git add f.txt && git commit -qm 'add f.txt'"


@pytest.fixture
def volee(
    real_claude_env: dict[str, str],
    start_volee: Callable[..., Volee],
    real_sandbox: Sandbox,
    real_fake_anthropic: FakeAnthropic,
) -> Volee:
    project = real_sandbox.project
    git(project, "init", "-q", "-b", "main")
    (project / "README").write_text("hello\n")
    (project / ".gitignore").write_text(".claude/\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    # The worktree volee makes is a folder of its own to Claude Code: trusted upfront too.
    worktree = project / ".claude" / "worktrees" / "c1"
    claude_env(real_sandbox.home, real_fake_anthropic.port, worktree)
    return start_volee({**real_claude_env, **GIT_ENV})


def test_a_real_claude_commits_the_log_shows_it_and_merge_puts_it_on_main(
    volee: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    volee.cli(
        "spawn", "--cwd", str(project), "--worktree", "--name", "c1",
        "--permission-mode", "bypassPermissions", "--", COMMIT,
    )  # fmt: skip
    agent = volee.wait_state("c1", "done", timeout=45)
    worktree = Path(agent["worktree"])
    tip = git(worktree, "rev-parse", "HEAD")
    assert git(worktree, "log", "-1", "--format=%s") == "add f.txt"

    entries = volee.log_to_reply("c1")
    assert entries[0]["kind"] == "user"
    assert entries[0]["text"] == COMMIT
    tool = next(e for e in entries if e["kind"] == "tool")
    assert tool["tool"] == "Bash"
    assert "git commit -qm 'add f.txt'" in tool["input"]["command"]
    assert tool["result"] is not None
    assert tool["error"] is False
    assert entries[-1]["kind"] == "assistant"
    assert entries[-1]["text"].startswith("Done:")
    text = volee.cli("log", "c1", "--tail", "2").stdout
    assert "Bash:" in text
    assert text.splitlines()[-1].startswith("agent: Done:")

    listed = volee.wait(
        "c1", lambda a: a["change"] is not None and a["last_message"] is not None, "outcome"
    )
    assert listed["change"] == {"files": 1, "added": 2, "removed": 0, "uncommitted": False}
    assert listed["last_message"].startswith("Done:")

    merged = volee.cli("merge", "c1").stdout
    assert "merged volee/c1 into main (fast-forward, 1 commit)" in merged
    assert git(project, "rev-parse", "main") == tip
    assert (project / "f.txt").read_text() == "one\ntwo\n"
    assert worktree.is_dir()  # nothing else removed

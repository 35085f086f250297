"""Review in the app with the REAL Claude Code (against the fake Anthropic API) and a real daemon.

``volee spawn --worktree`` -> Claude Code commits in its worktree -> the agent window's Changes
view (over the app's own link to the daemon) shows the file and its diff -> a line comment
reaches the agent as one message (its transcript shows it) -> Merge puts the commit on main and
removes nothing else.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"

from tests.daemon.gitrepos import GIT_ENV, git
from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env
from volee_desktop.ipc.methods import Method

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(120)]

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
    worktree = project / ".claude" / "worktrees" / "c1"
    claude_env(real_sandbox.home, real_fake_anthropic.port, worktree)
    return start_volee({**real_claude_env, **GIT_ENV})


def _link_call(socket: Path) -> Callable[[Method, dict[str, Any]], Coroutine[Any, Any, Any]]:
    """The app's link to the real daemon, one connection a call (run by ``asyncio.run``)."""
    from volee_desktop.app.link import IpcDaemonLink

    async def call(method: Method, params: dict[str, Any]) -> Any:
        link = await IpcDaemonLink.connect(socket)
        try:
            return await link.call(method, params)
        finally:
            await link.close()

    return call


class Runner:
    """The view's ``spawn``: runs a coroutine to its end, and what it spawns in turn."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pending: list[asyncio.Task[None]] = []

    def __call__(self, coro: Coroutine[Any, Any, None], _what: str) -> None:
        if self.loop.is_running():
            self.pending.append(self.loop.create_task(coro))
            return
        self.loop.run_until_complete(coro)
        while self.pending:
            self.loop.run_until_complete(self.pending.pop(0))


def test_review_a_real_claudes_commit_comment_on_a_line_and_merge_it(
    volee: Volee, real_sandbox: Sandbox, qtbot: Any
) -> None:
    from volee_desktop.app.changes_view import ChangesView

    project = real_sandbox.project
    volee.cli(
        "spawn", "--cwd", str(project), "--worktree", "--name", "c1",
        "--permission-mode", "bypassPermissions", "--", COMMIT,
    )  # fmt: skip
    agent = volee.wait_state("c1", "done", timeout=45)
    worktree = Path(agent["worktree"])
    tip = git(worktree, "rev-parse", "HEAD")

    view = ChangesView(agent["id"], "c1")
    qtbot.addWidget(view)
    view.folder = str(worktree)
    view.call = _link_call(volee.dirs.socket)
    view.spawn = runner = Runner()
    view.load()
    assert view.files.topLevelItemCount() == 1
    assert "1 file, +2 −0" in view.summary.text()
    lines = view.diff.toPlainText().splitlines()
    assert "+two" in lines
    cursor = view.diff.textCursor()
    cursor.setPosition(view.diff.document().findBlockByNumber(lines.index("+two")).position())
    view.diff.setTextCursor(cursor)
    view.comment.setText("say three here")
    view.add_comment()
    view.confirm = lambda _title, _text, buttons: buttons[0]
    view.send()
    assert "Sent your comments to c1" in view.status.text()
    comment = "Comments on your change:\nf.txt:2: say three here"
    volee.wait(
        "c1",
        lambda a: a["state"] == "done" and a["detail"] == "OK",
        "the comments' turn",
        timeout=30,
    )
    entries = [json.loads(line) for line in volee.cli("log", "c1", "--json").stdout.splitlines()]
    assert any(e["kind"] == "user" and comment in e["text"] for e in entries)

    view.merge()
    assert "Merged volee/c1 into main (fast-forward, 1 commit)" in view.status.text()
    assert git(project, "rev-parse", "main") == tip
    assert (project / "f.txt").read_text() == "one\ntwo\n"
    assert worktree.is_dir()  # nothing else removed
    assert "no change to merge" in view.summary.text()  # read again after the merge
    runner.loop.close()

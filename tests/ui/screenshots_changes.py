"""Takes docs/screenshots/changes.png: an agent window's Changes view on a throwaway real-X desktop.

    .venv/bin/python tests/ui/screenshots_changes.py [out-folder]

Xvfb (tests/ui/desktop.py); the window is the app's, drawn by Qt's xcb platform.  The change is
a real git repository's: the agent's worktree with two commits, read by the daemon's own git
code (``agents.changes``) behind the fake daemon link; two line comments are waiting to be sent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

API = """def refresh(session):
    token = session.token
    if token.expired:
        return None
    return token
"""
API_FIXED = """def refresh(session):
    token = session.token
    if not token.expired:
        return token
    token = session.renew()
    session.save(token)
    return token
"""
TEST = """from api import refresh


def test_an_expired_token_is_renewed(session):
    session.token.expired = True
    assert refresh(session) is session.renew.return_value
"""


def inner(root: Path, ready: Path) -> None:
    from PySide6.QtWidgets import QApplication

    from tests.daemon.gitrepos import commit_file, git, make_repo
    from tests.fakes.app_link import FakeDaemonLink, World
    from volee_desktop.app.agent_window import AgentWindow
    from volee_desktop.core import events as ev
    from volee_desktop.core.ids import AGENT
    from volee_desktop.core.model import Harness, Location
    from volee_desktop.core.states import AgentState
    from volee_desktop.daemon.missions.changes import changes
    from volee_desktop.ipc.methods import Method

    repo = make_repo(root, "shop-api", remote=False)
    commit_file(repo, "api.py", API)
    tree = root / "shop-api-token-refresh"
    git(repo, "worktree", "add", "-q", "-b", "volee/token-refresh", str(tree))
    (tree / "api.py").write_text(API_FIXED)
    git(tree, "commit", "-qam", "Renew an expired token instead of giving up")
    (tree / "tests").mkdir()
    commit_file(tree, "tests/test_api.py", TEST)
    link = FakeDaemonLink()
    world = World(link)
    agent = world.ids.make(AGENT)
    link.push(
        ev.AgentRegistered(
            at=world.tick(), agent=agent, name="token-refresh", harness=Harness.CLAUDE,
            cwd=str(tree), worktree=str(tree), repo=str(repo), branch="volee/token-refresh",
            location=Location.HOST, state=AgentState.DONE,
            detail="Done: expired tokens are renewed; 1 test added",
        )
    )  # fmt: skip
    link.handlers[Method.AGENTS_CHANGES] = lambda p: changes(
        tree, "main", "volee/token-refresh", p["diff"]
    )
    loop = asyncio.new_event_loop()

    def run(coro: Coroutine[Any, Any, None], _what: str) -> None:
        loop.run_until_complete(coro)

    app = QApplication([])
    window = AgentWindow(link.registry.agents[agent])
    window.changes.call = link.call
    window.changes.spawn = run
    window.set_screen("(its screen)")
    window.resize(940, 640)
    window.move(20, 20)
    window.show()
    window.show_changes()
    view = window.changes
    view.show_file("api.py")
    lines = view.diff.toPlainText().splitlines()
    for line, text in (
        ("+    session.save(token)", "save it only once the renewal succeeded"),
        ("+    token = session.renew()", "what if renew() raises? say so in a test"),
    ):
        cursor = view.diff.textCursor()
        cursor.setPosition(view.diff.document().findBlockByNumber(lines.index(line)).position())
        view.diff.setTextCursor(cursor)
        view.comment.setText(text)
        view.add_comment()
    view.say("Merge, Discard and Send ask first; what the daemon refuses is said here.")
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    ready.write_text("ready")
    while ready.exists():
        app.processEvents()
        time.sleep(0.05)


def main() -> None:
    from ui import desktop as dt

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    desktop = dt.Desktop(width=1000, height=700, tray=False)
    root = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    ready = root / "ready"
    env = dict(desktop.env, VOLEE_HOME=str(root / "home"))
    child = subprocess.Popen([sys.executable, __file__, "--inner", str(root), str(ready)], env=env)
    try:
        dt.poll("the window shown", ready.exists, 90)
        window = desktop.run("xdotool", "search", "--onlyvisible", "--name", "token-refresh")
        path = out / "changes.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        desktop.run("import", "-window", window.split()[0], str(path))
        print(path)
    finally:
        ready.unlink(missing_ok=True)
        child.wait(timeout=20)
        desktop.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
        inner(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()

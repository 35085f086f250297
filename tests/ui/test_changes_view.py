"""The Changes view of an agent window, on a real git repository behind the fake daemon link:
``agents.changes``/``merge``/``discard`` answered by the daemon's own git code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.gitrepos import commit_file, git, make_repo
from tests.fakes.app_link import FakeDaemonLink, World
from tests.fakes.fake_github import FakeGitHub
from volee_desktop.app.changes_view import PR_TIP, line_places, split_diff
from volee_desktop.app.errors import LinkError
from volee_desktop.app.notify_policy import REVIEW_CHOICE, Kind
from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT
from volee_desktop.core.model import Harness, Location
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.errors import Refused
from volee_desktop.daemon.forge import Forge
from volee_desktop.daemon.missions.changes import changes
from volee_desktop.daemon.missions.pulls import open_pull_request
from volee_desktop.daemon.missions.review import Where, discard, loss, lost_text, merge
from volee_desktop.ipc.methods import Method


def _git_daemon(link: FakeDaemonLink, repo: Path, tree: Path, branch: str) -> None:
    """The fake daemon answers with the real daemon's git functions on ``repo``."""
    where = Where(str(tree), str(repo), branch, "main")

    def refusing(fn: Any) -> Any:
        def call(params: dict[str, Any]) -> Any:
            try:
                return fn(params)
            except Refused as exc:
                raise LinkError(f"refused: {exc}") from exc

        return call

    def discarding(params: dict[str, Any]) -> dict[str, Any]:
        agent = link.registry.agents[params["agent"]]
        lost = loss(agent, where)
        if not params.get("dry_run"):
            discard(str(repo), lost)
        return {"lost": lost, "text": lost_text(agent.name, lost, not params.get("dry_run"))}

    link.handlers[Method.AGENTS_CHANGES] = lambda p: changes(tree, "main", branch, p["diff"])
    link.handlers[Method.AGENTS_MERGE] = refusing(
        lambda p: merge(where, squash=p["squash"], message=p.get("message") or "squashed")
    )
    link.handlers[Method.AGENTS_DISCARD] = refusing(discarding)
    link.handlers[Method.AGENTS_OPEN_PR] = refusing(
        lambda p: {
            "title": "fixer: fix the check",
            **open_pull_request(
                str(repo),
                branch,
                "main",
                forge,
                title="fixer: fix the check",
                body="",
                dry_run=p.get("dry_run", False),
            ),
        }
    )


def forge() -> Forge:
    """The daemon's forge client as a person's machine without a token has it."""
    return Forge.from_environment()


@pytest.fixture
def worked(tmp_path: Path, link: FakeDaemonLink, world: World) -> tuple[str, Path, Path]:
    """An agent done in its own worktree (branch ``fix``) with two commits on it."""
    repo = make_repo(tmp_path, remote=False)
    tree = tmp_path / "wt-fix"
    git(repo, "worktree", "add", "-q", "-b", "fix", str(tree))
    commit_file(tree, "api.py", "def check(x):\n    return x > 0\n")
    (tree / "README").write_text("hello\nworld\n")
    git(tree, "commit", "-qam", "readme")
    agent = world.ids.make(AGENT)
    link.push(
        ev.AgentRegistered(
            at=world.tick(),
            agent=agent,
            name="fixer",
            harness=Harness.CLAUDE,
            cwd=str(tree),
            worktree=str(tree),
            repo=str(repo),
            branch="fix",
            location=Location.HOST,
            state=AgentState.DONE,
        )
    )
    _git_daemon(link, repo, tree, "fix")
    return agent, repo, tree


def _open(controller: Any, qtbot: Any, agent: str) -> Any:
    controller.actions.review_agent(agent)
    window = controller.windows[agent]
    view = window.changes
    assert window.tabs.currentWidget() is view
    qtbot.waitUntil(lambda: view.files.topLevelItemCount() == 2, timeout=5000)
    return view


def test_the_diff_is_cut_per_file_with_each_lines_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    git(repo, "checkout", "-qb", "b")
    (repo / "README").write_text("one\nhello\n")
    commit_file(repo, "naïve.py", "a\nb\n")
    git(repo, "commit", "-qam", "readme")
    parts = split_diff(str(changes(repo, "main", "b", True)["diff"]))
    assert sorted(parts) == ["README", "naïve.py"]
    places = line_places(parts["README"])
    lines = parts["README"].splitlines()
    assert places[lines.index("+one")] == 1
    assert places[lines.index(" hello")] == 2
    assert all(p is None for p, line in zip(places, lines, strict=True) if line[:1] not in "+- ")


def test_review_shows_each_files_diff_and_sends_line_comments_as_one_message(
    controller: Any, link: FakeDaemonLink, worked: Any, qtbot: Any
) -> None:
    agent, _repo, _tree = worked
    view = _open(controller, qtbot, agent)
    assert "2 files, +3 −0" in view.summary.text()
    assert "fix into main" in view.summary.text()
    view.show_file("api.py")
    assert "+def check(x):" in view.diff.toPlainText()
    assert "README" not in view.diff.toPlainText()
    assert not view.add.isEnabled()  # no line picked yet
    cursor = view.diff.textCursor()
    block = view.diff.document().findBlockByNumber(
        view.diff.toPlainText().splitlines().index("+    return x > 0")
    )
    cursor.setPosition(block.position())
    view.diff.setTextCursor(cursor)
    assert view.place() == "api.py:2"
    view.comment.setText("this check is inverted")
    view.add_comment()
    view.show_file("README")
    lines = view.diff.toPlainText().splitlines()
    cursor.setPosition(view.diff.document().findBlockByNumber(lines.index("+world")).position())
    view.diff.setTextCursor(cursor)
    view.comment.setText("say more")
    view.add_comment()
    asked: list[str] = []
    view.confirm = lambda _t, text, buttons: asked.append(text) or buttons[0]
    view.send()
    qtbot.waitUntil(lambda: "Sent your comments" in view.status.text(), timeout=5000)
    text = link.last(Method.AGENTS_SEND).params["text"]
    assert text == (
        "Comments on your change:\napi.py:2: this check is inverted\nREADME:2: say more"
    )
    assert text in asked[0]
    assert view.comment_list.count() == 0


def test_merge_confirms_then_puts_the_commits_on_main_and_a_second_is_refused_in_the_view(
    controller: Any, worked: Any, qtbot: Any
) -> None:
    agent, repo, _tree = worked
    view = _open(controller, qtbot, agent)
    view.confirm = lambda *_: None  # Cancel: nothing is asked of the daemon
    view.merge()
    assert git(repo, "rev-list", "--count", "main") == "1"
    asked: list[str] = []
    view.confirm = lambda _t, text, buttons: asked.append(text) or buttons[0]
    view.merge()
    qtbot.waitUntil(lambda: "Merged fix into main" in view.status.text(), timeout=5000)
    assert "Merge fix into main (2 files, +3 −0)?" in asked[0]
    assert git(repo, "rev-list", "--count", "main") == "3"
    assert git(repo, "rev-parse", "main") == git(repo, "rev-parse", "fix")
    qtbot.waitUntil(lambda: "no change to merge" in view.summary.text(), timeout=5000)
    view.merge()
    qtbot.waitUntil(lambda: "Not merged" in view.status.text(), timeout=5000)
    assert "nothing to merge" in view.status.text()
    assert "c92a2a" in view.status.styleSheet()


def test_discard_says_what_is_lost_first_then_removes_worktree_and_branch(
    controller: Any, worked: Any, qtbot: Any
) -> None:
    agent, repo, tree = worked
    view = _open(controller, qtbot, agent)
    (tree / "notes.txt").write_text("draft\n")
    asked: list[str] = []
    view.confirm = lambda _t, text, _b: asked.append(text) and None
    view.discard()
    qtbot.waitUntil(lambda: bool(asked), timeout=5000)
    assert "2 commits not on main and 1 uncommitted file would be lost" in asked[0]
    assert tree.is_dir()  # refused by the person: nothing removed
    view.confirm = lambda _t, _text, buttons: buttons[0]
    view.discard()
    qtbot.waitUntil(lambda: "Discarded fixer" in view.status.text(), timeout=5000)
    assert not tree.exists()
    assert "fix" not in git(repo, "branch", "--list", "fix")
    assert not view.buttons["merge"].isEnabled()


def test_open_pr_without_a_remote_is_refused_in_the_view_before_anything_is_asked(
    controller: Any, link: FakeDaemonLink, worked: Any, qtbot: Any
) -> None:
    agent, _repo, _tree = worked
    view = _open(controller, qtbot, agent)
    assert view.buttons["pr"].isEnabled()
    assert view.buttons["pr"].toolTip() == PR_TIP
    asked: list[str] = []
    view.confirm = lambda _t, text, buttons: asked.append(text) or buttons[0]
    view.buttons["pr"].click()
    qtbot.waitUntil(lambda: "No pull request" in view.status.text(), timeout=5000)
    assert "has no remote to push fix to" in view.status.text()
    assert asked == []
    assert [c.params for c in link.calls if c.method == Method.AGENTS_OPEN_PR] == [
        {"agent": agent, "dry_run": True}
    ]


def test_open_pr_confirms_then_pushes_and_shows_the_pull_requests_address(
    controller: Any, link: FakeDaemonLink, world: World, qtbot: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, memory_keyring: Any,
) -> None:  # fmt: skip
    github = FakeGitHub(token="ghp_secret").start()
    monkeypatch.setenv("VOLEE_GITHUB_API", github.url)
    memory_keyring.set_password("volee", "github", "ghp_secret")
    repo = make_repo(tmp_path / "gh", slug="acme/widget")
    tree = tmp_path / "wt-pr"
    git(repo, "worktree", "add", "-q", "-b", "fix", str(tree))
    commit_file(tree, "api.py", "x = 1\n")
    tip = commit_file(tree, "b.py", "y = 2\n")
    agent = world.ids.make(AGENT)
    link.push(
        ev.AgentRegistered(
            at=world.tick(), agent=agent, name="fixer", harness=Harness.CLAUDE, cwd=str(tree),
            worktree=str(tree), repo=str(repo), branch="fix", location=Location.HOST,
            state=AgentState.DONE,
        )
    )  # fmt: skip
    _git_daemon(link, repo, tree, "fix")
    try:
        view = _open(controller, qtbot, agent)
        view.confirm = lambda *_: None  # Cancel: nothing pushed
        view.buttons["pr"].click()
        qtbot.waitUntil(lambda: Method.AGENTS_OPEN_PR in link.methods(), timeout=5000)
        asked: list[str] = []
        view.confirm = lambda _t, text, buttons: asked.append(text) or buttons[0]
        view.buttons["pr"].click()
        qtbot.waitUntil(lambda: "opened pull request #1" in view.status.text(), timeout=5000)
        assert asked == [
            "Open PR 'fixer: fix the check': pushes fix (2 commits) to origin and opens a "
            "pull request into main on acme/widget?"
        ]
        assert git(tmp_path / "gh" / "repo.git", "rev-parse", "fix") == tip  # pushed
        assert github.pulls["acme/widget"][0]["title"] == "fixer: fix the check"
        url = "https://github.com/acme/widget/pull/1"
        assert f'<a href="{url}">{url}</a>' in view.status.text()
    finally:
        github.close()


def test_open_folder_says_what_it_opened(controller: Any, worked: Any, qtbot: Any) -> None:
    agent, _repo, tree = worked
    view = _open(controller, qtbot, agent)
    opened: list[str] = []
    view.open_folder_with = lambda folder: opened.append(folder) or f"Opened {folder}."
    view.open()
    assert opened == [str(tree)]
    assert view.status.text() == f"Opened {tree}."


def test_a_refused_read_is_said_in_the_view(
    controller: Any, link: FakeDaemonLink, worked: Any, qtbot: Any
) -> None:
    agent, _repo, _tree = worked
    link.errors[Method.AGENTS_CHANGES] = "fixer works on main itself: no branch of its own"
    controller.actions.review_agent(agent)
    view = controller.windows[agent].changes
    qtbot.waitUntil(lambda: "No change to show" in view.summary.text(), timeout=5000)
    assert "no branch of its own" in view.summary.text()
    assert not view.buttons["merge"].isEnabled()


def test_a_done_notification_offers_review_which_opens_the_changes_view(
    controller: Any, link: FakeDaemonLink, world: World, worked: Any, sink: Any, qtbot: Any
) -> None:
    agent, _repo, _tree = worked
    plain = world.agent("plain", AgentState.WORKING, cwd="/home/me/notgit")
    controller.notifications.set_settings(replace(controller.notifications.settings, done=True))
    world.state(agent, AgentState.WORKING)
    world.state(agent, AgentState.DONE, "Done: fixed it")
    world.state(plain, AgentState.DONE, "Done too")
    qtbot.waitUntil(lambda: len(sink.notices) == 2, timeout=5000)
    done = next(n for n in sink.notices if n.agent == agent)
    assert done.kind is Kind.DONE
    assert done.choices == ((REVIEW_CHOICE, "Review"),)
    assert next(n for n in sink.notices if n.agent == plain).choices == ()
    controller.notification_action(done, REVIEW_CHOICE)
    window = controller.windows[agent]
    assert window.tabs.currentWidget() is window.changes
    qtbot.waitUntil(lambda: window.changes.files.topLevelItemCount() == 2, timeout=5000)
    assert link.last(Method.AGENTS_CHANGES).params == {"agent": agent, "diff": True}


def test_uncommitted_files_are_marked_and_a_moved_base_offers_to_ask_for_a_rebase(
    controller: Any, link: FakeDaemonLink, worked: Any, qtbot: Any
) -> None:
    agent, repo, tree = worked
    (tree / "draft.md").write_text("todo\n")
    commit_file(repo, "later.txt")  # main moves on
    controller.actions.review_agent(agent)
    view = controller.windows[agent].changes
    qtbot.waitUntil(lambda: view.files.topLevelItemCount() == 3, timeout=5000)
    row = view.files.topLevelItem(2)
    assert (row.text(0), row.text(1)) == ("draft.md", "uncommitted")
    assert "1 uncommitted file a merge would not take" in view.summary.text()
    assert "main moved 1 commit since fix left it" in view.summary.text()
    view.files.setCurrentItem(row)
    assert "Not committed" in view.diff.toPlainText()
    assert view.place() is None  # no line to comment on
    assert not view.buttons["rebase"].isHidden()
    view.confirm = lambda _t, _text, buttons: buttons[0]
    view.rebase()
    qtbot.waitUntil(lambda: "Asked fixer to rebase" in view.status.text(), timeout=5000)
    assert (
        link.last(Method.AGENTS_SEND)
        .params["text"]
        .startswith("main moved since fix left it: please rebase fix on main")
    )
    assert git(tree, "rev-list", "--count", "fix") == "3"  # volee rebased nothing itself


def test_the_question_returns_the_button_chosen_and_none_for_cancel(qtbot: Any) -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

    from volee_desktop.app.changes_view import ask

    parent = QWidget()
    qtbot.addWidget(parent)

    def click(text: str) -> None:
        box = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox))
        button = next(b for b in box.buttons() if b.text() == text)
        button.click()

    QTimer.singleShot(50, lambda: click("Squash and merge"))
    assert ask(parent, "Merge", "Merge?", ("Merge", "Squash and merge")) == "Squash and merge"
    QTimer.singleShot(50, lambda: click("Cancel"))
    assert ask(parent, "Merge", "Merge?", ("Merge", "Squash and merge")) is None


def test_open_folder_starts_visual_with_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from volee_desktop.app import changes_view
    from volee_desktop.app.changes_view import open_folder

    said = tmp_path / "said"
    editor = tmp_path / "editor"
    editor.write_text(f'#!/bin/sh\necho "$@" > {said}\n')
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", f"{editor} --new-window")
    assert open_folder(str(tmp_path)) == f"Opened {tmp_path} in {editor} --new-window."
    deadline = time.monotonic() + 10
    while not said.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert said.read_text().strip() == f"--new-window {tmp_path}"
    for editor_process in changes_view._EDITORS:
        editor_process.wait(timeout=10)  # reaped: no process left behind the test

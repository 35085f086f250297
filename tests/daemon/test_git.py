"""Delivery evidence computed by git itself, and pull requests from a fake GitHub."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from tests.fakes.fake_github import FakeGitHub, MemoryKeyring
from volee_desktop.core.model import PushState
from volee_desktop.daemon import forge
from volee_desktop.daemon.git import GitError, Target, merge_branch, read_delivery

from .gitrepos import commit_file, git, make_repo


@pytest.fixture
def root() -> Iterator[Path]:
    import shutil

    path = Path(tempfile.mkdtemp(prefix="vg", dir="/tmp")).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def worktree(repo: Path, name: str = "w1") -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"volee/{name}", str(path))
    return path


def test_a_fresh_branch_has_no_commits_and_a_clean_tree(root: Path) -> None:
    repo = make_repo(root)
    wt = worktree(repo)
    d = read_delivery(Target(str(wt), "volee/w1", "main"), 5.0)
    assert (d.commits, d.clean, d.merged_into_base, d.unmerged_tip) == (0, True, False, None)
    assert d.tip == git(repo, "rev-parse", "main")
    assert d.checked_at == 5.0
    assert d.pushed is PushState.UNPUSHED


def test_commits_ahead_pushed_and_dirty(root: Path) -> None:
    repo = make_repo(root)
    wt = worktree(repo)
    tip = commit_file(wt, "a.txt")
    commit_file(wt, "b.txt")
    d = read_delivery(Target(str(wt), "volee/w1", "main"), 1.0)
    assert d.commits == 2
    assert d.unmerged_tip == d.tip != tip
    assert d.pushed is PushState.UNPUSHED
    git(wt, "push", "-q", "-u", "origin", "HEAD")
    (wt / "dirty.txt").write_text("?")
    d = read_delivery(Target(str(wt), "volee/w1", "main"), 2.0)
    assert d.pushed is PushState.PUSHED
    assert d.clean is False


def test_no_remote_is_said(root: Path) -> None:
    repo = make_repo(root, remote=False)
    wt = worktree(repo)
    commit_file(wt, "a.txt")
    d = read_delivery(Target(str(wt), "volee/w1", None), 1.0)
    assert d.pushed is PushState.NO_REMOTE
    assert d.base == "main"
    assert d.commits == 1


def test_a_merge_is_recognised_through_the_unmerged_tip_memory(root: Path) -> None:
    repo = make_repo(root, remote=False)
    wt = worktree(repo)
    commit_file(wt, "a.txt")
    before = read_delivery(Target(str(wt), "volee/w1", "main"), 1.0)
    git(repo, "merge", "-q", "--ff-only", "volee/w1")
    # Fast-forwarded: the branch has no commit outside main, exactly like a fresh branch...
    forgetful = read_delivery(Target(str(wt), "volee/w1", "main"), 2.0)
    assert forgetful.commits == 0
    assert not forgetful.merged_into_base
    # ...but the memory of the last unmerged tip tells it was merged.
    after = read_delivery(Target(str(wt), "volee/w1", "main", before.unmerged_tip), 2.0)
    assert after.merged_into_base
    assert after.unmerged_tip == before.unmerged_tip


def test_merge_branch_where_base_is_checked_out(root: Path) -> None:
    repo = make_repo(root, remote=False)
    wt = worktree(repo)
    commit_file(wt, "a.txt")
    tip = git(wt, "rev-parse", "HEAD")
    merge_branch(repo, "main", "volee/w1", "merge w1")
    assert (repo / "a.txt").exists()
    d = read_delivery(Target(str(wt), "volee/w1", "main", tip), 3.0)
    assert d.merged_into_base


def test_merge_branch_refuses_a_dirty_base_tree(root: Path) -> None:
    repo = make_repo(root, remote=False)
    wt = worktree(repo)
    commit_file(wt, "a.txt")
    (repo / "README").write_text("changed\n")
    with pytest.raises(GitError, match="uncommitted"):
        merge_branch(repo, "main", "volee/w1", "merge")


def test_merge_branch_ignores_untracked_files_in_the_base_tree(root: Path) -> None:
    # A project that does not ignore .claude/ sees volee's worktrees as untracked files.
    repo = make_repo(root, remote=False)
    (repo / ".gitignore").unlink()
    git(repo, "commit", "-q", "-am", "no ignore")
    wt = worktree(repo)
    commit_file(wt, "a.txt")
    (repo / "notes.txt").write_text("mine\n")
    merge_branch(repo, "main", "volee/w1", "merge")
    assert (repo / "a.txt").exists()
    assert (repo / "notes.txt").read_text() == "mine\n"


def test_merge_branch_says_why_git_refused(root: Path) -> None:
    repo = make_repo(root, remote=False)
    wt = worktree(repo)
    commit_file(wt, "a.txt", "theirs\n")
    (repo / "a.txt").write_text("mine\n")  # untracked, and the merge would overwrite it
    with pytest.raises(GitError, match="would be overwritten"):
        merge_branch(repo, "main", "volee/w1", "merge")
    assert (repo / "a.txt").read_text() == "mine\n"


def test_merge_branch_when_base_is_not_checked_out(root: Path) -> None:
    repo = make_repo(root, remote=False)
    git(repo, "checkout", "-q", "-b", "other")
    wt = worktree(repo)
    commit_file(wt, "a.txt")
    new = merge_branch(repo, "main", "volee/w1", "merge")
    assert git(repo, "rev-parse", "main") == new
    assert git(repo, "rev-parse", "HEAD") != new  # the checked-out branch was left alone


# --- forge ------------------------------------------------------------------------------


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    server = FakeGitHub(token="ghp_secret").start()
    store = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(store)
    monkeypatch.setenv("VOLEE_GITHUB_API", server.url)
    yield server
    keyring.set_keyring(previous)
    server.close()


@pytest.mark.parametrize(
    ("url", "slug"),
    [
        ("https://github.com/acme/widget.git", ("acme", "widget")),
        ("git@github.com:acme/widget.git", ("acme", "widget")),
        ("ssh://git@github.com/acme/wid.get", ("acme", "wid.get")),
        ("https://gitlab.com/acme/widget.git", None),
        ("/tmp/bare.git", None),
    ],
)
def test_github_slug(url: str, slug: tuple[str, str] | None) -> None:
    assert forge.github_slug(url) == slug


def test_without_a_token_the_pull_request_is_unknown(github: FakeGitHub) -> None:
    f = forge.Forge.from_environment()
    assert f.token is None
    assert f.pull_request("https://github.com/acme/widget.git", "volee/w1") == (False, None)
    assert github.requests == []


def test_with_the_keyrings_token_the_pull_request_is_read(github: FakeGitHub) -> None:
    keyring.set_password("volee", "github", "ghp_secret")
    f = forge.Forge.from_environment()
    remote = "https://github.com/acme/widget.git"
    assert f.pull_request(remote, "volee/w1") == (True, None)
    github.open_pr("acme", "widget", "volee/w1", "1" * 40)
    github.open_pr("acme", "widget", "volee/w1", "2" * 40)
    known, pr = f.pull_request(remote, "volee/w1")
    assert known
    assert pr is not None
    assert (pr.number, pr.state, pr.head) == (2, "open", "2" * 40)
    f.merge(remote, 2, "2" * 40, "merge")
    assert f.pull_request(remote, "volee/w1")[1].state == "merged"  # type: ignore[union-attr]


def test_a_wrong_token_leaves_the_pull_request_unknown(github: FakeGitHub) -> None:
    keyring.set_password("volee", "github", "ghp_wrong")
    f = forge.Forge.from_environment()
    assert f.pull_request("https://github.com/acme/widget.git", "b") == (False, None)
    with pytest.raises(forge.ForgeError, match="401"):
        f.merge("https://github.com/acme/widget.git", 1, "x", "m")

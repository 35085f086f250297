"""Open PR: an agent's branch pushed to a real bare remote, its pull request opened on a fake
GitHub (daemon/missions/pulls.py), and each refusal before anything leaves the machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_github import FakeGitHub
from volee_desktop.daemon.errors import Refused
from volee_desktop.daemon.forge import Forge
from volee_desktop.daemon.missions.pulls import open_pull_request

from .gitrepos import commit_file, git, make_repo

TOKEN = "ghp_secret"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub(token=TOKEN).start()
    yield server
    server.close()


def _agent_branch(repo: Path) -> tuple[tuple[str, str, str], str]:
    tree = repo / ".claude" / "worktrees" / "w"
    git(repo, "worktree", "add", "-q", "-b", "volee/w", str(tree))
    tip = commit_file(tree, "a.txt")
    return (str(repo), "volee/w", "main"), tip


def _forge(github: FakeGitHub, token: str | None = TOKEN) -> Forge:
    return Forge(api=github.url, token=token, token_note="none in the keyring (store one)")


def test_open_pr_pushes_the_branch_and_opens_its_pull_request(
    tmp_path: Path, github: FakeGitHub
) -> None:
    repo = make_repo(tmp_path, slug="acme/widget")
    where, tip = _agent_branch(repo)
    github.head_of = lambda branch: git(tmp_path / "repo.git", "rev-parse", branch)
    result = open_pull_request(
        *where, lambda: _forge(github), title="w: add a", body="its task", dry_run=False
    )
    assert git(tmp_path / "repo.git", "rev-parse", "volee/w") == tip  # really pushed
    pr = github.pulls["acme/widget"][0]
    assert (pr["head"]["ref"], pr["head"]["sha"], pr["base"]) == ("volee/w", tip, "main")
    assert (pr["title"], pr["body"]) == ("w: add a", "its task")
    assert result["opened"] is True
    assert result["url"] == "https://github.com/acme/widget/pull/1"
    assert "opened pull request #1 into main" in result["text"]


def test_a_branch_with_an_open_pull_request_is_pushed_to_it_not_opened_twice(
    tmp_path: Path, github: FakeGitHub
) -> None:
    repo = make_repo(tmp_path, slug="acme/widget")
    where, tip = _agent_branch(repo)
    github.open_pr("acme", "widget", "volee/w", "0" * 40)
    result = open_pull_request(*where, lambda: _forge(github), title="t", body="b", dry_run=False)
    assert git(tmp_path / "repo.git", "rev-parse", "volee/w") == tip
    assert len(github.pulls["acme/widget"]) == 1
    assert result["opened"] is False
    assert result["number"] == 1
    assert "open already" in result["text"]


def test_dry_run_says_what_it_would_do_and_pushes_nothing(
    tmp_path: Path, github: FakeGitHub
) -> None:
    repo = make_repo(tmp_path, slug="acme/widget")
    where, _ = _agent_branch(repo)
    result = open_pull_request(*where, lambda: _forge(github), title="t", body="b", dry_run=True)
    assert result["text"] == (
        "pushes volee/w (1 commit) to origin and opens a pull request into main on acme/widget"
    )
    assert "volee/w" not in git(tmp_path / "repo.git", "branch")
    assert ("POST", "/repos/acme/widget/pulls") not in github.requests


@pytest.mark.parametrize(
    ("remote", "token", "said"),
    [
        ("none", TOKEN, "has no remote to push volee/w to"),
        ("bare", TOKEN, "is not on GitHub: volee opens pull requests on GitHub only"),
        ("github", None, "no GitHub token (none in the keyring (store one))"),
    ],
)
def test_open_pr_is_refused_without_a_remote_a_known_forge_or_a_token(
    tmp_path: Path, github: FakeGitHub, remote: str, token: str | None, said: str
) -> None:
    repo = make_repo(
        tmp_path, remote=remote != "none", slug="acme/widget" if remote == "github" else ""
    )
    where, _ = _agent_branch(repo)
    with pytest.raises(Refused, match=said.replace("(", r"\(").replace(")", r"\)")):
        open_pull_request(*where, lambda: _forge(github, token), title="t", body="b", dry_run=False)
    assert github.pulls == {}
    if remote != "none":
        assert "volee/w" not in git(tmp_path / "repo.git", "branch")  # nothing pushed


def test_a_branch_with_nothing_the_base_lacks_is_refused(
    tmp_path: Path, github: FakeGitHub
) -> None:
    repo = make_repo(tmp_path, slug="acme/widget")
    git(repo, "branch", "volee/w")
    where = (str(repo), "volee/w", "main")
    with pytest.raises(Refused, match="nothing to propose"):
        open_pull_request(*where, lambda: _forge(github), title="t", body="b", dry_run=False)

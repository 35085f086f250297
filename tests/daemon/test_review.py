"""An agent's change, merge and discard, on real git repositories (daemon/missions/review.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volee_desktop.core.model import Agent, Harness
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.errors import Refused
from volee_desktop.daemon.missions.review import Where, change_of, discard, loss, merge

from .gitrepos import commit_file, git, make_repo


def _worktree(repo: Path, name: str = "w") -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"volee/{name}", str(path))
    return path


def _where(repo: Path, tree: Path, name: str = "w") -> Where:
    return Where(str(tree), str(repo), f"volee/{name}", "main")


def _agent(repo: Path, tree: Path, name: str = "w") -> Agent:
    return Agent(
        id="ag_1",
        name=name,
        harness=Harness.CLAUDE,
        cwd=str(tree),
        worktree=str(tree),
        repo=str(repo),
        branch=f"volee/{name}",
        state=AgentState.DONE,
    )


def test_change_counts_commits_uncommitted_and_new_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    commit_file(tree, "a.txt", "one\ntwo\n")
    commit_file(repo, "on-main.txt")  # main moved: not part of the agent's change
    (tree / "README").write_text("hello\nmore\n")  # uncommitted
    (tree / "new file é.txt").write_text("x\ny\nz\n")  # not added yet, non-ASCII name
    change = change_of(_where(repo, tree))
    assert change["files"] == 3
    assert (change["added"], change["removed"]) == (2 + 1 + 3, 0)
    assert change["uncommitted"] is True
    assert change["commits"] == 1


def test_change_of_a_clean_branch_is_its_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    commit_file(tree, "a.txt", "one\n")
    change = change_of(_where(repo, tree))
    assert {k: change[k] for k in ("files", "added", "removed", "uncommitted")} == {
        "files": 1,
        "added": 1,
        "removed": 0,
        "uncommitted": False,
    }


def test_change_in_a_repository_with_no_commits(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    change = change_of(Where(str(repo), str(repo), None, None))
    assert change["files"] == 1
    assert change["uncommitted"] is True


def test_merge_fast_forwards_when_the_base_has_not_moved(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    tip = commit_file(tree, "a.txt")
    result = merge(_where(repo, tree), squash=False, message="m")
    assert result["merged"] is True
    assert result["how"] == "fast-forward"
    assert git(repo, "rev-parse", "main") == tip
    assert (repo / "a.txt").exists()  # main is checked out in the repository: its tree too


def test_merge_makes_a_merge_commit_and_says_the_base_moved(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    tip = commit_file(tree, "a.txt")
    commit_file(repo, "b.txt")
    result = merge(_where(repo, tree), squash=False, message="Merge the agent's work")
    assert result["how"] == "merge"
    assert result["base_moved"] == 1
    assert "main had moved 1 commit" in result["text"]
    assert git(repo, "log", "-1", "--format=%s", "main") == "Merge the agent's work"
    assert git(repo, "merge-base", "--is-ancestor", tip, "main") == ""


def test_squash_is_one_commit_with_the_message(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    commit_file(tree, "a.txt")
    commit_file(tree, "b.txt")
    before = git(repo, "rev-parse", "main")
    result = merge(_where(repo, tree), squash=True, message="Add a and b")
    assert result["how"] == "squash"
    assert git(repo, "rev-list", "--count", f"{before}..main") == "1"
    assert git(repo, "log", "-1", "--format=%s", "main") == "Add a and b"
    assert sorted(git(repo, "show", "--name-only", "--format=", "main").split()) == [
        "a.txt",
        "b.txt",
    ]


@pytest.mark.parametrize("squash", [False, True])
def test_a_conflict_is_reported_with_its_files_and_nothing_is_left_half_merged(
    tmp_path: Path, squash: bool
) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    (tree / "README").write_text("the agent's\n")
    git(tree, "commit", "-qam", "agent")
    (repo / "README").write_text("the person's\n")
    git(repo, "commit", "-qam", "person")
    before = git(repo, "rev-parse", "main")
    result = merge(_where(repo, tree), squash=squash, message="m")
    assert result["merged"] is False
    assert result["conflicts"] == ["README"]
    assert "conflicts in README; nothing was merged" in result["text"]
    assert "ask the agent to rebase on main" in result["text"]
    assert git(repo, "rev-parse", "main") == before
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert (repo / "README").read_text() == "the person's\n"


def test_merge_where_the_base_is_checked_out_nowhere_moves_only_the_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    git(repo, "checkout", "-q", "-b", "elsewhere")
    tree = _worktree(repo)
    commit_file(tree, "a.txt")
    commit_file(repo, "c.txt")  # on `elsewhere`: main has not moved
    git(repo, "branch", "-f", "main", "HEAD~1")
    result = merge(_where(repo, tree), squash=False, message="m")
    assert result["merged"] is True
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "elsewhere"
    assert "a.txt" in git(repo, "ls-tree", "--name-only", "main")
    assert len(git(repo, "worktree", "list").splitlines()) == 2  # no scratch tree left


def test_nothing_to_merge_is_refused_and_says_uncommitted_work_stays(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    (tree / "README").write_text("changed\n")
    with pytest.raises(Refused, match=r"no commit that main lacks.*ask it to commit them"):
        merge(_where(repo, tree), squash=False, message="m")


def test_merge_refuses_when_the_base_tree_has_uncommitted_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    commit_file(tree, "a.txt")
    (repo / "README").write_text("the person is editing\n")
    with pytest.raises(Refused, match="uncommitted changes to tracked files"):
        merge(_where(repo, tree), squash=False, message="m")
    assert (repo / "README").read_text() == "the person is editing\n"


def test_discard_says_what_is_lost_then_removes_the_worktree_and_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    commit_file(tree, "a.txt")
    (tree / "scratch.txt").write_text("x\n")
    agent = _agent(repo, tree)
    lost = loss(agent, _where(repo, tree))
    assert [c.split(" ", 1)[1] for c in lost["commits"]] == ["add a.txt"]
    assert lost["uncommitted"] == ["scratch.txt"]
    discard(str(repo), lost)
    assert not tree.exists()
    assert git(repo, "branch", "--list", "volee/w") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_discard_of_a_worktree_deleted_behind_volees_back(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    tree = _worktree(repo)
    commit_file(tree, "a.txt")
    import shutil

    shutil.rmtree(tree)
    agent = _agent(repo, tree)
    lost = loss(agent, None)
    assert lost["worktree_gone"] is True
    assert len(lost["commits"]) == 1
    discard(str(repo), lost)
    assert git(repo, "branch", "--list", "volee/w") == ""

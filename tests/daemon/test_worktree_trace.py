"""volee's worktrees leave no trace in the person's ``git status`` (issue 26)."""

from __future__ import annotations

from pathlib import Path

from volee_desktop.daemon.spawn import exclude_worktrees, make_worktree

from .gitrepos import git


def plain_repo(root: Path) -> Path:
    """A repository as a person has it: nothing of volee's or Claude Code's ignored."""
    repo = root / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@example.com")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "first")
    return repo


def test_a_worktree_volee_makes_keeps_git_status_empty(tmp_path: Path) -> None:
    repo = plain_repo(tmp_path)
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("*.log")  # the person's own line, without a final newline
    top, path, branch = make_worktree(repo, "fix-login")
    assert Path(path).is_dir()
    assert branch == "volee/fix-login"
    assert git(repo, "status", "--porcelain") == ""
    assert exclude.read_text().splitlines()[0] == "*.log"  # theirs kept
    # A second worktree adds nothing more.
    make_worktree(repo, "fix-logout")
    assert exclude.read_text().count("/.claude/worktrees/") == 1
    assert git(repo, "status", "--porcelain") == ""
    assert exclude_worktrees(top) is False
    # The person's own files under .claude/ still show: only the worktrees are excluded.
    (repo / ".claude" / "settings.json").write_text("{}")
    assert git(repo, "status", "--porcelain") == "?? .claude/"

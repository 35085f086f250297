"""``agents.changes``' git part: numstat parsing and the change a branch brings over its base."""

from __future__ import annotations

from pathlib import Path

import pytest

from volee_desktop.daemon import git as vgit
from volee_desktop.daemon.missions.changes import changes, parse_numstat

from .gitrepos import commit_file, git, make_repo


def test_numstat_with_a_rename_and_a_binary_file() -> None:
    text = "3\t1\tsrc/app.py\0-\t-\tlogo.png\0" + "0\t0\t\0old.txt\0new.txt\0"
    assert parse_numstat(text) == [
        {"path": "src/app.py", "added": 3, "removed": 1},
        {"path": "logo.png", "added": None, "removed": None},
        {"path": "new.txt", "added": 0, "removed": 0, "from": "old.txt"},
    ]
    assert parse_numstat("") == []


def test_changes_of_a_branch_exclude_what_base_did_since(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    git(repo, "checkout", "-q", "-b", "work")
    commit_file(repo, "a.txt", "one\ntwo\n")
    (repo / "README").write_text("hello\nworld\n")
    git(repo, "commit", "-qam", "readme")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "later-on-main.txt")  # not part of what merging work brings
    found = changes(repo, "main", "work", with_diff=True)
    assert [f["path"] for f in found["files"]] == ["README", "a.txt"]
    assert (found["added"], found["removed"]) == (3, 0)
    assert "+world" in found["diff"]
    assert "later-on-main" not in found["diff"]
    assert (found["uncommitted"], found["base_moved"]) == ([], 1)
    with pytest.raises(vgit.GitError, match="no branch or commit 'nope'"):
        changes(repo, "main", "nope")


def test_changes_list_the_uncommitted_files_a_merge_would_not_take(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=False)
    git(repo, "checkout", "-q", "-b", "work")
    commit_file(repo, "a.txt")
    (repo / "README").write_text("edited\n")
    (repo / "ünïcode new.txt").write_text("new\n")
    found = changes(repo, "main", "work")
    assert [f["path"] for f in found["files"]] == ["a.txt"]
    assert sorted(found["uncommitted"]) == ["README", "ünïcode new.txt"]
    assert found["base_moved"] == 0

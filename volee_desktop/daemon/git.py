"""Delivery evidence from git itself: commits ahead of base, tip, merged, pushed, clean tree.

Every function here blocks (it runs ``git``); the daemon calls them in a thread.
Each fact is one small git command, split into an argv builder and a parser in
spirit: ``_git`` runs, the callers read plain output.  ``read_delivery`` keeps
the ``unmerged_tip`` memory the caller passes back, so a branch merged into its
base (which then has no commit of its own) is recognised as merged.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..core.model import Delivery, PushState
from .errors import Error

GIT_TIMEOUT = 30.0


class GitError(Error):
    """A git command failed; the message has the command and git's own words."""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Never wait on a password prompt, and read git's messages in one language.
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
    return env


def _git(cwd: str | Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=GIT_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {' '.join(args)} in {cwd} failed: {exc}") from exc
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} in {cwd} failed: {proc.stderr.strip()}")
    return proc


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    """What git said, on both streams (a merge puts conflicts on stdout, refusals on stderr)."""
    return " ".join(part for part in (proc.stdout.strip(), proc.stderr.strip()) if part)


def _out(cwd: str | Path, *args: str) -> str | None:
    proc = _git(cwd, *args, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def rev(cwd: str | Path, ref: str) -> str | None:
    """The commit a ref names, or None."""
    return _out(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


def is_ancestor(cwd: str | Path, commit: str, of: str) -> bool:
    """Whether ``commit`` is part of ``of``'s history."""
    return _git(cwd, "merge-base", "--is-ancestor", commit, of, check=False).returncode == 0


def current_branch(cwd: str | Path) -> str | None:
    """The branch checked out in ``cwd`` (None when detached or not a repository)."""
    return _out(cwd, "symbolic-ref", "--quiet", "--short", "HEAD")


def toplevel(cwd: str | Path) -> str | None:
    """The top folder of the work tree holding ``cwd``."""
    return _out(cwd, "rev-parse", "--show-toplevel")


def default_base(cwd: str | Path) -> str | None:
    """The base branch to compare with: origin's HEAD, else main/master, else the main tree's."""
    head = _out(cwd, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if head and "/" in head:
        return head.split("/", 1)[1]
    for name in ("main", "master"):
        if rev(cwd, f"refs/heads/{name}"):
            return name
    listing = _out(cwd, "worktree", "list", "--porcelain") or ""
    for line in listing.splitlines():
        if line.startswith("branch refs/heads/"):
            return line.removeprefix("branch refs/heads/")
    return None


def remote_of(cwd: str | Path, branch: str) -> str | None:
    """The remote a branch pushes to: its configured one, else origin, else the only one."""
    configured = _out(cwd, "config", "--get", f"branch.{branch}.remote")
    remotes = (_out(cwd, "remote") or "").split()
    if configured and configured in remotes:
        return configured
    if "origin" in remotes:
        return "origin"
    return remotes[0] if len(remotes) == 1 else None


def remote_url(cwd: str | Path, remote: str) -> str | None:
    """The URL as configured (before insteadOf rewriting: the forge is named by it)."""
    return _out(cwd, "config", "--get", f"remote.{remote}.url")


def remote_url_of(cwd: str | Path, branch: str) -> str | None:
    """The configured URL of the remote ``branch`` pushes to (None: no such remote)."""
    remote = remote_of(cwd, branch)
    return remote_url(cwd, remote) if remote else None


def push_state(cwd: str | Path, branch: str, tip: str) -> PushState:
    """Pushed when the remote-tracking branch holds the tip (no network: pushes update it)."""
    remote = remote_of(cwd, branch)
    if remote is None:
        return PushState.NO_REMOTE if not _out(cwd, "remote") else PushState.UNKNOWN
    merge = _out(cwd, "config", "--get", f"branch.{branch}.merge")
    name = merge.removeprefix("refs/heads/") if merge else branch
    tracked = rev(cwd, f"refs/remotes/{remote}/{name}")
    if tracked is None:
        return PushState.UNPUSHED
    return PushState.PUSHED if is_ancestor(cwd, tip, tracked) else PushState.UNPUSHED


def clean_tree(worktree: str | Path, *, untracked: bool = True) -> bool | None:
    """Whether the tree has no change and (unless ``untracked`` is False) no untracked file.

    None: it cannot be read.
    """
    if not Path(worktree).is_dir():
        return None
    shown = "normal" if untracked else "no"
    out = _out(worktree, "status", "--porcelain", f"--untracked-files={shown}")
    if out is None:
        return None
    return out == ""


@dataclass(frozen=True)
class Target:
    """What to read: the agent's work tree, its branch and the base branch."""

    worktree: str
    branch: str | None = None
    base: str | None = None
    unmerged_tip: str | None = None  # the memory from the previous evidence


def read_delivery(target: Target, checked_at: float) -> Delivery:
    """The evidence for one branch; ``checked_at`` is when the caller began the check."""
    cwd = target.worktree
    if not Path(cwd).is_dir():
        return Delivery(
            branch=target.branch,
            base=target.base,
            unmerged_tip=target.unmerged_tip,
            checked_at=checked_at,
        )
    branch = target.branch or current_branch(cwd)
    base = target.base or default_base(cwd)
    tip = rev(cwd, f"refs/heads/{branch}") if branch else rev(cwd, "HEAD")
    base_tip = rev(cwd, f"refs/heads/{base}") if base else None
    commits = 0
    if tip and base_tip:
        count = _out(cwd, "rev-list", "--count", f"{base_tip}..{tip}")
        commits = int(count) if count and count.isdigit() else 0
    unmerged = tip if commits > 0 else target.unmerged_tip
    merged = bool(
        commits == 0
        and unmerged
        and base_tip
        and rev(cwd, unmerged) is not None
        and is_ancestor(cwd, unmerged, base_tip)
    )
    pushed = push_state(cwd, branch, tip) if branch and tip else PushState.UNKNOWN
    return Delivery(
        branch=branch,
        base=base,
        commits=commits,
        tip=tip,
        unmerged_tip=unmerged,
        merged_into_base=merged,
        pushed=pushed,
        clean=clean_tree(cwd),
        checked_at=checked_at,
    )


def worktree_of_branch(repo: str | Path, branch: str) -> str | None:
    """The work tree where ``branch`` is checked out, if any."""
    listing = _out(repo, "worktree", "list", "--porcelain") or ""
    path: str | None = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
        elif line == f"branch refs/heads/{branch}" and path:
            return path
    return None


def merge_branch(repo: str | Path, base: str, branch: str, message: str) -> str:
    """Merge ``branch`` into ``base`` (a merge commit); returns the new base tip.

    Where ``base`` is checked out, the merge runs in that tree (it must be clean);
    elsewhere it runs in a throwaway detached worktree and moves the ref only if
    nobody moved it meanwhile.
    """
    if rev(repo, f"refs/heads/{branch}") is None:
        raise GitError(f"branch {branch} does not exist in {repo}")
    old = rev(repo, f"refs/heads/{base}")
    if old is None:
        raise GitError(f"base branch {base} does not exist in {repo}")
    if is_ancestor(repo, branch, old):
        return old  # already merged
    where = worktree_of_branch(repo, base)
    if where is not None:
        # Untracked files (volee's own worktrees under .claude/ among them) do not stop a
        # merge; git refuses by itself if the merge would overwrite one.
        if clean_tree(where, untracked=False) is not True:
            raise GitError(
                f"{base} is checked out in {where} with uncommitted changes to tracked files; "
                "commit or stash them first"
            )
        proc = _git(where, "merge", "--no-ff", "--no-edit", "-m", message, branch, check=False)
        if proc.returncode != 0:
            _git(where, "merge", "--abort", check=False)
            raise GitError(f"merging {branch} into {base} failed: {_said(proc)}")
        new = rev(where, "HEAD")
        assert new is not None
        return new
    scratch = tempfile.mkdtemp(prefix="volee-merge-")
    try:
        _git(repo, "worktree", "add", "--detach", scratch, old)
        proc = _git(scratch, "merge", "--no-ff", "--no-edit", "-m", message, branch, check=False)
        if proc.returncode != 0:
            raise GitError(f"merging {branch} into {base} failed: {_said(proc)}")
        new = rev(scratch, "HEAD")
        assert new is not None
        _git(repo, "update-ref", f"refs/heads/{base}", new, old)
        return new
    finally:
        _git(repo, "worktree", "remove", "--force", scratch, check=False)


def push(repo: str | Path, branch: str) -> str | None:
    """Push ``branch`` to its remote; the reason when it could not (None: pushed or no remote)."""
    remote = remote_of(repo, branch)
    if remote is None:
        return None
    proc = _git(repo, "push", remote, f"refs/heads/{branch}:refs/heads/{branch}", check=False)
    return None if proc.returncode == 0 else proc.stderr.strip()


def remove_worktree(repo: str | Path, worktree: str | Path) -> None:
    """Remove a worktree (the branch is kept)."""
    _git(repo, "worktree", "remove", str(worktree))

"""Real git repositories for tests: a repo with a bare remote, worktrees, commits."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path | str, *args: str) -> str:
    """Run git in ``cwd``; its stdout (fails the test on error)."""
    import os

    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


def make_repo(root: Path, name: str = "repo", *, remote: bool = True, slug: str = "") -> Path:
    """A repo on ``main`` with one commit; with a bare ``origin`` when asked.

    ``slug`` ("owner/name") names origin as a GitHub URL that git rewrites to the bare repo
    (``url.<bare>.insteadOf``), so the forge sees GitHub while pushes stay local.
    """
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.com")):
        git(repo, "config", key, value)
    (repo / "README").write_text("hello\n")
    # Claude Code and the fakes write here; a real project would ignore it too.
    (repo / ".gitignore").write_text(".claude/\n.fake-harness/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    if remote:
        bare = root / f"{name}.git"
        git(root, "init", "-q", "--bare", str(bare))
        url = f"https://github.com/{slug}.git" if slug else str(bare)
        if slug:
            git(repo, "config", f"url.{bare}.insteadOf", url)
        git(repo, "remote", "add", "origin", url)
        git(repo, "push", "-q", "-u", "origin", "main")
    return repo


def commit_file(cwd: Path | str, name: str, text: str = "x\n") -> str:
    """Write a file, commit it; the new tip."""
    Path(cwd, name).write_text(text)
    git(cwd, "add", name)
    git(cwd, "commit", "-q", "-m", f"add {name}")
    return git(cwd, "rev-parse", "HEAD")

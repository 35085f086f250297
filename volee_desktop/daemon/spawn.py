"""A spawn request: what a new agent is started with, its name (``slug``) and its worktree.

``agents.spawn`` (the IPC method) parses one from its parameters (``params.spawn_request``);
missions build theirs directly.  ``AgentsRunner.spawn`` carries it out.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.model import DEFAULT_HARNESS, Harness, Role
from .errors import Refused

log = logging.getLogger(__name__)

WORKTREES = ".claude/worktrees"


@dataclass(frozen=True)
class SpawnRequest:
    """A new agent to register and launch."""

    harness: Harness = DEFAULT_HARNESS
    prompt: str | None = None
    argv: tuple[str, ...] = ()
    #: Its folder; None: the daemon's own.
    cwd: str | None = None
    #: The caller's environment (allow-listed before it is recorded); None: the daemon's.
    env: Mapping[str, str] | None = None
    #: None: one made from the task (``slug``), unique among the agents.
    name: str | None = None
    #: Run in a new branch in a worktree of the repository ``cwd`` is in.
    worktree: bool = False
    role: Role = Role.AGENT
    parent: str | None = None
    mission: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    #: The worktree's new branch; None: ``volee/<name>``.
    branch: str | None = None


def slug(text: str, limit: int = 24) -> str:
    """A short name from a task: lowercase words joined by dashes."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:limit].strip("-")
    return out or "agent"


def make_worktree(cwd: Path, name: str, branch: str | None = None) -> tuple[str, str, str]:
    """A new branch (``branch``, else ``volee/<name>``) in a worktree under
    ``<repo>/.claude/worktrees/<name>``."""
    try:
        top = subprocess.run(
            ["git", "-C", str(cwd), "rev-parse", "--show-toplevel"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise Refused(f"--worktree needs a git repository; {cwd} is not in one") from exc
    path = Path(top) / WORKTREES / name
    branch = branch or f"volee/{name}"
    if path.exists():
        raise Refused(f"worktree {path} already exists; pick another --name")
    proc = subprocess.run(
        ["git", "-C", top, "worktree", "add", "-b", branch, str(path)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise Refused(f"git worktree add failed: {proc.stderr.strip()}")
    exclude_worktrees(top)
    return top, str(path), branch


def exclude_worktrees(top: str) -> bool:
    """Keep volee's worktrees out of the person's ``git status`` (``?? .claude/``): add
    ``/.claude/worktrees/`` to the repository's own ``info/exclude`` (never a tracked file,
    never pushed).  Whether the line was added; a failure only costs the status line."""
    line = f"/{WORKTREES}/"
    try:
        where = subprocess.run(
            ["git", "-C", top, "rev-parse", "--git-path", "info/exclude"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        exclude = Path(top, where)  # relative to ``top`` unless git gave an absolute path
        old = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if line in old.splitlines():
            return False
        exclude.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not old or old.endswith("\n") else "\n"
        with exclude.open("a", encoding="utf-8") as out:
            out.write(f"{sep}# volee's agent worktrees\n{line}\n")
    except (OSError, subprocess.CalledProcessError) as exc:
        log.warning("could not add %s to the exclude file of %s: %s", line, top, exc)
        return False
    return True

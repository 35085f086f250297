"""``agents.changes``: what merging a worker's branch would bring, read from git.

The approval dialog shows, per worker, the files its branch changes against
the base it would be merged into (``git diff base...branch``: from their merge
base to the branch's tip, the commits a merge takes; uncommitted changes are
not part of it: ``uncommitted`` lists them), the lines added and removed, how many commits the
base gained since (``base_moved``), and on demand the diff itself.

``changes(tree, base, branch, with_diff)`` is the blocking git part (run in a
thread); ``Changes.api_changes`` finds the tree, base and branch of an agent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ...ipc.methods import Method
from ...ipc.protocol import ErrorCode, IpcError
from ...ipc.server import Connection, MethodTable
from .. import git
from ..errors import Error
from ..params import decoder
from ..service import Service
from ..views import resolve_agent
from .params import ChangesParams
from .results import ChangedFile, ChangesResult

DIFF_LIMIT = 256 * 1024  # characters of diff sent at most (a message is at most 1 MiB)


def parse_numstat(text: str) -> list[ChangedFile]:
    """``git diff --numstat -z`` output as files: path, added, removed (None for binary)."""
    files: list[ChangedFile] = []
    fields = text.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry.strip():
            continue
        parts = entry.split("\t", 2)
        if len(parts) < 3:
            continue
        added, removed, path = parts
        old = None
        if path == "" and i + 1 < len(fields):  # a rename: the old and new paths follow
            old, path = fields[i], fields[i + 1]
            i += 2
        binary = added == "-" or removed == "-"
        item: ChangedFile = {
            "path": path,
            "added": None if binary else int(added),
            "removed": None if binary else int(removed),
        }
        if old is not None:
            item["from"] = old
        files.append(item)
    return files


class NoBranch(Error):
    """The agent works on the base branch itself: a merge would bring nothing."""


def changes(tree: str | Path, base: str, branch: str, with_diff: bool = False) -> ChangesResult:
    """The change ``branch`` brings over ``base``, in ``tree`` (blocks: runs git)."""
    span = f"{base}...{branch}"
    for ref in (base, branch):
        if git.rev(tree, ref) is None:
            raise git.GitError(f"no branch or commit {ref!r} in {tree}")
    numstat = git._git(tree, "diff", "--numstat", "-z", "-M", span).stdout
    files = parse_numstat(numstat)
    # Beside it, what a merge would not take: the tree's uncommitted files, and how far the
    # base moved since the branch left it (the person may ask the agent to rebase).
    status = git._git(tree, "status", "--porcelain", "-z", "--untracked-files=all", check=False)
    moved = git._out(tree, "rev-list", "--count", f"{branch}..{base}")
    out: ChangesResult = {
        "base": base,
        "branch": branch,
        "files": files,
        "added": sum(f["added"] or 0 for f in files),
        "removed": sum(f["removed"] or 0 for f in files),
        "uncommitted": [e[3:] for e in status.stdout.split("\0") if len(e) > 3],
        "base_moved": int(moved) if moved and moved.isdigit() else 0,
    }
    if with_diff:
        text = git._git(tree, "diff", "-M", "--no-color", "--no-ext-diff", span).stdout
        out["truncated"] = len(text) > DIFF_LIMIT
        out["diff"] = text[:DIFF_LIMIT]
    return out


class Changes:
    """The ``agents.changes`` IPC method (see docs/ipc.md)."""

    def __init__(self, service: Service, methods: MethodTable) -> None:
        self.service = service
        methods.add(Method.AGENTS_CHANGES, self.api_changes, decoder(ChangesParams))

    async def api_changes(self, _conn: Connection, params: ChangesParams) -> ChangesResult:
        registry = self.service.current()
        agent = resolve_agent(registry, params.agent)
        mission = registry.missions.get(agent.mission) if agent.mission else None
        d = agent.delivery
        tree = agent.worktree or agent.cwd
        branch = (d.branch if d else None) or agent.branch
        if not tree or not Path(tree).is_dir():
            raise IpcError(ErrorCode.NOT_FOUND, f"{agent.name} has no folder to read git in")
        if not branch:
            raise IpcError(ErrorCode.NOT_FOUND, f"{agent.name} works on no branch")
        with_diff = params.diff

        def read() -> ChangesResult:
            base = (mission.base_branch if mission else None) or (d.base if d else None)
            base = base or git.default_base(tree)
            if not base:
                raise git.GitError(f"no base branch known for {branch}")
            if base == branch:
                raise NoBranch(f"{agent.name} works on {base} itself: no branch of its own")
            return changes(tree, base, branch, with_diff)

        try:
            result = await asyncio.to_thread(read)
        except NoBranch as exc:
            raise IpcError(ErrorCode.NOT_FOUND, str(exc)) from exc
        except git.GitError as exc:
            raise IpcError(ErrorCode.UNAVAILABLE, str(exc)) from exc
        result["agent"] = agent.id
        return result

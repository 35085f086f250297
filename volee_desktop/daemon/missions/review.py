"""An agent's change, read from git, and what a person does with it: merge it or discard it.

``change_of`` (the ``change`` of ``volee ls --json``) is the agent's folder against the point
its branch left its base (their merge base; the branch's own tip when it works on the base
itself): the files and lines committed and not, plus new files not yet added.  ``merge`` puts
the branch into its base: a fast-forward when the base has not moved, else a merge commit, or
one squashed commit with the person's message; a conflict is reported with its files and
aborted, so nothing is left half-merged (or, through the missions' forge code, it is pushed
and proposed as a pull request: pulls.py).  ``discard`` says what would be lost (commits not on
the base, uncommitted files), then removes the worktree and its branch.  Every function here
blocks (it runs git); ``Review`` calls them in a thread and adds ``agents.merge`` and
``agents.discard`` and ``agents.open_pr`` (the person's alone: daemon/serving/access.py).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...core.model import Agent
from ...core.registry import Registry
from ...core.states import AgentState
from ...ipc.methods import Method
from ...ipc.server import Connection, MethodTable
from .. import git
from ..errors import Refused
from ..forge import Forge
from ..params import decoder
from ..service import Service
from ..views import resolve_agent
from .changes import parse_numstat
from .params import DiscardParams, MergeParams, OpenPrParams
from .pulls import Pull, open_pull_request
from .results import BranchChange, ChangedFile, Discarded, Loss, Merged, OpenedPr

#: States in which the agent is in the middle of a turn: its branch may move under a merge.
BUSY = frozenset({AgentState.WORKING, AgentState.NEEDS_INPUT, AgentState.LAUNCHING})
#: A new file longer than this is counted as one file with lines unknown.
COUNT_LINES_UP_TO = 1 << 20


@dataclass(frozen=True)
class Where:
    """An agent's work in git: its tree, the repository, its branch and the base branch."""

    tree: str
    repo: str
    branch: str | None
    base: str | None


def where_of(agent: Agent, registry: Registry) -> Where | None:
    """Where the agent works in git (None: no folder, or not a repository; blocks).

    The base is its mission's base branch, else the one its delivery evidence names, else
    the repository's default (origin's HEAD, main, master).
    """
    tree = agent.worktree or agent.cwd
    if not tree or not Path(tree).is_dir():
        return None
    top = git.toplevel(tree)
    if top is None:
        return None
    mission = registry.missions.get(agent.mission) if agent.mission else None
    d = agent.delivery
    branch = git.current_branch(tree) or agent.branch
    base = (mission.base_branch if mission else None) or (d.base if d else None)
    base = base or git.default_base(tree)
    return Where(tree, agent.repo or top, branch, base)


def _untracked(tree: str) -> list[str]:
    out = git._git(tree, "status", "--porcelain", "-z", "--untracked-files=all").stdout
    return [e[3:] for e in out.split("\0") if e.startswith("?? ")]


def _lines(path: Path) -> int | None:
    try:
        if path.stat().st_size > COUNT_LINES_UP_TO:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None  # binary
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def change_of(where: Where) -> BranchChange:
    """The agent's change: ``{files, added, removed, uncommitted, base, commits}`` (blocks)."""
    tree = where.tree
    head = git.rev(tree, "HEAD")
    start = head
    if head and where.base and where.base != where.branch and git.rev(tree, where.base):
        start = git._out(tree, "merge-base", where.base, head) or head
    files: list[ChangedFile] = []
    if start:
        files = parse_numstat(git._git(tree, "diff", "--numstat", "-z", "-M", start).stdout)
    dirty = git.clean_tree(tree) is False
    new = _untracked(tree) if dirty else []
    added = sum(f["added"] or 0 for f in files)
    for name in new:
        added += _lines(Path(tree) / name) or 0
    commits = 0
    if head and start and start != head:
        count = git._out(tree, "rev-list", "--count", f"{start}..{head}")
        commits = int(count) if count and count.isdigit() else 0
    return {
        "files": len(files) + len(new),
        "added": added,
        "removed": sum(f["removed"] or 0 for f in files),
        "uncommitted": dirty,
        "base": where.base,
        "commits": commits,
    }


# --- merging ----------------------------------------------------------------------------------


def _count(cwd: str, span: str) -> int:
    out = git._out(cwd, "rev-list", "--count", span)
    return int(out) if out and out.isdigit() else 0


def _conflicts(cwd: str) -> list[str]:
    out = git._git(cwd, "diff", "--name-only", "-z", "--diff-filter=U", check=False).stdout
    return [name for name in out.split("\0") if name]


def merge(where: Where, *, squash: bool, message: str) -> Merged:
    """Merge the agent's branch into its base (blocks).  A conflict is aborted: the result then
    says ``merged: false`` with the files; a refusal raises Refused."""
    branch, base, repo = where.branch, where.base, where.repo
    if not branch:
        raise Refused(f"{where.tree} has no branch checked out (a detached HEAD): nothing to merge")
    if not base:
        raise Refused(f"no base branch is known for {branch} (no main, master or origin HEAD)")
    if base == branch:
        raise Refused(f"the agent works on {base} itself: its commits are already there")
    old = git.rev(repo, f"refs/heads/{base}")
    tip = git.rev(repo, f"refs/heads/{branch}")
    if old is None or tip is None:
        raise Refused(f"branch {base if old is None else branch} does not exist in {repo}")
    ahead = _count(repo, f"{old}..{tip}")
    uncommitted = git.clean_tree(where.tree) is False
    left = " (its uncommitted changes are not part of a merge: ask it to commit them)"
    if ahead == 0:
        raise Refused(
            f"nothing to merge: {branch} has no commit that {base} lacks"
            + (left if uncommitted else "")
        )
    moved = _count(repo, f"{tip}..{old}")
    how = "squash" if squash else ("fast-forward" if moved == 0 else "merge")
    target = git.worktree_of_branch(repo, base)
    if target is not None and git.clean_tree(target, untracked=False) is not True:
        raise Refused(
            f"{base} is checked out in {target} with uncommitted changes to tracked files; "
            "commit or stash them first (nothing was merged)"
        )
    scratch = None
    if target is None:
        scratch = tempfile.mkdtemp(prefix="volee-merge-")
        git._git(repo, "worktree", "add", "--detach", scratch, old)
    cwd = target or scratch
    assert cwd is not None
    try:
        if how == "fast-forward":
            proc = git._git(cwd, "merge", "--ff-only", tip, check=False)
        elif how == "merge":
            proc = git._git(cwd, "merge", "--no-ff", "--no-edit", "-m", message, tip, check=False)
        else:
            proc = git._git(cwd, "merge", "--squash", tip, check=False)
            if proc.returncode == 0:
                proc = git._git(cwd, "commit", "-q", "-m", message, check=False)
        if proc.returncode != 0:
            files = _conflicts(cwd)
            # Nothing half-merged: the merge (or the squash's index) is undone.
            git._git(cwd, "merge", "--abort", check=False)
            git._git(cwd, "reset", "--merge", check=False)
            said = git._said(proc)
            return _refused_merge(branch, base, moved, files, said)
        new = git.rev(cwd, "HEAD")
        assert new is not None
        if scratch is not None:
            git._git(repo, "update-ref", f"refs/heads/{base}", new, old)
    finally:
        if scratch is not None:
            git._git(repo, "worktree", "remove", "--force", scratch, check=False)
    text_ = f"merged {branch} into {base} ({how}, {ahead} commit{'s' if ahead != 1 else ''})"
    if moved:
        text_ += (
            f"; {base} had moved {moved} commit{'s' if moved != 1 else ''} since {branch} left it"
        )
    if uncommitted:
        text_ += "; its uncommitted changes stay in its folder, not merged"
    return {
        "merged": True,
        "how": how,
        "base": base,
        "branch": branch,
        "commit": new,
        "commits": ahead,
        "base_moved": moved,
        "uncommitted": uncommitted,
        "conflicts": [],
        "text": text_,
    }


def _refused_merge(branch: str, base: str, moved: int, files: list[str], said: str) -> Merged:
    where = f" in {', '.join(files)}" if files else ""
    text_ = (
        f"merging {branch} into {base} conflicts{where}; nothing was merged ({base} is as it was)"
    )
    if not files:
        text_ = f"merging {branch} into {base} failed: {said}; nothing was merged"
    if moved:
        text_ += (
            f". {base} moved {moved} commit{'s' if moved != 1 else ''} since {branch} left it: "
            f"ask the agent to rebase on {base} and fix the conflicts, then merge again"
        )
    return {
        "merged": False,
        "base": base,
        "branch": branch,
        "base_moved": moved,
        "conflicts": files,
        "text": text_,
    }


# --- discarding -------------------------------------------------------------------------------


def loss(agent: Agent, where: Where | None) -> Loss:
    """What removing the agent's worktree and branch would lose (blocks)."""
    tree = agent.worktree or ""
    gone = not Path(tree).is_dir()
    repo = (where.repo if where else None) or agent.repo or ""
    branch = agent.branch or (where.branch if where else None)
    base = where.base if where else None
    if base is None and repo and Path(repo).is_dir():
        base = git.default_base(repo)  # the worktree is gone: the repository still knows
    commits: list[str] = []
    if repo and branch and git.rev(repo, f"refs/heads/{branch}"):
        span = f"{base}..{branch}" if base and git.rev(repo, base) else branch
        log = git._out(repo, "log", "--format=%h %s", "--max-count=20", span) or ""
        commits = log.splitlines()
    files: list[str] = []
    if not gone:
        out = git._git(tree, "status", "--porcelain", "-z", "--untracked-files=all", check=False)
        files = [e[3:] for e in out.stdout.split("\0") if len(e) > 3]
    return {
        "worktree": tree,
        "worktree_gone": gone,
        "branch": branch,
        "base": base,
        "commits": commits,
        "uncommitted": files,
    }


def discard(repo: str, lost: Loss) -> None:
    """Remove the worktree (if still there) and the branch (blocks)."""
    if not lost["worktree_gone"]:
        git._git(repo, "worktree", "remove", "--force", lost["worktree"])
    git._git(repo, "worktree", "prune", check=False)
    branch = lost["branch"]
    if branch and git.rev(repo, f"refs/heads/{branch}"):
        git._git(repo, "branch", "-D", branch)


def lost_text(name: str, lost: Loss, done: bool) -> str:
    """What discarding loses (``done``: what it lost), in words."""
    parts = []
    if lost["commits"]:
        n = len(lost["commits"])
        more = "+" if n >= 20 else ""
        parts.append(f"{n}{more} commit{'s' if n != 1 else ''} not on {lost['base'] or 'the base'}")
    if lost["uncommitted"]:
        n = len(lost["uncommitted"])
        parts.append(f"{n} uncommitted file{'s' if n != 1 else ''}")
    what = " and ".join(parts)
    tree = (
        "its worktree (already gone)" if lost["worktree_gone"] else f"worktree {lost['worktree']}"
    )
    branch = f"branch {lost['branch']}" if lost["branch"] else "no branch"
    if done:
        return f"discarded {name}: removed {tree} and {branch}" + (f"; lost {what}" if what else "")
    loses = f"{what} would be lost" if what else "nothing is lost that is not on the base"
    return f"discarding {name} removes {tree} and {branch}: {loses}"


def refuse_busy(agent: Agent, what: str) -> None:
    """Refused while the agent is in the middle of a turn: its branch may still move."""
    if agent.state in BUSY:
        raise Refused(
            f"{agent.name} is {agent.state}: its branch may still move. Stop it "
            f"(`volee stop {agent.name}`) or wait until it is done, then {what}"
        )


def default_title(agent: Agent) -> str:
    """``NAME: the first line of its task``: a squash's message, a pull request's title."""
    task = agent.launch.prompt if agent.launch is not None else None
    return f"{agent.name}: {(task or 'work by a volee agent').strip().splitlines()[0][:60]}"


def git_of(agent: Agent, registry: Registry, what: str) -> Where:
    """Where the agent works in git, or Refused saying why there is nothing to ``what``."""
    where = where_of(agent, registry)
    folder = agent.worktree or agent.cwd
    if where is None and folder and not Path(folder).is_dir():
        raise Refused(f"the folder of {agent.name} ({folder}) is gone: nothing to {what}")
    if where is None:
        raise Refused(f"{agent.name} works in no git repository: nothing to {what}")
    return where


class Review:
    """``agents.merge``, ``agents.discard`` and ``agents.open_pr`` (docs/ipc.md)."""

    def __init__(
        self, service: Service, methods: MethodTable, forge_of: Callable[[], Forge]
    ) -> None:
        self.service = service
        #: The forge client the missions use (its token read now; blocks).
        self.forge_of = forge_of
        methods.add(Method.AGENTS_MERGE, self.api_merge, decoder(MergeParams))
        methods.add(Method.AGENTS_DISCARD, self.api_discard, decoder(DiscardParams))
        methods.add(Method.AGENTS_OPEN_PR, self.api_open_pr, decoder(OpenPrParams))

    async def api_merge(self, _conn: Connection, params: MergeParams) -> Merged:
        registry = self.service.current()
        agent = resolve_agent(registry, params.agent)
        refuse_busy(agent, "merge")
        squash = params.squash
        message = params.message or default_title(agent)

        def run() -> Merged:
            return merge(git_of(agent, registry, "merge"), squash=squash, message=message)

        result = await asyncio.to_thread(run)
        result["agent"] = agent.id
        return result

    async def api_open_pr(self, _conn: Connection, params: OpenPrParams) -> OpenedPr:
        registry = self.service.current()
        agent = resolve_agent(registry, params.agent)
        refuse_busy(agent, "open its pull request")
        title = params.title or default_title(agent)
        task = agent.launch.prompt if agent.launch is not None else None
        body = params.body or (
            f"Work of the volee agent {agent.name} ({agent.harness})."
            + (f"\n\nIts task:\n\n{task.strip()}" if task else "")
        )

        def run() -> Pull:
            where = git_of(agent, registry, "propose")
            return open_pull_request(
                where.repo,
                where.branch,
                where.base,
                self.forge_of,
                title=title,
                body=body,
                dry_run=params.dry_run,
            )

        result = await asyncio.to_thread(run)
        return {"agent": agent.id, "title": title, **result}

    async def api_discard(self, _conn: Connection, params: DiscardParams) -> Discarded:
        registry = self.service.current()
        agent = resolve_agent(registry, params.agent)
        if not agent.worktree:
            raise Refused(
                f"{agent.name} works in {agent.cwd or 'a folder of yours'}, not in a worktree "
                "volee made: discard removes only those (`volee forget` takes it off the list)"
            )
        if agent.state.live:
            raise Refused(
                f"{agent.name} is {agent.state} in that worktree: stop it first "
                f"(`volee stop {agent.name}`), then discard"
            )
        dry = params.dry_run

        def run() -> Loss:
            where = where_of(agent, registry)
            lost = loss(agent, where)
            repo = (where.repo if where else None) or agent.repo
            if not dry:
                if not repo or not Path(repo).is_dir():
                    raise Refused(f"the repository of {agent.name} ({repo}) is gone")
                discard(repo, lost)
            return lost

        lost = await asyncio.to_thread(run)
        return {
            "agent": agent.id,
            "name": agent.name,
            "discarded": not dry,
            "lost": lost,
            "text": lost_text(agent.name, lost, done=not dry),
        }


__all__ = ["Review", "Where", "change_of", "discard", "loss", "merge", "where_of"]

"""Delivery rules (seed 002): when a branch's evidence proves the work, and when a worktree may go.

``Delivery`` (in ``model``) describes an agent's branch as git and the forge saw
it; this module judges it.  ``judge_change`` is the supervisor's rule for
change missions; ``tidy_verdict`` and ``tidy_check`` are the cleanup rules.
Every missing condition is reported at once, so a person fixes them in one go.
The branch itself is never part of a cleanup decision: it is always kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from .model import Agent, Delivery, PullRequest, PullState, PushState
from .states import AgentState

WORKTREES_DIR = (".claude", "worktrees")
BUSY = frozenset({AgentState.LAUNCHING, AgentState.WORKING, AgentState.NEEDS_INPUT})

__all__ = [
    "Delivery",
    "PullRequest",
    "PushState",
    "TidyVerdict",
    "delivered_by_merge",
    "evidence_fresh",
    "judge_change",
    "tidy_check",
    "tidy_verdict",
]


def delivered_by_merge(d: Delivery) -> str | None:
    """Why the branch counts as merged (into its base, or through a pull request at its tip)."""
    if d.merged_into_base:
        return f"merged into {d.base or 'the base branch'}"
    pr = d.pull_request_at_tip
    if pr is not None and pr.state == PullState.MERGED:
        return f"pull request #{pr.number} merged"
    return None


def _pull_request_problem(d: Delivery) -> str | None:
    pr = d.pull_request_at_tip
    if (
        pr is not None and pr.state == PullState.OPEN
    ):  # a merged one at the tip is delivered by merge
        return None
    if not d.pull_request_known:
        return (
            "pull request unknown (volee reads pull requests on GitHub with a token stored in "
            "the keyring, see docs/missions.md; a branch merged into its base always counts)"
        )
    old = d.pull_request
    if old is not None and old.head != d.tip:
        return f"pull request #{old.number} is not at the branch's tip"
    if pr is not None:
        return f"pull request #{pr.number} is {pr.state}"
    return "no pull request"


def judge_change(d: Delivery) -> tuple[bool, str]:
    """The change-mission rule: (delivered, reason listing every missing condition)."""
    merged = delivered_by_merge(d)
    if merged is not None:
        return True, merged
    missing: list[str] = []
    if d.commits <= 0:
        missing.append(f"no commits ahead of {d.base or 'the base branch'}")
    if d.clean is False:
        missing.append("uncommitted changes in the tree")
    elif d.clean is None:
        missing.append("the tree could not be read")
    if d.pushed is not PushState.NO_REMOTE:
        if d.pushed is PushState.UNPUSHED:
            missing.append("commits not pushed")
        elif d.pushed is PushState.UNKNOWN:
            missing.append("push state unknown")
        problem = _pull_request_problem(d)
        if problem:
            missing.append(problem)
    if missing:
        return False, "; ".join(missing)
    plural = "s" if d.commits != 1 else ""
    parts = [f"{d.commits} commit{plural}"]
    if d.pushed is PushState.NO_REMOTE:
        parts.append("no remote")
    else:
        pr = d.pull_request_at_tip
        assert pr is not None
        parts += ["pushed", f"pull request #{pr.number} {pr.state}"]
    parts.append("clean tree")
    return True, ", ".join(parts)


def evidence_fresh(agent: Agent) -> bool:
    """Whether the agent's evidence was read since it stopped (``checked_at >= state_since``)."""
    d = agent.delivery
    return d is not None and d.checked_at >= agent.state_since


@dataclass(frozen=True)
class TidyVerdict:
    """Whether a worktree may be removed, and every condition that is missing."""

    removable: bool
    missing: tuple[str, ...] = ()


def tidy_verdict(agent: Agent, delivery: Delivery | None, reported: bool) -> TidyVerdict:
    """Not busy, a clean tree, and the work delivered (merged, merged PR, or reported)."""
    missing: list[str] = []
    if agent.state in BUSY:
        missing.append(f"the agent is {agent.state}")
    if delivery is None or delivery.clean is None:
        missing.append("the tree was never read")
    elif delivery.clean is False:
        missing.append("uncommitted changes in the tree")
    if not reported and (delivery is None or delivered_by_merge(delivery) is None):
        missing.append("the work is not delivered (not merged, no merged pull request, no report)")
    return TidyVerdict(not missing, tuple(missing))


def _nothing_done(agent: Agent, delivery: Delivery | None) -> bool:
    # ADR 0016: a launch that failed before any session started left nothing in its worktree.
    return (
        agent.state is AgentState.FAILED
        and not agent.sessions
        and delivery is not None
        and delivery.clean is True
        and delivery.commits == 0
        and delivery.unmerged_tip is None
    )


def under_worktrees(repo: str | None, worktree: str | None) -> bool:
    """Whether ``worktree`` lies under ``<repo>/.claude/worktrees/`` (pure path logic)."""
    if not repo or not worktree:
        return False
    root = PurePath(repo).joinpath(*WORKTREES_DIR)
    path = PurePath(worktree)
    return path != root and root in path.parents and ".." not in path.parts


def tidy_check(agent: Agent, reported: bool) -> TidyVerdict:
    """``tidy_verdict`` plus what makes the worktree volee's to remove, all at once."""
    missing: list[str] = []
    if not agent.launched_by_volee:
        missing.append("volee did not launch this agent")
    if not under_worktrees(agent.repo, agent.worktree):
        missing.append(f"the worktree is not under {agent.repo or '<repo>'}/.claude/worktrees/")
    delivery = agent.delivery
    last_change = max(agent.state_since, agent.activity_at or agent.state_since)
    if delivery is None:
        missing.append("no delivery evidence was read")
    elif delivery.checked_at < last_change:
        missing.append("the delivery evidence is older than the agent's last change")
    if _nothing_done(agent, delivery):
        base = tidy_verdict(agent, delivery, reported=True)
    else:
        base = tidy_verdict(agent, delivery, reported)
    # "the tree was never read" repeats "no delivery evidence": say it once.
    if delivery is None:
        missing += [m for m in base.missing if m != "the tree was never read"]
    else:
        missing += base.missing
    return TidyVerdict(not missing, tuple(missing))

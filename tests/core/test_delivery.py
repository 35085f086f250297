"""Delivery and cleanup rules: tidy_verdict and tidy_check (seed 002, "Cleanup")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from volee_desktop.core.delivery import (
    judge_change,
    tidy_check,
    tidy_verdict,
    under_worktrees,
)
from volee_desktop.core.model import Agent, Delivery, Harness, PullRequest, PushState
from volee_desktop.core.states import AgentState

from .support import T0, agent_id

TIP = "c" * 40
REPO = "/home/p/repo"
WT = f"{REPO}/.claude/worktrees/fix-bug"


def evidence(**fields: Any) -> Delivery:
    base: dict[str, Any] = {
        "branch": "volee/fix-bug",
        "base": "main",
        "commits": 0,
        "tip": TIP,
        "unmerged_tip": TIP,
        "merged_into_base": True,
        "pushed": PushState.PUSHED,
        "clean": True,
        "pull_request_known": True,
        "checked_at": T0 + 10,
    }
    base.update(fields)
    return Delivery(**base)


def worker(**fields: Any) -> Agent:
    base: dict[str, Any] = {
        "id": agent_id(1),
        "name": "fix-bug",
        "harness": Harness.CLAUDE,
        "state": AgentState.STOPPED,
        "state_since": T0 + 5,
        "sessions": ("s1",),
        "repo": REPO,
        "worktree": WT,
        "branch": "volee/fix-bug",
        "delivery": evidence(),
    }
    base.update(fields)
    return Agent(**base)


# --- tidy_verdict -------------------------------------------------------------------------


def test_merged_clean_and_not_busy_may_go() -> None:
    agent = worker()
    assert tidy_verdict(agent, agent.delivery, reported=False).removable


def test_merged_through_a_pull_request_at_the_tip_may_go() -> None:
    d = evidence(
        merged_into_base=False,
        commits=1,
        pull_request=PullRequest(number=3, state="merged", head=TIP),
    )
    assert tidy_verdict(worker(delivery=d), d, reported=False).removable


def test_reported_work_may_go() -> None:
    d = evidence(merged_into_base=False, commits=0, unmerged_tip=None)
    assert tidy_verdict(worker(delivery=d), d, reported=True).removable


@pytest.mark.parametrize("busy", [AgentState.WORKING, AgentState.LAUNCHING, AgentState.NEEDS_INPUT])
def test_a_busy_agent_keeps_its_worktree(busy: AgentState) -> None:
    agent = worker(state=busy)
    verdict = tidy_verdict(agent, agent.delivery, reported=False)
    assert not verdict.removable
    assert verdict.missing == (f"the agent is {busy}",)


def test_every_missing_condition_is_reported_at_once() -> None:
    d = evidence(merged_into_base=False, clean=False, commits=2)
    verdict = tidy_verdict(worker(state=AgentState.WORKING, delivery=d), d, reported=False)
    assert not verdict.removable
    assert len(verdict.missing) == 3
    assert "working" in verdict.missing[0]
    assert "uncommitted" in verdict.missing[1]
    assert "not delivered" in verdict.missing[2]


def test_an_open_pull_request_is_not_delivery_for_cleanup() -> None:
    d = evidence(
        merged_into_base=False,
        commits=1,
        pull_request=PullRequest(number=3, state="open", head=TIP),
    )
    assert not tidy_verdict(worker(delivery=d), d, reported=False).removable


def test_a_merged_pull_request_of_an_older_tip_is_not_delivery() -> None:
    d = evidence(
        merged_into_base=False,
        commits=1,
        pull_request=PullRequest(number=3, state="merged", head="d" * 40),
    )
    assert not tidy_verdict(worker(delivery=d), d, reported=False).removable


# --- tidy_check ---------------------------------------------------------------------------


def test_tidy_check_passes_for_volees_delivered_worktree() -> None:
    verdict = tidy_check(worker(), reported=False)
    assert verdict.removable, verdict.missing


def test_tidy_check_needs_an_agent_volee_launched() -> None:
    verdict = tidy_check(worker(launched_by_volee=False), reported=False)
    assert verdict.missing == ("volee did not launch this agent",)


@pytest.mark.parametrize(
    "path",
    [
        "/home/p/repo",
        "/home/p/repo/.claude/worktrees",
        "/home/p/elsewhere/fix-bug",
        "/home/p/repo/.claude/worktrees/../../x",
        "/home/p/repo/src",
    ],
)
def test_tidy_check_needs_a_worktree_under_claude_worktrees(path: str) -> None:
    verdict = tidy_check(worker(worktree=path), reported=False)
    assert not verdict.removable
    assert any(".claude/worktrees" in m for m in verdict.missing)


def test_under_worktrees_nested_paths() -> None:
    assert under_worktrees(REPO, f"{REPO}/.claude/worktrees/a/b")
    assert not under_worktrees(None, WT)


def test_tidy_check_needs_evidence_checked_since_the_last_change() -> None:
    stale = worker(state_since=T0 + 20)
    verdict = tidy_check(stale, reported=False)
    assert verdict.missing == ("the delivery evidence is older than the agent's last change",)
    active = worker(activity_at=T0 + 30)
    assert not tidy_check(active, reported=False).removable


def test_tidy_check_without_evidence_names_it_once() -> None:
    verdict = tidy_check(worker(delivery=None), reported=False)
    assert not verdict.removable
    assert "no delivery evidence was read" in verdict.missing
    assert "the tree was never read" not in verdict.missing


def test_tidy_check_reports_every_missing_condition_at_once() -> None:
    d = evidence(merged_into_base=False, clean=False, commits=1, checked_at=T0)
    agent = worker(launched_by_volee=False, worktree="/tmp/x", state=AgentState.WORKING, delivery=d)
    verdict = tidy_check(agent, reported=False)
    assert len(verdict.missing) == 6


def test_a_launch_that_failed_before_any_session_needs_no_delivery() -> None:
    d = evidence(merged_into_base=False, commits=0, unmerged_tip=None)
    agent = worker(state=AgentState.FAILED, sessions=(), delivery=d)
    assert tidy_check(agent, reported=False).removable


def test_a_failed_launch_with_commits_of_its_own_still_needs_delivery() -> None:
    d = evidence(merged_into_base=False, commits=1)
    agent = worker(state=AgentState.FAILED, sessions=(), delivery=d)
    assert not tidy_check(agent, reported=False).removable
    dirty = evidence(merged_into_base=False, commits=0, unmerged_tip=None, clean=False)
    assert not tidy_check(replace(agent, delivery=dirty), reported=False).removable


def test_the_branch_is_never_part_of_the_decision() -> None:
    assert tidy_check(worker(branch=None), reported=False).removable
    assert tidy_check(worker(branch="someone-elses"), reported=False).removable


# --- judge_change -------------------------------------------------------------------------


def test_judge_change_delivered_summary() -> None:
    d = evidence(
        merged_into_base=False,
        commits=2,
        pull_request=PullRequest(number=7, state="open", head=TIP),
    )
    assert judge_change(d) == (True, "2 commits, pushed, pull request #7 open, clean tree")


def test_judge_change_push_state_unknown_is_missing() -> None:
    d = evidence(
        merged_into_base=False,
        commits=1,
        pushed=PushState.UNKNOWN,
        pull_request=PullRequest(number=7, state="open", head=TIP),
    )
    ok, reason = judge_change(d)
    assert not ok
    assert reason == "push state unknown"


def test_judge_change_closed_pull_request() -> None:
    d = evidence(
        merged_into_base=False,
        commits=1,
        pull_request=PullRequest(number=7, state="closed", head=TIP),
    )
    assert judge_change(d) == (False, "pull request #7 is closed")

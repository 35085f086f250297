"""Delivery and cleanup rules: tidy_verdict and tidy_check (seed 002, "Cleanup")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from volee_desktop.core.delivery import (
    TidyVerdict,
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


# --- what a person reads: every missing condition, in words -----------------------------


def test_a_change_that_proves_nothing_lists_every_missing_condition_in_one_reason() -> None:
    d = evidence(merged_into_base=False, commits=0, clean=None, pushed=PushState.UNPUSHED)
    assert judge_change(d) == (
        False,
        "no commits ahead of main; the tree could not be read; commits not pushed; no pull request",
    )


def test_a_base_branch_volee_could_not_name_is_called_the_base_branch() -> None:
    d = evidence(merged_into_base=False, base=None, commits=0, clean=False)
    assert judge_change(d) == (
        False,
        "no commits ahead of the base branch; uncommitted changes in the tree; no pull request",
    )
    merged = evidence(base=None)
    assert judge_change(merged) == (True, "merged into the base branch")
    assert judge_change(evidence()) == (True, "merged into main")


def test_pull_requests_volee_cannot_read_say_how_to_let_it_read_them() -> None:
    d = evidence(merged_into_base=False, commits=1, pull_request_known=False)
    assert judge_change(d) == (
        False,
        "pull request unknown (volee reads pull requests on GitHub with a token stored in "
        "the keyring, see docs/missions.md; a branch merged into its base always counts)",
    )


def test_one_commit_on_a_repository_without_remote_is_delivered_as_one_commit() -> None:
    d = evidence(merged_into_base=False, commits=1, pushed=PushState.NO_REMOTE)
    assert judge_change(d) == (True, "1 commit, no remote, clean tree")


def test_a_worktree_never_read_is_kept_and_says_so() -> None:
    verdict = tidy_verdict(worker(delivery=None), None, reported=False)
    assert verdict == TidyVerdict(
        removable=False,
        missing=(
            "the tree was never read",
            "the work is not delivered (not merged, no merged pull request, no report)",
        ),
    )


def test_a_merged_worktree_with_uncommitted_changes_is_kept() -> None:
    d = evidence(clean=False)
    assert tidy_verdict(worker(delivery=d), d, reported=False) == TidyVerdict(
        removable=False, missing=("uncommitted changes in the tree",)
    )


def test_a_worktree_outside_claude_worktrees_is_named_with_its_repository() -> None:
    verdict = tidy_check(worker(worktree="/tmp/x"), reported=False)
    assert verdict.missing == (f"the worktree is not under {REPO}/.claude/worktrees/",)
    unknown = tidy_check(worker(repo=None), reported=False)
    assert unknown.missing == ("the worktree is not under <repo>/.claude/worktrees/",)


def test_evidence_read_at_the_very_moment_of_the_last_change_is_fresh_enough_to_tidy() -> None:
    d = evidence(checked_at=T0 + 5)
    assert tidy_check(worker(delivery=d, state_since=T0 + 5), reported=False).removable
    assert tidy_check(worker(activity_at=T0 + 10), reported=False).removable


def test_a_reported_worktree_may_be_tidied_without_a_merge() -> None:
    d = evidence(merged_into_base=False, commits=2)
    assert tidy_check(worker(delivery=d), reported=True).removable
    assert not tidy_check(worker(delivery=d), reported=False).removable

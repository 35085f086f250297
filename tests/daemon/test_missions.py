"""The missions runner in a real in-process daemon: real git, fake-harness agents, fake GitHub."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import keyring
import pytest

from tests.daemon.helpers import close_stopping_agents
from tests.fakes.fake_github import FakeGitHub, MemoryKeyring
from tests.polling import until
from volee_desktop.core.model import MissionStatus, Verdict
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.ipc.server import Connection
from volee_desktop.paths import dirs

from .gitrepos import git, make_repo

T = TypeVar("T")
pytestmark = pytest.mark.e2e


@pytest.fixture
def root(fake_claude: Path) -> Path:
    return fake_claude


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    server = FakeGitHub(token="ghp_secret").start()
    previous = keyring.get_keyring()
    store = MemoryKeyring()
    store.set_password("volee", "github", "ghp_secret")
    keyring.set_keyring(store)
    monkeypatch.setenv("VOLEE_GITHUB_API", server.url)
    yield server
    keyring.set_keyring(previous)
    server.close()


@pytest.fixture
async def daemon(root: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await close_stopping_agents(d)


async def call(d: Daemon, method: str, **params: Any) -> Any:
    return await d.api(cast(Connection, None), method, params)


def status(d: Daemon, mission: str) -> MissionStatus:
    return d.service.registry.missions[mission].status


async def start_mission(d: Daemon, repo: Path, kind: str = "change") -> tuple[str, str]:
    view = await call(
        d, "missions.create", goal="add two files", kind=kind, repositories=[str(repo)]
    )
    mission = view["id"]
    coordinator = view["coordinator"]
    assert coordinator
    await until(
        lambda: d.service.registry.agents[coordinator].state is AgentState.DONE,
        what="the coordinator read its brief",
        timeout=20,
    )
    return mission, coordinator


COMMIT = "RUN: echo {n} > {n}.txt && git add {n}.txt && git commit -qm {n}"


async def spawn(d: Daemon, coordinator: str, prompt: str) -> str:
    view = await call(d, "missions.spawn_worker", agent=coordinator, prompt=prompt, verbatim=True)
    return cast(str, view["id"])


async def test_a_change_mission_without_a_remote_runs_to_approval_merges_and_closes(
    root: Path, daemon: Daemon
) -> None:
    repo = make_repo(root, remote=False)
    mission, coordinator = await start_mission(daemon, repo)
    w1 = await spawn(daemon, coordinator, COMMIT.format(n="one"))
    w2 = await spawn(daemon, coordinator, COMMIT.format(n="two"))
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    m = daemon.service.registry.missions[mission]
    assert {m.assessments[w].verdict for w in (w1, w2)} == {Verdict.DELIVERED}
    assert m.report_requested
    # The coordinator was told each verdict and asked for its report, in the mission thread.
    shown = await call(daemon, "missions.show", mission=mission)
    bodies = [msg["body"] for msg in shown["messages"] if msg["sender"] == "volee"]
    assert sum("present your report" in b for b in bodies) == 1
    assert sum("delivered" in b for b in bodies) >= 2

    with pytest.raises(IpcError, match="only the coordinator"):
        await call(daemon, "missions.request_approval", agent=w1, body="me?")
    report = await call(
        daemon, "missions.request_approval", agent=coordinator, body="both files added"
    )
    assert status(daemon, mission) is MissionStatus.AWAITING_APPROVAL
    assert daemon.service.registry.missions[mission].report == report["message"]

    await call(daemon, "missions.answer", mission=mission, option="approve")
    await until(lambda: status(daemon, mission) is MissionStatus.CLOSED, what="closed", timeout=20)
    assert (repo / "one.txt").exists()
    assert (repo / "two.txt").exists()
    log = git(repo, "log", "--oneline", "main")
    assert log.count("Merge volee/") == 2
    for w in (w1, w2):
        assert daemon.service.registry.agents[w].held_for_good


async def test_a_different_answer_goes_back_to_reporting(root: Path, daemon: Daemon) -> None:
    repo = make_repo(root, remote=False)
    mission, coordinator = await start_mission(daemon, repo)
    await spawn(daemon, coordinator, COMMIT.format(n="one"))
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    await call(daemon, "missions.request_approval", agent=coordinator, body="done")
    with pytest.raises(IpcError, match="not an option"):
        await call(daemon, "missions.answer", mission=mission, option="yes please")
    view = await call(daemon, "missions.answer", mission=mission, text="add a test first")
    assert view["status"] == "reporting"
    assert "add a test first" in view["reason"]
    assert "one.txt" not in git(repo, "ls-files")
    shown = await call(daemon, "missions.show", mission=mission)
    told = [m for m in shown["messages"] if "did not approve" in m["body"]]
    assert told
    assert list(told[0]["recipients"]) == [coordinator]


async def test_an_analysis_mission_completes_from_a_report_message(
    root: Path, daemon: Daemon
) -> None:
    folder = root / "notes"
    folder.mkdir()
    mission, coordinator = await start_mission(daemon, folder, kind="analysis")
    worker = await spawn(daemon, coordinator, "look around")
    await until(
        lambda: daemon.service.registry.agents[worker].state is AgentState.DONE,
        what="done",
        timeout=20,
    )
    await until(
        lambda: daemon.service.registry.missions[mission].assessments.get(worker),
        what="a verdict",
        timeout=20,
    )
    assert (
        daemon.service.registry.missions[mission].assessments[worker].verdict
        is Verdict.NOT_DELIVERED
    )
    await call(
        daemon,
        "messages.post",
        sender=worker,
        to=[coordinator],
        body="found 3 issues",
        kind="report",
    )
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    await call(daemon, "missions.request_approval", agent=coordinator, body="3 issues")
    await call(daemon, "missions.answer", mission=mission, option="approve")
    assert status(daemon, mission) is MissionStatus.CLOSED


async def test_with_a_bare_remote_and_github_the_pull_request_is_the_evidence(
    root: Path, daemon: Daemon, github: FakeGitHub
) -> None:
    repo = make_repo(root, slug="acme/widget")
    mission, coordinator = await start_mission(daemon, repo)
    worker = await spawn(
        daemon,
        coordinator,
        COMMIT.format(n="one") + " && git push -q -u origin HEAD",
    )
    await until(
        lambda: daemon.service.registry.missions[mission].assessments.get(worker),
        what="a verdict",
        timeout=20,
    )
    first = daemon.service.registry.missions[mission].assessments[worker]
    assert first.verdict is Verdict.NOT_DELIVERED
    assert first.reason == "no pull request"
    agent = daemon.service.registry.agents[worker]
    tip = git(repo, "rev-parse", agent.branch or "")
    github.open_pr("acme", "widget", agent.branch or "", tip)
    await call(daemon, "missions.check", mission=mission)
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    await call(daemon, "missions.request_approval", agent=coordinator, body="PR #1")
    await call(daemon, "missions.answer", mission=mission, option="approve")
    await until(lambda: status(daemon, mission) is MissionStatus.CLOSED, what="closed", timeout=20)
    assert ("PUT", "/repos/acme/widget/pulls/1/merge") in github.requests


async def test_routing_is_enforced_on_posted_messages(root: Path, daemon: Daemon) -> None:
    repo = make_repo(root, remote=False)
    _mission, coordinator = await start_mission(daemon, repo)
    stranger = await call(
        daemon, "agents.spawn", harness="claude", prompt="hello", cwd=str(root), name="stranger"
    )
    with pytest.raises(IpcError, match="may not write"):
        await call(daemon, "messages.post", sender=stranger["id"], to=[coordinator], body="hi")
    posted = await call(daemon, "messages.post", sender=coordinator, to=["human"], body="hello")
    read = await call(daemon, "messages.read", agent="human")
    assert [m["id"] for m in read] == [posted["message"]]
    assert await call(daemon, "messages.read", agent="human") == []


async def test_tidy_removes_only_delivered_worktrees_and_keeps_branches(
    root: Path, daemon: Daemon
) -> None:
    repo = make_repo(root, remote=False)
    mission, coordinator = await start_mission(daemon, repo)
    w1 = await spawn(daemon, coordinator, COMMIT.format(n="one"))
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    plan = await call(daemon, "tidy", dry_run=True)
    entry = next(e for e in plan if e["agent"] == w1)
    assert not entry["removable"]
    assert any("not delivered" in m for m in entry["missing"])
    await call(daemon, "missions.request_approval", agent=coordinator, body="ok")
    await call(daemon, "missions.answer", mission=mission, option="approve")
    await until(lambda: status(daemon, mission) is MissionStatus.CLOSED, what="closed", timeout=20)
    agent = daemon.service.registry.agents[w1]
    assert agent.worktree
    plan = await call(daemon, "tidy", dry_run=True)
    entry = next(e for e in plan if e["agent"] == w1)
    assert entry["removable"], entry["missing"]
    assert Path(agent.worktree).is_dir()
    record = daemon.dirs.hosts / f"{w1}.json"
    await until(record.exists, what="the worker's host record", timeout=20)
    done = await call(daemon, "tidy")
    assert next(e for e in done if e["agent"] == w1)["removed"]
    assert not Path(agent.worktree).exists()
    assert git(repo, "branch", "--list", agent.branch or "")
    # Seed (ADR 0024): the daemon removes the host records of agents that are tidied.
    assert not record.exists()
    assert not record.with_suffix(".log").exists()


async def test_approval_merges_into_a_base_tree_holding_volees_worktrees(
    root: Path, daemon: Daemon
) -> None:
    # A project that does not ignore .claude/: volee's worktrees are untracked files in it.
    repo = make_repo(root, remote=False)
    git(repo, "rm", "-q", ".gitignore")
    git(repo, "commit", "-q", "-m", "no ignore file")
    mission, coordinator = await start_mission(daemon, repo)
    worker = await spawn(daemon, coordinator, COMMIT.format(n="one"))
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    shown = await call(daemon, "missions.show", mission=mission)
    view = next(a for a in shown["agents"] if a["id"] == worker)
    assert view["verdict"] == "delivered"
    assert view["verdict_reason"] == "1 commit, no remote, clean tree"
    assert view["delivery"]["commits"] == 1
    assert view["delivery"]["pushed"] == "no-remote"
    assert view["delivery"]["clean"] is True
    await call(daemon, "missions.request_approval", agent=coordinator, body="one file")
    # The answer waits for the merges: it replies with the mission closed.
    answered = await call(daemon, "missions.answer", mission=mission, option="approve")
    assert answered["status"] == "closed", answered["reason"]
    assert (repo / "one.txt").exists()
    shown = await call(daemon, "missions.show", mission=mission)
    notices = [m["body"] for m in shown["messages"] if m["sender"] == "volee"]
    # In the order they were posted, even within one millisecond.
    assert notices.index("The human approved your report.") < notices.index(
        "The mission is closed."
    )


class TouchedKeyring(MemoryKeyring):
    """A keyring that records every read (a real one may pop a password prompt)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, str]] = []

    def get_password(self, service: str, username: str) -> str | None:
        self.reads.append((service, username))
        return super().get_password(service, username)


@pytest.fixture
def touched_keyring() -> Iterator[TouchedKeyring]:
    previous = keyring.get_keyring()
    store = TouchedKeyring()
    keyring.set_keyring(store)
    yield store
    keyring.set_keyring(previous)


@pytest.mark.parametrize("remote", ["none", "not-github"])
async def test_a_mission_that_needs_no_forge_never_touches_the_keyring(
    root: Path, daemon: Daemon, touched_keyring: TouchedKeyring, remote: str
) -> None:
    repo = make_repo(root, remote=remote != "none")
    mission, coordinator = await start_mission(daemon, repo)
    push = " && git push -q -u origin HEAD" if remote != "none" else ""
    worker = await spawn(daemon, coordinator, COMMIT.format(n="one") + push)
    await until(
        lambda: daemon.service.registry.missions[mission].assessments.get(worker),
        what="a verdict",
        timeout=20,
    )
    assessment = daemon.service.registry.missions[mission].assessments[worker]
    if remote == "none":
        assert assessment.verdict is Verdict.DELIVERED
    else:  # pull requests are read on GitHub only: unknown here, and the keyring left alone
        assert "pull request unknown" in assessment.reason
        assert touched_keyring.reads == []
        return
    assert touched_keyring.reads == []
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    await call(daemon, "missions.request_approval", agent=coordinator, body="one file")
    answered = await call(daemon, "missions.answer", mission=mission, option="approve")
    assert answered["status"] == "closed", answered["reason"]
    assert (repo / "one.txt").exists()
    assert touched_keyring.reads == []


async def test_agents_changes_shows_what_a_merge_would_bring(root: Path, daemon: Daemon) -> None:
    repo = make_repo(root, remote=False)
    mission, coordinator = await start_mission(daemon, repo)
    worker = await spawn(daemon, coordinator, COMMIT.format(n="one"))
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    summary = await call(daemon, "agents.changes", agent=worker)
    assert summary["base"] == "main"
    assert summary["files"] == [{"path": "one.txt", "added": 1, "removed": 0}]
    assert (summary["added"], summary["removed"]) == (1, 0)
    assert "diff" not in summary
    full = await call(daemon, "agents.changes", agent=worker, diff=True)
    assert "+one" in full["diff"]
    assert full["truncated"] is False
    with pytest.raises(IpcError, match="no branch of its own"):
        await call(daemon, "agents.changes", agent=coordinator)


async def test_the_supervisors_own_events_never_trigger_another_round(
    root: Path, daemon: Daemon
) -> None:
    from volee_desktop.core import events as ev

    repo = make_repo(root, remote=False)
    mission, _coordinator = await start_mission(daemon, repo)
    scheduled: list[str] = []
    runner = daemon.missions
    runner.schedule = scheduled.append  # type: ignore[method-assign]

    own = ev.MissionUpdated(at=time.time(), mission=mission, reason="the supervisor's own")
    await runner.commit_own([own])
    assert scheduled == []

    other = ev.MissionUpdated(at=time.time(), mission=mission, reason="somebody else's")
    await daemon.service.commit([other])
    assert scheduled == [mission]


async def test_the_sweep_at_start_supervises_every_open_mission_and_a_failed_round_is_only_logged(
    root: Path, daemon: Daemon, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.core import events as ev
    from volee_desktop.daemon.missions import runner as missions_module

    repo = make_repo(root, remote=False)
    mission, _coordinator = await start_mission(daemon, repo)
    runner = daemon.missions
    scheduled: list[str] = []
    schedule = runner.schedule
    runner.schedule = scheduled.append  # type: ignore[method-assign]
    await runner.sweep()
    assert scheduled == [mission]
    runner.schedule = schedule  # type: ignore[method-assign]

    def broken(*_args: object) -> None:
        raise RuntimeError("a rule that broke")

    monkeypatch.setattr(missions_module, "supervise", broken)
    # The request whose event triggers the round is answered; the round's failure is logged.
    await daemon.service.commit(
        [ev.MissionUpdated(at=time.time(), mission=mission, reason="an outside change")]
    )
    await until(
        lambda: "a rule that broke" in caplog.text, what="the failed round logged", timeout=20
    )
    assert status(daemon, mission) is MissionStatus.RUNNING


async def test_delivery_evidence_a_client_sends_is_judged_like_gits(
    root: Path, daemon: Daemon
) -> None:
    # Seed 002: a daemon without a git source judges the evidence clients send, with the time
    # it was read. The worker commits nothing: git says not delivered; a forge says otherwise.
    repo = make_repo(root, remote=False)
    mission, coordinator = await start_mission(daemon, repo)
    worker = await spawn(daemon, coordinator, "say hello")
    await until(
        lambda: (
            (a := daemon.service.registry.missions[mission].assessments.get(worker))
            and a.verdict is Verdict.NOT_DELIVERED
        ),
        what="git's verdict",
        timeout=20,
    )
    evidence = {
        "branch": "volee/feature", "base": "main", "commits": 2, "tip": "c" * 40,
        "pushed": "no-remote", "clean": True, "checked_at": time.time(),
    }  # fmt: skip

    answer = await call(daemon, "missions.evidence", agent=worker, delivery=evidence)

    assert answer["delivery"]["commits"] == 2
    await until(
        lambda: status(daemon, mission) is MissionStatus.REPORTING, what="reporting", timeout=20
    )
    judged = daemon.service.registry.missions[mission].assessments[worker]
    assert judged.verdict is Verdict.DELIVERED
    assert judged.reason.startswith("2 commits")


@pytest.mark.parametrize(
    ("delivery", "says"),
    [
        ("lots", "must be an object of delivery evidence"),
        ({"commits": "two", "checked_at": 1.0}, "is not delivery evidence"),
        ({"commits": 2}, "checked_at must say when the evidence was read"),
        ({"commits": 2, "checked_at": float("nan")}, "checked_at must say when"),
    ],
)
async def test_bad_delivery_evidence_is_a_bad_request_naming_what_is_wrong(
    root: Path, daemon: Daemon, delivery: object, says: str
) -> None:
    repo = make_repo(root, remote=False)
    _mission, coordinator = await start_mission(daemon, repo)
    with pytest.raises(IpcError, match=says):
        await call(daemon, "missions.evidence", agent=coordinator, delivery=delivery)

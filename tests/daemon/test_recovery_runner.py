"""M38 in a real daemon with real hosts and the fake claude, on a fake clock.

The clock only decides when a waiting restart falls due: the programs, hosts, records
and events are real.  Each test crashes a turn for real (the fake harness's tool kills it).
The fake clock starts at the real time and stands still: the hooks of the real programs carry
the real time, later than every event the daemon stamps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.clock import FakeClock
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core import recovery as rules
from volee_desktop.core.model import VOLEE, Agent, MessageKind
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.agents.runner import ResumeParams, SendParams
from volee_desktop.daemon.errors import Refused
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.params import AgentParams, SpawnParams, decode
from volee_desktop.paths import dirs

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"
# The tool kills the fake harness (its shell's parent) mid-turn: a crash during a turn.
KILL_TURN = "RUN: kill -KILL $PPID"

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=time.time())


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="vp", dir="/tmp"))
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(FAKE_CLAUDE))
    monkeypatch.setenv("FAKE_HARNESS_HOME", str(root / "fh"))
    (root / "p").mkdir()
    yield root / "p"
    kill_all_hosts()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def daemon(clock: FakeClock, project: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs(), clock=clock)
    yield d
    await d.close()


def records() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in dirs().hosts.glob("ag_*.json")]


def kill(record: dict[str, Any]) -> None:
    """Take a host and its program down at once, as a machine stopping would (no exit)."""
    pids = [record["host_pid"], record.get("program_pid")]
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in pids:
            if pid:
                try:
                    os.killpg(pid, sig) if pid == record.get("program_pid") else os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass


def kill_all_hosts() -> None:
    for record in records():
        kill(record)


async def spawn(d: Daemon, project: Path, prompt: str, **params: Any) -> Agent:
    view = await d.agents.api_spawn(
        None,  # type: ignore[arg-type]
        decode(
            SpawnParams, {"prompt": prompt, "cwd": str(project), "env": dict(os.environ), **params}
        ),
    )
    return d.service.registry.agents[view["id"]]


def agent(d: Daemon, agent_id: str) -> Agent:
    return d.service.registry.agents[agent_id]


def events_of(d: Daemon, agent_id: str, kind: type[ev.Event]) -> list[Any]:
    return [
        e
        for _, e in d.service.events_after(0)
        if isinstance(e, kind) and getattr(e, "agent", None) == agent_id
    ]


async def crashed(d: Daemon, project: Path) -> Agent:
    """An agent whose turn was killed by SIGKILL: a restart waits."""
    a = await spawn(d, project, KILL_TURN)
    return await until(lambda: _waiting(d, a.id), what="a restart scheduled")


def _waiting(d: Daemon, agent_id: str) -> Agent | None:
    a = agent(d, agent_id)
    return a if a.restart is not None else None


def host_starts(d: Daemon, agent_id: str) -> list[ev.HostStarted]:
    return events_of(d, agent_id, ev.HostStarted)


async def test_m38_a_crash_schedules_a_durable_restart_and_stays_working(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    assert a.state is AgentState.WORKING
    assert a.detail == "killed by SIGKILL; continuing in 1 s (automatic restart 1 of 3)"
    scheduled = events_of(daemon, a.id, ev.RestartScheduled)
    assert [(s.attempt, s.budget, s.due_at - s.at) for s in scheduled] == [(1, 3, 1.0)]
    assert clock.pending() == [scheduled[0].due_at]


async def test_m38_when_due_it_resumes_with_continue_as_a_volee_notice(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    assert clock.advance(0.5) == 0  # not due yet: no timer ran
    assert len(host_starts(daemon, a.id)) == 1
    clock.advance(0.5)
    started = await until(lambda: host_starts(daemon, a.id)[1:], what="the restart")
    assert (started[0].how, started[0].automatic) == ("restart", True)
    assert started[0].reason == "automatic restart 1 of 3"
    notices = [
        m
        for m in daemon.service.registry.messages.values()
        if m.sender == VOLEE and a.id in m.recipients
    ]
    assert [m.kind for m in notices] == [MessageKind.NOTICE]
    assert notices[0].body.startswith("[volee] ")
    assert notices[0].body.endswith("Continue where you left off.")
    argv = next(r for r in records() if r["agent"] == a.id)["argv"]
    assert argv[argv.index("--resume") + 1] == a.session
    assert argv[-1] == notices[0].body


async def test_m38_stop_cancels_a_waiting_restart(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    await daemon.agents.stop(a, reason="")
    assert clock.pending() == []
    assert clock.advance(60) == 0
    assert len(host_starts(daemon, a.id)) == 1
    after = agent(daemon, a.id)
    assert (after.state, after.restart) == (AgentState.STOPPED, None)
    assert [c.reason for c in events_of(daemon, a.id, ev.RestartCancelled)] == ["stopped by you"]


async def test_m38_a_parent_hears_when_the_waiting_restart_of_its_child_is_cancelled(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    parent = await spawn(daemon, project, "plan the work")
    child = await spawn(daemon, project, KILL_TURN, parent=parent.id)
    child = await until(lambda: _waiting(daemon, child.id), what="a restart scheduled")

    await daemon.agents.stop(child, reason="")

    def told() -> list[str]:
        return [
            m.body
            for m in daemon.service.registry.messages.values()
            if m.sender == VOLEE and parent.id in m.recipients
        ]

    said = await until(told, what="the parent told")
    assert said == [f"[volee] {child.name}: its automatic restart was called off (stopped by you)"]


async def test_m38_forget_cancels_a_waiting_restart(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    await daemon.agents.api_forget(None, decode(AgentParams, {"agent": a.id}))  # type: ignore[arg-type]
    assert clock.pending() == []
    assert clock.advance(60) == 0
    assert a.id not in daemon.service.registry.agents
    assert not any(r["agent"] == a.id for r in records())


async def test_m38_a_message_replaces_the_waiting_restart_without_the_budget(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    result = await daemon.agents.api_send(
        None, decode(SendParams, {"agent": a.id, "text": "carry on please"})
    )  # type: ignore[arg-type]
    assert result["resumed"] is True
    starts = host_starts(daemon, a.id)
    assert [(s.how, s.automatic) for s in starts] == [("launch", False), ("resume", False)]
    after = agent(daemon, a.id)
    assert after.restart is None
    assert after.restarts_in_row == 1  # neither counted nor given back
    assert clock.advance(60) == 0  # the timer did not start a second host
    assert len(host_starts(daemon, a.id)) == 2


async def test_m38_resume_during_a_waiting_restart_carries_the_run_on_with_continue(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)

    await daemon.agents.api_resume(None, decode(ResumeParams, {"agent": a.id}))  # type: ignore[arg-type]

    starts = host_starts(daemon, a.id)
    assert [(s.how, s.automatic) for s in starts] == [("launch", False), ("resume", False)]
    argv = next(r for r in records() if r["agent"] == a.id)["argv"]
    assert argv[argv.index("--resume") + 1] == a.session
    # "Continue where you left off." goes in, as volee's notice: not a run resting at its prompt.
    assert argv[-1].startswith("[volee] Your last turn was cut off (killed by SIGKILL)")
    assert argv[-1].endswith("Continue where you left off.")
    after = agent(daemon, a.id)
    assert after.restart is None
    assert after.restarts_in_row == 1  # neither counted as automatic nor given back
    assert clock.advance(60) == 0
    assert len(host_starts(daemon, a.id)) == 2


async def test_m38_attach_during_a_waiting_restart_carries_the_run_on(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)

    info = await daemon.agents.api_attach_info(None, decode(AgentParams, {"agent": a.id}))  # type: ignore[arg-type]

    assert info["agent"] == a.id
    starts = host_starts(daemon, a.id)
    assert [(s.how, s.automatic) for s in starts] == [("launch", False), ("resume", False)]
    record = next(r for r in records() if r["agent"] == a.id)
    assert info["socket"] == record["socket"]
    assert record["argv"][-1].endswith("Continue where you left off.")
    assert agent(daemon, a.id).restarts_in_row == 1
    assert clock.advance(60) == 0


async def test_m38_a_start_that_fails_leaves_the_waiting_restart(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    daemon.agents.binaries["claude"] = str(project / "no-such-claude")
    with pytest.raises(Refused):
        await daemon.agents.api_send(None, decode(SendParams, {"agent": a.id, "text": "carry on"}))  # type: ignore[arg-type]
    assert agent(daemon, a.id).restart is not None
    daemon.agents.binaries["claude"] = str(FAKE_CLAUDE)
    clock.advance(1)
    started = await until(lambda: host_starts(daemon, a.id)[1:], what="the restart")
    assert started[0].how == "restart"


async def test_m38_a_restart_that_cannot_start_fails_with_why_and_is_not_retried(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    shutil.rmtree(project)
    clock.advance(1)
    failed = await until(
        lambda: agent(daemon, a.id).state is AgentState.FAILED and agent(daemon, a.id),
        what="failed",
    )
    assert failed.detail.startswith("could not restart: directory")
    assert "no longer exists" in failed.detail
    assert clock.pending() == []
    assert failed.restart is None


async def test_m38_a_pending_restart_survives_a_daemon_restart(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await crashed(daemon, project)
    await daemon.close()
    again = await Daemon.start(dirs(), clock=clock)
    try:
        assert clock.pending() == [agent(again, a.id).restart.due_at]  # type: ignore[union-attr]
        clock.advance(1)
        started = await until(lambda: host_starts(again, a.id)[1:], what="the restart")
        assert started[0].how == "restart"
    finally:
        await again.close()
        daemon.close = _noop  # type: ignore[method-assign]


async def _noop() -> None:
    return None


async def test_m38_a_host_vanishing_under_a_working_run_is_restarted(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await spawn(daemon, project, "SLEEP: 30")
    await until(lambda: agent(daemon, a.id).state is AgentState.WORKING, what="working")
    kill(next(r for r in records() if r["agent"] == a.id))
    waiting = await until(lambda: _waiting(daemon, a.id), what="a restart")
    assert waiting.detail.startswith("volee's host was stopped; continuing in 1 s")
    assert [i.cause for i in events_of(daemon, a.id, ev.InterruptionDetected)] == ["host-stopped"]
    clock.advance(1)
    started = await until(lambda: host_starts(daemon, a.id)[1:], what="the restart")
    assert started[0].how == "restart"


async def test_m38_the_budget_comes_back_after_a_normal_turn(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # The minute of uptime, taken away for the test: the restarted host's start is stamped by
    # the fake clock, moved 1 s ahead of the real time that the hooks' turn end carries, so a
    # fast turn "ended" before its host started (the test failed when the machine was quick).
    daemon.recovery.min_uptime = -5.0
    a = await crashed(daemon, project)
    clock.advance(1)
    # The restarted turn (the "continue" prompt) ends normally: Stop -> done.
    await until(lambda: agent(daemon, a.id).state is AgentState.DONE, what="done")
    await until(lambda: agent(daemon, a.id).restarts_in_row == 0, what="the budget back")
    assert len(events_of(daemon, a.id, ev.RestartBudgetReset)) == 1


async def test_m38_past_the_budget_it_fails_with_the_reason(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    daemon.exits.policy = rules.Policy(restart_delays=(1.0,))
    a = await spawn(daemon, project, "", harness="generic", argv=["sh", "-c", "sleep 0.2; exit 3"])
    await until(lambda: _waiting(daemon, a.id), what="a restart")
    clock.advance(1)
    failed = await until(
        lambda: agent(daemon, a.id).state is AgentState.FAILED and agent(daemon, a.id),
        what="failed",
    )
    assert failed.detail == (
        "exited with code 3; not restarted again after 1 automatic restart in a row "
        "(reply to continue)"
    )
    assert [(s.how, s.automatic) for s in host_starts(daemon, a.id)] == [
        ("launch", False),
        ("restart", True),
    ]

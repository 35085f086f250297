"""Recovery figures: 50 interrupted agents at one daemon start, and 1,000 simulated crash loops.

Run: ``.venv/bin/python bench/recovery.py``.

1. Start-up: 50 agents of the fake claude were working when the "machine" stopped (their
   records say an earlier boot, their hosts are gone).  Measured: from ``Daemon.start`` to
   every eligible host running, and that no more than ``resume_cap_per_start`` started.
   Target <= 3 s.
2. Crash loops: 1,000 agents on the pure core and a fake clock, each crashing at random
   (sometimes after a normal turn that gives the budget back).  Counted: automatic restarts
   beyond the budget.  Must be 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.clock import FakeClock  # noqa: E402
from volee_desktop.core import events as ev  # noqa: E402
from volee_desktop.core import recovery as rules  # noqa: E402
from volee_desktop.core.ids import AGENT  # noqa: E402
from volee_desktop.core.model import Harness, LaunchSettings  # noqa: E402
from volee_desktop.core.registry import Registry  # noqa: E402
from volee_desktop.core.states import AgentState  # noqa: E402
from volee_desktop.daemon.ids import fresh  # noqa: E402
from volee_desktop.hosts import recordio  # noqa: E402
from volee_desktop.hosts.records import HostRecord, host_alive, read_record  # noqa: E402

FAKE_CLAUDE = ROOT / "tests" / "fakes" / "fake-claude"
AGENTS = 50


async def seed(root: Path, project: Path) -> list[str]:
    """50 working agents with a session, a transcript, and a record of a host from another boot."""
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.paths import dirs

    d = await Daemon.start(dirs(), serve=False)
    ids: list[str] = []
    now = time.time()
    booted = (recordio.boot_time() or now) - 3600
    try:
        for n in range(AGENTS):
            agent_id = fresh(AGENT)
            session = f"00000000-0000-4000-a000-{n:012d}"
            settings = LaunchSettings(
                harness=Harness.CLAUDE, cwd=str(project), env=dict(os.environ)
            )
            at = now - 600 + n  # a later n is more recent work
            await d.service.commit(
                [
                    ev.AgentRegistered(
                        at=at,
                        agent=agent_id,
                        name=f"bench-{n}",
                        harness=Harness.CLAUDE,
                        launch=settings,
                        cwd=str(project),
                    ),
                    ev.SessionLinked(at=at, agent=agent_id, session=session),
                    ev.HostStarted(at=at, agent=agent_id, host_pid=999_999, program_pid=999_998),
                    ev.StateChanged(at=at, agent=agent_id, state=AgentState.WORKING),
                ]
            )
            (root / "fh" / f"{session}.jsonl").write_text(
                json.dumps({"type": "user", "uuid": f"u{n}", "message": {"content": "task"}}) + "\n"
            )
            record = HostRecord(
                agent=agent_id,
                host_pid=999_999,
                program_pid=999_998,
                program_create_time=at,
                boot_time=booted,
                boot_id="00000000-0000-4000-8000-000000000000",
                started_at=at,
                argv=(str(FAKE_CLAUDE),),
                cwd=str(project),
            )
            path = dirs().hosts / f"{agent_id}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record.to_dict()))
            ids.append(agent_id)
    finally:
        await d.close()
    return ids


async def start_up(ids: list[str]) -> tuple[float, int, int, list[str]]:
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.paths import dirs

    began = time.perf_counter()
    d = await Daemon.start(dirs(), serve=False)
    try:
        runner = d.recovery
        await asyncio.wait_for(runner.report.done.wait(), 30)
        running = [
            a
            for a in ids
            if (r := read_record(dirs().hosts / f"{a}.json")) is not None
            and r.exit is None
            and host_alive(r)
        ]
        seconds = time.perf_counter() - began
        cap = d.config.agents.resume_cap_per_start
        return seconds, len(running), cap, running
    finally:
        await d.close()


def kill_hosts(ids: list[str]) -> None:
    from volee_desktop.paths import dirs

    for agent_id in ids:
        record = read_record(dirs().hosts / f"{agent_id}.json")
        if record is None or record.host_pid == 999_999:
            continue
        for pid in (record.program_pid, record.host_pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def bench_start_up() -> None:
    root = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    project = root / "p"
    project.mkdir()
    (root / "fh").mkdir()
    os.environ.update(
        VOLEE_HOME=str(root / "v"),
        VOLEE_CLAUDE_BIN=str(FAKE_CLAUDE),
        FAKE_HARNESS_HOME=str(root / "fh"),
    )
    ids: list[str] = []
    running: list[str] = []
    try:
        ids = asyncio.run(seed(root, project))
        seconds, started, cap, running = asyncio.run(start_up(ids))
        newest = set(ids[-cap:])
        print(
            f"start-up: {AGENTS} interrupted agents; {started} hosts running "
            f"(cap {cap}, the {cap} most recent: {set(running) == newest}) "
            f"{seconds:.2f} s from daemon start (target <= 3 s)"
        )
    finally:
        kill_hosts(ids)
        shutil.rmtree(root, ignore_errors=True)


def bench_crash_loops(loops: int = 1000, seed_: int = 38) -> None:
    rnd = random.Random(seed_)
    beyond = restarts = resets = 0
    began = time.perf_counter()
    for n in range(loops):
        delays = tuple(float(rnd.choice((1, 5, 15))) for _ in range(rnd.randint(1, 5)))
        policy = rules.Policy(restart_delays=delays)
        clock = FakeClock(start=1_000_000.0)
        reg = Registry()
        agent_id = fresh(AGENT)
        reg.apply(
            ev.AgentRegistered(at=clock.now(), agent=agent_id, name=f"l{n}", harness=Harness.CLAUDE)
        )
        reg.apply(ev.HostStarted(at=clock.now(), agent=agent_id, host_pid=1, program_pid=2))
        reg.apply(ev.StateChanged(at=clock.now(), agent=agent_id, state=AgentState.WORKING))
        in_row = 0
        for _ in range(rnd.randint(1, 30)):
            agent = reg.agents[agent_id]
            if agent.state is AgentState.FAILED:
                break
            if rnd.random() < 0.2:  # a normal turn end after some uptime
                clock.advance(rnd.choice((5.0, 70.0)))
                reg.apply(ev.StateChanged(at=clock.now(), agent=agent_id, state=AgentState.DONE))
                if rules.budget_given_back(reg.agents[agent_id], turn_ended_at=clock.now()):
                    reg.apply(ev.RestartBudgetReset(at=clock.now(), agent=agent_id))
                    resets += 1
                    in_row = 0
                reg.apply(ev.StateChanged(at=clock.now(), agent=agent_id, state=AgentState.WORKING))
                continue
            decision = rules.decide_exit(
                reg.agents[agent_id],
                code=None,
                signal="SIGKILL",
                stop_requested=False,
                now=clock.now(),
                policy=policy,
            )
            for event in decision.events():
                reg.apply(event)
            if decision.restart is None:
                break
            # The daemon arms a timer on the durable RestartScheduled: the fake clock runs it.
            clock.call_at(decision.restart.due_at, lambda: None)
            ran = clock.advance(decision.restart.due_at - clock.now())
            assert ran == 1
            reg.apply(
                ev.HostStarted(
                    at=clock.now(), agent=agent_id, host_pid=1, program_pid=2, automatic=True
                )
            )
            restarts += 1
            in_row += 1
            if in_row > policy.budget:
                beyond += 1
    seconds = time.perf_counter() - began
    print(
        f"crash loops: {loops} simulated, {restarts} automatic restarts, {resets} budgets given "
        f"back, restarts beyond budget: {beyond} (must be 0), {seconds:.2f} s"
    )


if __name__ == "__main__":
    bench_crash_loops()
    bench_start_up()

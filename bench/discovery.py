"""Benchmark of discovery: CPU seconds spent listing per hour, by who watches and how many sessions.

Run: ``.venv/bin/python bench/discovery.py [--claude PATH] [--calls 5]`` (about 15 s).

1. The real ``claude agents --json --all`` with 0 and with 50 live sessions (50
   ``~/.claude/sessions/<pid>.json`` files in a temp HOME pointing at live
   ``sleep`` processes): CPU seconds per call, from the children's CPU times
   (user + system), median of ``--calls`` calls; plus the daemon's own CPU for
   one whole observation (session folder, process table, parsing, reconcile).
2. Listings per hour from the real ``Discovery`` loop run for a simulated hour
   on a simulated clock (each listing takes the measured wall time): no
   interactive client; one interactive client while nothing changes; one while
   every listing changes something (the worst case).
3. CPU seconds per hour = listings per hour x CPU per listing.  The seed's
   budget: at most 120 listings an hour with no interactive client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from volee_desktop.config import DiscoveryConfig
from volee_desktop.core.model import Harness
from volee_desktop.core.reconcile import ListedSession, Listing
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import Coarse
from volee_desktop.daemon.context import Clients
from volee_desktop.daemon.discovery.listers import Observation, SystemLister
from volee_desktop.daemon.discovery.loop import Discovery
from volee_desktop.daemon.service import Service
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

HOUR = 3600.0


def find_claude(given: str | None) -> str:
    if given:
        return given
    cache = Path(os.environ.get("VOLEE_HARNESS_CACHE") or Path.home() / ".cache/volee-harness")
    path = cache / "claude-2.1.332/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
    found = os.environ.get("VOLEE_CLAUDE_BIN") or (str(path) if path.exists() else None)
    found = found or shutil.which("claude")
    if not found:
        sys.exit("no Claude Code: run scripts/install-harnesses or pass --claude PATH")
    return found


def fake_sessions(home: Path, count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` live sessions: session files pointing at live sleep processes."""
    folder = home / ".claude" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    procs = []
    now = int(time.time() * 1000)
    for n in range(count):
        proc = subprocess.Popen(["sleep", "600"])
        procs.append(proc)
        entry = {
            "pid": proc.pid,
            "sessionId": f"00000000-0000-4000-8000-{n:012d}",
            "cwd": f"/tmp/proj{n}",
            "startedAt": now,
            "kind": "interactive",
            "entrypoint": "cli",
            "name": f"proj{n}",
            "status": "idle" if n % 2 else "busy",
            "updatedAt": now,
        }
        (folder / f"{proc.pid}.json").write_text(json.dumps(entry))
    return procs


def measure_claude(claude: str, home: Path, calls: int) -> tuple[float, float, int]:
    """Median children CPU seconds and wall seconds per call, and the sessions it listed."""
    env = dict(os.environ, HOME=str(home))
    cpu, wall, listed = [], [], 0
    for _ in range(calls):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        out = subprocess.run(
            [claude, "agents", "--json", "--all"], env=env, capture_output=True, check=True
        ).stdout
        wall.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        listed = len(json.loads(out))
    return statistics.median(cpu), statistics.median(wall), listed


def measure_observation(claude: str, home: Path, calls: int) -> float:
    """The daemon's own CPU for one whole observation (without the claude child)."""
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    lister = SystemLister(claude)
    samples = []
    try:
        for _ in range(calls):
            began = time.process_time()
            asyncio.run(lister(time.time()))
            samples.append(time.process_time() - began)
    finally:
        if old is not None:
            os.environ["HOME"] = old
    return statistics.median(samples)


class SimClock:
    """Simulated time: a wait simply moves time on (nothing else wakes the loop)."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        self.t += timeout
        await asyncio.sleep(0)

    def call_at(self, when: float, fn: Callable[[], None]) -> None:
        raise NotImplementedError("discovery sets no timers")


async def simulate(interactive: bool, changing: bool, wall: float) -> int:
    """Listings the real loop makes in one simulated hour."""
    clock = SimClock()
    calls = 0
    finished = asyncio.Event()

    async def lister(now: float) -> Observation:
        nonlocal calls
        calls += 1
        clock.t += wall
        if clock.t >= HOUR:
            finished.set()
            await asyncio.Event().wait()  # park until cancelled
        n = calls if changing else 0
        session = ListedSession(
            harness=Harness.CLAUDE,
            session=f"00000000-0000-4000-8000-{n:012d}",
            pid=None,
            status=Coarse.IDLE,
            name=f"s{n}",
        )
        listing = Listing(sessions=(session,), complete=frozenset(), taken_at=now)
        return Observation(listing, set())

    service = Service(MemoryLog(), Registry(), Record)
    clients = Clients()
    loop = Discovery(service, DiscoveryConfig(), lister, clock, clients)
    if interactive:
        clients.joined()
    task = asyncio.ensure_future(loop.run())
    await finished.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return calls - 1  # the last one started past the hour


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claude", help="the Claude Code binary (default: the installed one)")
    parser.add_argument("--calls", type=int, default=5, help="listings measured per case")
    args = parser.parse_args()
    claude = find_claude(args.claude)
    print(f"claude: {claude}")
    costs: dict[int, tuple[float, float, float]] = {}
    for count in (0, 50):
        home = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
        procs = fake_sessions(home, count)
        try:
            cpu, wall, listed = measure_claude(claude, home, args.calls)
            own = measure_observation(claude, home, args.calls)
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
            shutil.rmtree(home, ignore_errors=True)
        assert listed == count, f"claude listed {listed} sessions, expected {count}"
        costs[count] = (cpu, wall, own)
        print(
            f"{count:>2} live sessions: claude agents --json --all {cpu:.3f} s CPU, "
            f"{wall:.3f} s wall per call; daemon side {own * 1000:.1f} ms CPU per observation"
        )
    print()
    cases = (
        ("no interactive client", False, False),
        ("one interactive client, nothing changes", True, False),
        ("one interactive client, every listing changes", True, True),
    )
    header = f"{'case':<48} {'listings/h':>10} {'CPU s/h (0)':>12} {'CPU s/h (50)':>13}"
    print(header)
    for label, interactive, changing in cases:
        per_hour = asyncio.run(simulate(interactive, changing, costs[0][1]))
        row = [per_hour * (costs[n][0] + costs[n][2]) for n in (0, 50)]
        print(f"{label:<48} {per_hour:>10} {row[0]:>12.1f} {row[1]:>13.1f}")
        if not interactive:
            verdict = "within" if per_hour <= 120 else "OVER"
            print(f"{'':<48} {verdict} the budget of 120 listings/h with no client")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The daemon compacting its log by itself: how long it runs, and what the event loop and the
appends feel of it meanwhile (docs/decisions.md D22, docs/performance.md).

    .venv/bin/python bench/compact_live.py [--agents 100] [--events 6000] [--recent 20]
        [--after 500000]

Writes a log of ``--agents`` agents of ``--events`` events each (activity records of the size
a real turn writes), all 60 days old but the last ``--recent`` agents' (today), starts a real
daemon on it (in this process, under a temporary VOLEE_HOME), then saves a periodic snapshot,
which starts the compaction.  While it runs, a ticker measures the loop's lateness (a 5 ms
sleep, how late it wakes) and an appender commits an event every 10 ms and times each commit;
both also run for as long before it, as the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.daemon.helpers import registered  # noqa: E402
from volee_desktop.core import events as ev  # noqa: E402
from volee_desktop.daemon import compaction  # noqa: E402
from volee_desktop.daemon.main import Daemon  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402
from volee_desktop.store.codec import encode_event  # noqa: E402
from volee_desktop.store.log import EventLog  # noqa: E402
from volee_desktop.store.records import Record  # noqa: E402

DAY = 86_400.0
ACTIVITY = "Bash: " + "x" * 90  # a payload of about the 133 B a real tool call's record has


def write(path: Path, agents: int, events: int, recent: int) -> int:
    now = time.time()
    written = 0
    with EventLog.open(path) as log:
        for n in range(agents):
            at = now - (0 if n >= agents - recent else 60 * DAY)
            a = registered(f"a{n}", at=at)
            batch = [a] + [
                ev.ActivityRecorded(at=at + i, agent=a.agent, activity=ACTIVITY)
                for i in range(events - 1)
            ]
            log.append_sync([Record(*encode_event(e)) for e in batch])
            written += len(batch)
    return written


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


async def measure(home: Path, agents: int) -> None:
    folders = dirs({"VOLEE_HOME": str(home)})
    t = time.perf_counter()
    d = await Daemon.start(folders, serve=False)
    print(f"daemon up in {time.perf_counter() - t:.1f} s (seq {d.service.registry.seq:,})")
    lags: list[float] = []
    commits: list[float] = []
    stop = asyncio.Event()
    agent = next(iter(d.service.registry.agents))

    async def ticker() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - t0 - 0.005)

    async def appender() -> None:
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            await d.service.commit(
                [ev.ActivityRecorded(at=time.time(), agent=agent, activity=str(i))]
            )
            commits.append(time.perf_counter() - t0)
            i += 1
            await asyncio.sleep(0.01)

    async def phase(seconds: float | None) -> tuple[list[float], list[float]]:
        lags.clear()
        commits.clear()
        stop.clear()
        tasks = [asyncio.ensure_future(ticker()), asyncio.ensure_future(appender())]
        if seconds is None:
            t0 = time.perf_counter()
            await d.snapshots.save(compact=True)
            while d.compactor._running is not None:  # a bench looks inside
                await asyncio.sleep(0.05)
            took = time.perf_counter() - t0
            status = await d.compactor.status()
            print(
                f"compaction: {status['dropped']:,} records dropped below the base at "
                f"{status['base_seq']:,} in {took:.1f} s (its own {status['seconds']:.1f} s); "
                f"{status['records']:,} records left; problem {status['problem']}"
            )
        else:
            await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*tasks)
        return list(lags), list(commits)

    try:
        base_lags, base_commits = await phase(5.0)
        run_lags, run_commits = await phase(None)
        for name, (lag, com) in (
            ("before", (base_lags, base_commits)),
            ("during", (run_lags, run_commits)),
        ):
            print(
                f"  {name}: loop late p50 {statistics.median(lag) * 1000:.1f} ms, "
                f"p99 {pct(lag, 0.99) * 1000:.1f} ms, max {max(lag) * 1000:.1f} ms; "
                f"{len(com)} commits, p50 {statistics.median(com) * 1000:.1f} ms, "
                f"p99 {pct(com, 0.99) * 1000:.1f} ms, max {max(com) * 1000:.1f} ms"
            )
    finally:
        await d.close()
    t = time.perf_counter()
    d = await Daemon.start(folders, serve=False)
    print(f"daemon up again in {time.perf_counter() - t:.1f} s (from the base)")
    try:
        t = time.perf_counter()
        status = await d.compactor.status()
        print(
            f"status.log at the first ask (counts below the base): "
            f"{time.perf_counter() - t:.3f} s, {status['records']:,} records"
        )
    finally:
        await d.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--recent", type=int, default=20)
    parser.add_argument("--after", type=int, default=compaction.COMPACT_AFTER, help="COMPACT_AFTER")
    args = parser.parse_args()
    compaction.COMPACT_AFTER = args.after
    home = Path(tempfile.mkdtemp(prefix="vc", dir="/tmp"))
    try:
        os.environ["VOLEE_HOME"] = str(home)
        folders = dirs({"VOLEE_HOME": str(home)})
        folders.state.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        n = write(folders.events_db, args.agents, args.events, args.recent)
        size = folders.events_db.stat().st_size / 1e6
        print(
            f"log: {n:,} records, {size:.1f} MB, written in {time.perf_counter() - t:.1f} s "
            f"(COMPACT_AFTER {compaction.COMPACT_AFTER:,}); load {os.getloadavg()[0]:.2f}"
        )
        asyncio.run(measure(home, args.agents))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

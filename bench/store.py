"""Benchmark of the event log: durable events/s and commit latency, and start-up reads.

Run: ``.venv/bin/python bench/store.py`` (about a minute; temp files are removed).

1. 1, 10 and 50 concurrent writers on the asyncio loop, each appending one
   event at a time and awaiting durability (fsync): events/s, p50/p99 latency
   from the ``append`` call to the answer, and events per commit.
2. A 1,000,000-event log built with ``build_log``: the time to open it, to read
   the tail after its newest snapshot, and to read everything.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from volee_desktop.store import EventLog, Record

TYPES = ("agent-state-changed", "hook-received", "message-sent", "agent-spawned")


def event(n: int, size: int = 200) -> Record:
    """A plausible event: a few hundred bytes of encoded fields, a handful of types."""
    body = (
        f'{{"agent":"a{n % 97}","session":"s{n % 13}","at":{1_700_000_000 + n},'
        f'"state":"working","n":{n},"text":"'
    ).encode()
    return Record(TYPES[n % len(TYPES)], 1, body.ljust(size - 2, b"x") + b'"}')


def build_log(
    path: Path | str,
    n: int,
    *,
    snapshot_at: int | None = None,
    snapshot_size: int = 256 * 1024,
    chunk: int = 50_000,
) -> None:
    """Build a log of ``n`` events at ``path`` quickly (big transactions), with one snapshot.

    ``snapshot_at`` defaults to ``n - 1000``, so the tail after the snapshot is
    1,000 events; pass 0 for no snapshot.  Reusable by the daemon's start-up
    benchmark (its snapshot blob is filler, not a real registry).
    """
    if snapshot_at is None:
        snapshot_at = max(n - 1000, 0)
    with EventLog.open(path) as log:
        for start in range(log.last_seq() + 1, n + 1, chunk):
            log.append_sync([event(i) for i in range(start, min(start + chunk, n + 1))])
        if snapshot_at:
            log.save_snapshot_sync(snapshot_at, 1, bytes(snapshot_size))


def _percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


async def _writers(log: EventLog, writers: int, seconds: float) -> tuple[int, list[float], float]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    clock = time.perf_counter

    async def writer(w: int) -> None:
        n = 0
        while clock() < deadline:
            started = clock()
            await log.append([event(w * 1_000_000 + n)])
            latencies.append(clock() - started)
            n += 1

    started = clock()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    return len(latencies), latencies, clock() - started


def bench_writers(folder: Path, writers: int, seconds: float) -> str:
    path = folder / f"writers-{writers}.db"
    with EventLog.open(path) as log:
        asyncio.run(_writers(log, writers, 0.3))  # warm up: file growth, caches
        commits_before, records_before = log.stats.commits, log.stats.records
        count, latencies, elapsed = asyncio.run(_writers(log, writers, seconds))
        commits = log.stats.commits - commits_before
        records = log.stats.records - records_before
    latencies.sort()
    return (
        f"writers={writers:>2}: {count / elapsed:>8,.0f} durable events/s, "
        f"commit latency p50 {_percentile(latencies, 0.5) * 1e3:.2f} ms, "
        f"p99 {_percentile(latencies, 0.99) * 1e3:.2f} ms, "
        f"mean {statistics.fmean(latencies) * 1e3:.2f} ms, "
        f"{records / max(commits, 1):.1f} events/commit"
    )


def bench_startup(folder: Path, n: int) -> list[str]:
    path = folder / "big.db"
    started = time.perf_counter()
    build_log(path, n)
    built = time.perf_counter() - started
    size_mb = path.stat().st_size / 1e6
    lines = [f"built a {n:,}-event log ({size_mb:.0f} MB) in {built:.1f} s"]

    started = time.perf_counter()
    log = EventLog.open(path)
    opened = time.perf_counter() - started
    try:
        started = time.perf_counter()
        snapshot = log.latest_snapshot()
        assert snapshot is not None
        tail = sum(1 for _ in log.read(after=snapshot.seq))
        tail_time = time.perf_counter() - started

        started = time.perf_counter()
        everything = sum(1 for _ in log.read())
        all_time = time.perf_counter() - started
    finally:
        log.close()
    lines += [
        f"open: {opened * 1e3:.1f} ms",
        f"newest snapshot + read the tail after it ({tail:,} events): {tail_time * 1e3:.1f} ms "
        f"(open + tail {(opened + tail_time) * 1e3:.1f} ms)",
        f"read everything ({everything:,} events, CRC-checked): {all_time:.2f} s "
        f"({everything / all_time:,.0f} events/s)",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0, help="per writer count")
    parser.add_argument("--events", type=int, default=1_000_000, help="size of the big log")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the temp files")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="volee-bench-store-", dir=args.dir))
    try:
        print(f"event log benchmark in {folder} (Python {sys.version.split()[0]})", flush=True)
        for writers in (1, 10, 50):
            print(bench_writers(folder, writers, args.seconds), flush=True)
        for line in bench_startup(folder, args.events):
            print(line, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

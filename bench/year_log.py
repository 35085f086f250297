"""A year of volee's event log: its size on disk and the daemon's start-up on it (issue 27, 6).

    .venv/bin/python bench/year_log.py [--agents-per-day 5] [--hours 8] [--days 250]
        [--tool-calls-per-hour 120] [--turns 4] [--cap 2000000]
    .venv/bin/python bench/year_log.py --generic --days 1   # a tiny form, no Claude Code

1. *Measured*: a real daemon and the pinned Claude Code (fake model server) doing tool calls:
   one agent spawned with ``RUN: echo 0``, then ``--turns`` more turns of one tool call each
   (``volee send``).  The records its log gained: those up to the end of the first turn are an
   agent's *start*, the rest divided by the turns are one *tool-call turn*.
2. *Multiplied out*: a person's year is ``--days`` days of ``--agents-per-day`` agents that
   each work ``--hours`` hours at ``--tool-calls-per-hour`` (a turn of one tool call each, so
   every call also carries a turn's start and end: an upper bound).  The log of that year is
   written for real by copying the measured records (ids made fresh for each copy, same
   lengths) up to ``--cap`` records; beyond the cap, the size is extrapolated linearly (printed
   as such).
3. *Start-up*: ``volee daemon run`` to the first ``agents.list`` answered, on that log: first
   with no snapshot (a full replay), then twice with the snapshot the first stop saved
   (``bench/startup.py``'s timer), with ``python -c pass`` beside it as the baseline.

Targets (issue 27): the log <= 1 GB and the start <= 2 s; past either, volee would need to
snapshot and compact the log (docs/performance.md says which applies).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet import Rig, agents, cli, wait_for  # noqa: E402
from startup import baseline, served_in  # noqa: E402

from tests.fakes.harness_env import find_harness  # noqa: E402
from volee_desktop.core.ids import new_id  # noqa: E402
from volee_desktop.daemon.compaction import KEEP_DAYS, KEEP_LAST, compact  # noqa: E402
from volee_desktop.daemon.snapshots import load_registry  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402
from volee_desktop.store.integrity import scan  # noqa: E402
from volee_desktop.store.log import EventLog  # noqa: E402
from volee_desktop.store.records import Record  # noqa: E402
from volee_desktop.store.schema import connect  # noqa: E402

ID_RE = re.compile(rb"\b([a-z]{2,3}_)[0-9A-HJKMNP-TV-Z]{26}\b")
UUID_RE = re.compile(rb"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
MB = 1_000_000


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def records(db: Path, after: int = 0) -> list[Record]:
    conn = connect(db)
    try:
        return [Record(r.type, r.version, r.payload) for r in scan(conn, after)]
    finally:
        conn.close()


def last_seq(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT MAX(seq) FROM events").fetchone()
    return int(row[0] or 0)


def sample(args: argparse.Namespace) -> tuple[list[Record], list[Record], list[Record]]:
    """(an agent's start, one tool-call turn, its end) as a real daemon recorded them."""
    claude = None if args.generic else find_harness("claude")
    if claude is None and not args.generic:
        raise SystemExit("the pinned Claude Code is not installed (scripts/install-harnesses)")
    rig = Rig(claude)
    try:
        rig.start_daemon()
        project = str(rig.sandbox.project)
        if args.generic:
            argv = ["--harness", "generic", "--", "sh", "-c", "echo 0; sleep 600"]
        else:
            argv = ["--permission-mode", "bypassPermissions", "--", "RUN: echo 0"]
        agent = cli(rig.env, "spawn", "--cwd", project, "--name", "y0", *argv).strip()
        ended = ("done", "idle") if not args.generic else ("working", "idle", "done")

        def settled() -> bool:
            return all(a["state"] in ended for a in agents(rig.env))

        wait_for("the first turn", settled, 120)
        time.sleep(2)
        db = rig.dirs.events_db
        start_seq = last_seq(db)
        turns = 0 if args.generic else args.turns
        for i in range(turns):
            cli(rig.env, "send", agent, f"RUN: echo {i + 1}")
            time.sleep(1)
            wait_for(f"turn {i + 1}", settled, 120)
            time.sleep(2)
        end_seq = last_seq(db)
        cli(rig.env, "stop", agent)  # the day is over: the person stops it
        wait_for("the stop", lambda: all(a["state"] == "stopped" for a in agents(rig.env)), 60)
        time.sleep(1)
        everything = records(db)
        head, body, tail = (
            everything[:start_seq],
            everything[start_seq:end_seq],
            everything[end_seq:],
        )
        if not body:  # a generic agent has no turns: its start stands for one
            body = head[1:] or head
            turns = 1
        per_turn = max(1, round(len(body) / max(1, turns)))
        return head, body[:per_turn], tail
    finally:
        rig.close()


AT_RE = re.compile(rb'"at":([0-9]+(?:\.[0-9]+)?)')
DAY = 86_400.0


def fresh(block: list[Record], back: float = 0.0) -> list[Record]:
    """The records with every id in them replaced by a fresh one of the same length, and
    their time moved ``back`` seconds (the life's day of the year)."""
    mapping: dict[bytes, bytes] = {}

    def earlier(match: re.Match[bytes]) -> bytes:
        return b'"at":' + repr(float(match.group(1)) - back).encode()

    def new(match: re.Match[bytes]) -> bytes:
        old = match.group(0)
        if old not in mapping:
            if len(old) == 36:
                mapping[old] = str(uuid.uuid4()).encode()
            else:
                prefix = match.group(1).decode()
                mapping[old] = new_id(prefix, int(time.time() * 1000), os.urandom(10)).encode()
        return mapping[old]

    return [
        Record(r.type, r.version, AT_RE.sub(earlier, UUID_RE.sub(new, ID_RE.sub(new, r.payload))))
        for r in block
    ]


def write_year(
    home: Path,
    life: tuple[list[Record], list[Record], list[Record]],
    lives: int,
    turns: int,
    cap: int,
    per_day: int,
) -> int:
    """The year's log in ``home``: ``lives`` agents, each its start, ``turns`` turns, its end,
    ``per_day`` a day; under a cap, the year's last lives (so its last days are written)."""
    head, turn, tail = life
    per_life = len(head) + len(turn) * turns + len(tail)
    first = max(0, lives - cap // max(1, per_life))
    folders = dirs({"VOLEE_HOME": str(home)})
    folders.state.mkdir(parents=True, exist_ok=True)
    log = EventLog.open(folders.events_db)
    written = 0
    batch: list[Record] = []
    try:
        for i in range(first, lives):
            back = (lives - 1 - i) // per_day * DAY
            for r in fresh(head + turn * turns + tail, back):
                if written + len(batch) >= cap:
                    break
                batch.append(r)
            if len(batch) >= 50_000 or written + len(batch) >= cap:
                log.append_sync(batch)
                written += len(batch)
                batch.clear()
            if written >= cap:
                break
        if batch:
            log.append_sync(batch)
            written += len(batch)
    finally:
        log.close()
    return written


def size(home: Path) -> int:
    return sum(p.stat().st_size for p in (home / "state").rglob("*") if p.is_file())


def compacted(root: Path, args: argparse.Namespace, none: float, scale: float) -> None:
    """Compact the log as the daemon's rule says (no daemon running), then start on it."""
    db = dirs({"VOLEE_HOME": str(root)}).events_db
    before = size(root)
    t = time.perf_counter()
    with EventLog.open(db) as log:
        registry, _facts = load_registry(log)
    done = compact(db, registry, now=time.time(), vacuum=True)
    took = time.perf_counter() - t
    after = size(root)
    print(
        f"compacted (keep {KEEP_DAYS} days, the last {KEEP_LAST} events of each agent): "
        f"{done.dropped:,} records dropped below the base at {done.base:,}, in {took:.1f} s; "
        f"on disk {before / MB:,.1f} -> {after / MB:,.1f} MB; {load()}"
    )
    runs = [served_in(root) for _ in range(max(1, args.runs))]
    print(
        f"daemon start to `volee ls` answered after compaction: {statistics.median(runs):.2f} s "
        f"(runs {', '.join(f'{x:.2f}' for x in runs)}), {statistics.median(runs) / none:.2f}x "
        f"the empty log's; {load()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents-per-day", type=int, default=5)
    parser.add_argument("--hours", type=float, default=8.0, help="hours each agent works")
    parser.add_argument("--days", type=int, default=250)
    parser.add_argument("--tool-calls-per-hour", type=float, default=120.0)
    parser.add_argument("--turns", type=int, default=4, help="turns measured")
    parser.add_argument("--cap", type=int, default=2_000_000, help="records written at most")
    parser.add_argument("--runs", type=int, default=2, help="starts with a snapshot")
    parser.add_argument("--generic", action="store_true", help="a generic agent, no Claude Code")
    args = parser.parse_args(argv)
    head, turn, tail = sample(args)
    per_hour = len(turn) * args.tool_calls_per_hour
    lives = args.agents_per_day * args.days
    turns = round(args.hours * args.tool_calls_per_hour)
    total = lives * (len(head) + len(turn) * turns + len(tail))
    print(
        f"measured: an agent's start {len(head)} records "
        f"({sum(len(r.payload) for r in head)} B of payload), a tool-call turn {len(turn)} records "
        f"({sum(len(r.payload) for r in turn) / max(1, len(turn)):.0f} B each); "
        f"its end {len(tail)} records; {per_hour:.0f} records per agent-hour at "
        f"{args.tool_calls_per_hour:g} tool calls/h"
    )
    for name, block in (("start", head), ("tool-call turn", turn), ("end", tail)):
        kinds = Counter(r.type for r in block)
        print(f"  {name}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(
        f"a year: {args.days} days x {args.agents_per_day} agents x {args.hours:g} h = "
        f"{lives * args.hours:,.0f} agent-hours, {total:,} records"
    )
    root = Path(tempfile.mkdtemp(prefix="vy", dir="/tmp"))
    try:
        t = time.perf_counter()
        written = write_year(root, (head, turn, tail), lives, turns, args.cap, args.agents_per_day)
        built = time.perf_counter() - t
        on_disk = size(root)
        scale = total / written if written else 0.0
        note = (
            ""
            if written == total
            else f" (capped: x{scale:.1f} = {on_disk * scale / MB:,.0f} MB for the year)"
        )
        print(
            f"log written: {written:,} records in {built:.1f} s, {on_disk / MB:,.1f} MB on disk"
            f"{note}; target <= 1 GB for the year"
        )
        bare = statistics.median(baseline() for _ in range(5))
        empty = root / "empty"
        empty.mkdir()
        served_in(empty)  # creates its log; the next starts are the baseline
        none = statistics.median(served_in(empty) for _ in range(max(1, args.runs)))
        print(
            f"baselines: python -c pass {bare * 1000:.0f} ms; the daemon on an empty log "
            f"{none:.2f} s; {load()}"
        )
        full = served_in(root)  # no snapshot yet: a full replay; its stop saves one
        snap = [served_in(root) for _ in range(args.runs)]
        print(
            f"daemon start to `volee ls` answered: full replay {full:.2f} s; with the snapshot "
            f"{statistics.median(snap):.2f} s (runs {', '.join(f'{x:.2f}' for x in snap)}); "
            f"target <= 2 s; {load()}"
        )
        print(
            f"  against the empty log's start, same run: full replay {full / none:.2f}x, "
            f"with the snapshot {statistics.median(snap) / none:.2f}x"
        )
        if written != total:
            print(f"  full replay of the whole year, extrapolated: {full * scale:.1f} s")
        compacted(root, args, none, scale)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

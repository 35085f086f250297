"""Start-up time to a served `volee ls` with a 1,000,000-event log, with and without a snapshot.

Run: ``.venv/bin/python bench/startup.py [--events N]`` (a few minutes: it builds a real log of
domain events once, then starts the real daemon three times each way).  The time runs from
spawning ``volee daemon run`` to the first ``agents.list`` answered over the socket; a bare
``python -c pass`` start is printed beside it as the baseline of the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT, new_id
from volee_desktop.core.model import Harness, LaunchSettings
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.ipc.client import Client
from volee_desktop.ipc.protocol import DaemonUnavailable
from volee_desktop.paths import dirs
from volee_desktop.store.codec import SNAPSHOT_VERSION, encode_event, encode_registry
from volee_desktop.store.log import EventLog
from volee_desktop.store.records import Record

STATES = (AgentState.WORKING, AgentState.NEEDS_INPUT, AgentState.WORKING, AgentState.DONE)


def build(home: Path, n: int, agents: int = 200) -> None:
    """A log of ``n`` real events over ``agents`` agents, and a registry snapshot near its end."""
    folders = dirs({"VOLEE_HOME": str(home)})
    folders.state.mkdir(parents=True, exist_ok=True)
    log = EventLog.open(folders.events_db)
    registry = Registry()
    ids = [new_id(AGENT, 1_700_000_000_000 + i, os.urandom(10)) for i in range(agents)]
    batch: list[Record] = []
    written = 0
    snapshot_at = n - 1000

    def flush() -> None:
        nonlocal written
        if batch:
            log.append_sync(batch)
            written += len(batch)
            batch.clear()

    for i in range(n):
        a = ids[i % agents]
        at = 1_700_000_000.0 + i
        e: ev.Event
        if i < agents:
            e = ev.AgentRegistered(
                at=at,
                agent=a,
                name=f"agent-{i}",
                harness=Harness.CLAUDE,
                launch=LaunchSettings(harness=Harness.CLAUDE, cwd="/tmp"),
                cwd="/tmp",
            )
        elif i % 3 == 0:
            e = ev.StateChanged(at=at, agent=a, state=STATES[i % 4], detail="permission for Bash")
        else:
            e = ev.ActivityRecorded(at=at, agent=a, activity=f"Bash: pytest -q tests/test_{i}.py")
        registry.apply(e)
        registry.seq = i + 1
        batch.append(Record(*encode_event(e)))
        if len(batch) >= 50_000:
            flush()
        if i + 1 == snapshot_at:
            flush()
            log.save_snapshot_sync(registry.seq, SNAPSHOT_VERSION, encode_registry(registry))
    flush()
    log.close()


def served_in(home: Path) -> float:
    """Seconds from spawning the daemon to an answered agents.list."""
    env = {**os.environ, "VOLEE_HOME": str(home)}
    socket = dirs({"VOLEE_HOME": str(home)}).socket
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with Client.connect(socket, timeout=60) as client:
                    client.call("agents.list")
                return time.perf_counter() - began
            except DaemonUnavailable:
                if proc.poll() is not None:
                    raise SystemExit(f"daemon exited with {proc.returncode}") from None
                time.sleep(0.005)
    finally:
        proc.terminate()
        proc.wait(60)


def baseline() -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    try:
        t = time.perf_counter()
        build(root, args.events)
        print(f"built a {args.events:,}-event log in {time.perf_counter() - t:.1f} s")
        db = dirs({"VOLEE_HOME": str(root)}).events_db
        print(f"python -c pass: {statistics.median(baseline() for _ in range(5)) * 1000:.0f} ms")
        with_snapshot = [served_in(root) for _ in range(args.runs)]
        print(
            f"with a snapshot: served `volee ls` in {statistics.median(with_snapshot):.2f} s "
            f"(median of {args.runs}; runs {', '.join(f'{x:.2f}' for x in with_snapshot)})"
        )
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM snapshots")
        without = [served_in(root) for _ in range(max(1, args.runs - 1))]
        # each daemon stop saves a snapshot again: drop it before each run
        print(
            f"without a snapshot: served `volee ls` in {without[0]:.2f} s (first run, full replay)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

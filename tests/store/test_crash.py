"""Kill a writing process with SIGKILL, many times: every acknowledged record must be there."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from volee_desktop.store import EventLog

WRITER = Path(__file__).with_name("crash_writer.py")
KILLS_PER_TEST = 10
SEEDS = [1, 2, 3, 4, 5]  # 5 x 10 = 50 kills


def run_and_kill(db: Path, run: str, acks_before_kill: int) -> dict[int, bytes]:
    """Start a writer, kill it after ``acks_before_kill`` acks; return {seq: payload} acked."""
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(db), run, "8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    try:
        lines = [child.stdout.readline()]
        assert lines[0] == b"ready\n", lines[0] + child.stderr.read() if child.stderr else b""
        while len(lines) <= acks_before_kill:
            line = child.stdout.readline()
            assert line, "the writer stopped on its own"
            lines.append(line)
        child.kill()
        # Acks printed before the kill are still in the pipe; a cut last line is no ack.
        lines += child.stdout.read().splitlines(keepends=True)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()
    assert child.returncode == -9
    acked: dict[int, bytes] = {}
    for line in lines[1:]:
        if not line.endswith(b"\n"):
            continue
        w, n, *seqs = line.split()
        for i, seq in enumerate(seqs):
            acked[int(seq)] = f"{run}:{int(w)}:{int(n)}:{i}".encode()
    return acked


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_acknowledged_records_survive_sigkill(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "events.db"
    acked: dict[int, bytes] = {}
    for kill in range(KILLS_PER_TEST):
        # Sometimes at once (while opening), mostly in the middle of sustained writes.
        target = 0 if kill == 0 else rng.randrange(0, 400)
        acked |= run_and_kill(db, f"s{seed}k{kill}", target)

        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        log = EventLog.open(db)
        try:
            found = {r.seq: r.payload for r in log.read()}  # checks every CRC and gaps too
            missing = [seq for seq in acked if found.get(seq) != acked[seq]]
            assert not missing, f"seed {seed} kill {kill}: acked records lost: {missing[:10]}"
            assert log.last_seq() == len(found)
            snapshot = log.latest_snapshot()
            if snapshot is not None:
                assert snapshot.blob.endswith(f":snapshot:{snapshot.seq}".encode())
                assert snapshot.seq <= log.last_seq()
        finally:
            log.close()
    assert len(acked) > 500, "the writers barely wrote: the test did not test much"

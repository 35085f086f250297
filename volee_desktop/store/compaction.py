"""Compacting the log: a base snapshot, then dropping records at or below it.

A compacted log is no longer complete from its first record: its ``base`` (one row, never
rotated away like the snapshots) holds the state after record ``seq``, and records at or
below that seq are only what was kept for reading (timelines), never for a replay.  So the
base is written first, in a transaction of its own, and only then are records dropped, in
short transactions below it: a crash at any step leaves a log that loads (from the base, or
from before it when the base was not yet written).  Which records go is the daemon's rule
(docs/decisions.md); the store only refuses to drop anything above the base.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from itertools import islice

from .errors import StoreError
from .records import Snapshot, StoredRecord, snapshot_crc

#: Records dropped per transaction: short, so a daemon's commits wait little for each.
DROP_CHUNK = 5_000


def base_seq(conn: sqlite3.Connection) -> int:
    """The seq of the log's base (0: never compacted, the log is whole)."""
    try:
        row = conn.execute("SELECT seq FROM base WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return 0  # a version-1 file: no base table
    return int(row[0]) if row else 0


def read_base(conn: sqlite3.Connection) -> Snapshot | None:
    """The base snapshot, if intact (None when the log was never compacted)."""
    try:
        row = conn.execute("SELECT seq, version, blob, crc FROM base WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return None
    if row is None:
        return None
    seq, version, blob, crc = row
    if type(blob) is not bytes or snapshot_crc(seq, version, blob) != crc:
        raise StoreError(
            f"the compacted log's base snapshot (seq {seq}) is damaged: the events before it "
            "were compacted, so the state cannot be rebuilt from them; restore a backup"
        )
    return Snapshot(int(seq), int(version), blob)


def set_base(conn: sqlite3.Connection, snapshot: Snapshot) -> None:
    """Make ``snapshot`` the base (one transaction); snapshots up to it go: none is a start now."""
    seq, version, blob = snapshot
    last = conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
    if not 0 < seq <= last or seq < base_seq(conn):
        raise StoreError(f"cannot put the base at seq {seq}: the log holds 1-{last}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS base (id INTEGER PRIMARY KEY CHECK (id = 1), "
            "seq INTEGER NOT NULL, version INTEGER NOT NULL, blob BLOB NOT NULL, "
            "crc INTEGER NOT NULL)"
        )
        conn.execute(
            "INSERT OR REPLACE INTO base (id, seq, version, blob, crc) VALUES (1, ?, ?, ?, ?)",
            (seq, version, blob, snapshot_crc(seq, version, blob)),
        )
        conn.execute("DELETE FROM snapshots WHERE seq <= ?", (seq,))
        conn.execute("PRAGMA user_version=2")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def newest_first(conn: sqlite3.Connection, upto: int) -> Iterator[StoredRecord]:
    """The records at or below ``upto``, newest first (the rule counts back from the end)."""
    cursor = conn.execute(
        "SELECT seq, type, version, payload FROM events WHERE seq <= ? ORDER BY seq DESC", (upto,)
    )
    for row in cursor:
        yield StoredRecord._make(row)


def drop(conn: sqlite3.Connection, seqs: Iterable[int]) -> int:
    """Delete these records, ``DROP_CHUNK`` per transaction; all must be at or below the base."""
    limit = base_seq(conn)
    done = 0
    it = iter(seqs)
    while chunk := list(islice(it, DROP_CHUNK)):
        if max(chunk) > limit:
            raise StoreError(f"refusing to drop records above the log's base ({limit})")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("DELETE FROM events WHERE seq = ?", ((s,) for s in chunk))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        done += len(chunk)
    return done


def vacuum(conn: sqlite3.Connection) -> None:
    """Give the freed pages back to the disk (rewrites the file: no daemon may have it open)."""
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

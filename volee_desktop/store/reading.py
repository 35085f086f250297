"""The event log's reads: records streamed and checked, keys, snapshots, the whole check.

A half of ``EventLog`` (``store/log.py``, the writer's half): every read here goes through
a connection of its own (``read``) or the one reader connection under its lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import StoreError
from .integrity import BadRecord, corrupt, scan
from .records import Snapshot, StoredRecord, snapshot_crc
from .schema import connect, is_corruption

log = logging.getLogger("volee_desktop.store.log")


class LogReading:
    """What reads the log; ``EventLog`` sets these up when it opens the file."""

    path: Path
    _reader: sqlite3.Connection
    _reader_lock: threading.Lock
    _closed: bool
    _last: int

    def read(self, after: int = 0, *, whole: bool = False) -> Iterator[StoredRecord]:
        """The durable records with seq > ``after``, in seq order, streamed and checked.

        Raises CorruptLog (after making a backup copy) at the first damaged record;
        the records before it were good.  Below a compacted log's base some records are gone;
        ``whole`` (every record after ``after`` is wanted) raises ``Compacted`` there instead.
        """
        try:
            conn = connect(self.path)
        except sqlite3.Error as exc:
            if is_corruption(exc):
                raise corrupt(self.path, None, f"SQLite says {exc}") from exc
            raise StoreError(f"could not read the event log {self.path}: {exc}") from exc
        try:
            yield from scan(conn, after, whole=whole)
        except BadRecord as bad:
            raise corrupt(self.path, bad.seq, bad.reason) from bad
        finally:
            conn.close()

    def last_seq(self) -> int:
        """The seq of the newest durable record (0 when the log is empty)."""
        return self._last

    def has_key(self, key: str) -> bool:
        """Whether an append with this idempotency key is durable."""
        return self.key_seq(key) is not None

    def key_seq(self, key: str) -> int | None:
        """Where the durable append with this key began (the next seq if it was empty)."""
        row = self._query("SELECT seq FROM keys WHERE key = ?", (key,))
        return None if row is None else int(row[0])

    def latest_snapshot(self) -> Snapshot | None:
        """The newest intact snapshot; a damaged one is logged and skipped (they are derived)."""
        with self._reader_lock:
            try:
                rows = self._reader.execute(
                    "SELECT seq, version, blob, crc FROM snapshots ORDER BY seq DESC"
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                log.warning("event log %s: snapshots unreadable, replaying all: %s", self.path, exc)
                return None
        for seq, version, blob, crc in rows:
            if (
                type(seq) is int
                and type(version) is int
                and type(blob) is bytes
                and seq <= self._last
                and snapshot_crc(seq, version, blob) == crc
            ):
                return Snapshot(seq, version, blob)
            log.warning("event log %s: snapshot at seq %r is damaged, skipped", self.path, seq)
        return None

    def verify(self) -> int:
        """Check the whole file (SQLite's integrity check and every record); return the count.

        Raises CorruptLog at the first problem.  Reads everything: for ``repair``
        and diagnostics, not for every start.
        """
        row = self._query("PRAGMA integrity_check", ())
        if row is None or row[0] != "ok":
            raise corrupt(self.path, None, f"SQLite's integrity check says {row!r}")
        count = 0
        for _ in self.read():
            count += 1
        return count

    def _query(self, sql: str, args: tuple[object, ...]) -> tuple[Any, ...] | None:
        with self._reader_lock:
            if self._closed:
                raise StoreError(f"the event log {self.path} is closed")
            try:
                row = self._reader.execute(sql, args).fetchone()
            except sqlite3.DatabaseError as exc:
                if is_corruption(exc):
                    raise corrupt(self.path, None, f"SQLite says {exc}") from exc
                raise StoreError(f"could not read the event log {self.path}: {exc}") from exc
        return None if row is None else tuple(row)

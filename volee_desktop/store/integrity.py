"""Finding damage in the event log, backing the files up, and repairing from the last good record.

The log never drops an event on its own: a damaged record stops the reader with
``CorruptLog`` (after a backup copy was made), and only ``repair`` — run by the
person, through ``volee daemon repair`` — moves records out of the log, into a
side table of the repaired file where they can still be read.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .compaction import base_seq
from .errors import Compacted, CorruptLog, StoreError
from .records import StoredRecord, header_crc, record_crc, snapshot_crc
from .schema import (
    INSERT_EVENT,
    INSERT_KEY,
    SELECT_EVENTS,
    connect,
    ensure_schema,
    is_corruption,
)

log = logging.getLogger(__name__)

SET_ASIDE_TABLE = "set_aside"


class BadRecord(StoreError):
    """Internal: the scan met a damaged record at ``seq`` (turned into CorruptLog)."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"record {seq}: {reason}")
        self.seq = seq
        self.reason = reason


def scan(conn: sqlite3.Connection, after: int, *, whole: bool = False) -> Iterator[StoredRecord]:
    """Records with seq > ``after`` in order, each checked; raises BadRecord at the first bad one.

    ``whole``: every record after ``after`` is wanted (a feed's replay), so a log compacted
    beyond ``after`` raises ``Compacted`` rather than skip what was dropped.

    Checked: the seq follows the previous one (no gap, but at or below a compacted log's base,
    where compaction dropped records: store/compaction.py), the column types, the CRC.
    This loop is the replay hot path, hence the local names and the header cache.
    """
    expected = after + 1
    # The base and the records are read in one read transaction: a compaction running beside
    # (daemon/compaction.py) must not show records dropped below a base this scan did not see.
    began = False
    headers: dict[tuple[object, object], int] = {}
    crc32 = zlib.crc32
    make = StoredRecord._make
    try:
        if not conn.in_transaction:
            conn.execute("BEGIN")
            began = True
            conn.execute("SELECT max(seq) FROM events").fetchone()  # the read begins here
        gaps_until = base_seq(conn)
        if whole and after < gaps_until:
            raise Compacted(gaps_until, after)
        cursor = conn.execute(SELECT_EVENTS, (after,))
        for row in cursor:
            seq, type_, version, payload, crc = row
            if seq != expected:
                if not expected < seq <= gaps_until + 1:
                    raise BadRecord(expected, f"is missing (the next record found is seq {seq})")
                expected = seq  # compacted away
            header = headers.get((type_, version))
            if header is None:
                if type(type_) is not str or type(version) is not int:
                    raise BadRecord(seq, f"has a bad type or version ({type_!r}, {version!r})")
                header = headers[(type_, version)] = header_crc(type_, version)
            if type(payload) is not bytes:
                raise BadRecord(seq, f"has a payload that is not bytes ({type(payload).__name__})")
            if crc32(payload, header) != crc:
                raise BadRecord(seq, "fails its checksum (its bytes changed after it was written)")
            yield make(row[:4])
            expected += 1
    except sqlite3.DatabaseError as exc:
        if _bad_text(exc):
            # A flipped byte in a TEXT column: damage like any other (backup, repair hint).
            raise BadRecord(expected, f"has a type that is not UTF-8 text ({exc})") from exc
        if not is_corruption(exc):
            raise StoreError(f"could not read the event log at seq {expected}: {exc}") from exc
        raise BadRecord(expected, f"cannot be read, SQLite says {exc}") from exc
    finally:
        if began and conn.in_transaction:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error:
                pass  # a read-only transaction: nothing to keep


def _bad_text(exc: sqlite3.DatabaseError) -> bool:
    """Python's sqlite3 could not decode a TEXT value (bytes that are not UTF-8)."""
    return isinstance(exc, sqlite3.OperationalError) and "decode to UTF-8" in str(exc)


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = a.stat(), b.stat()
    except OSError:
        return False
    return sa.st_size == sb.st_size and sa.st_mtime_ns == sb.st_mtime_ns


def backup(path: Path) -> Path:
    """Copy the db and its WAL to ``<name>.corrupt-<UTC time>`` (+``-wal``); return the copy.

    A daemon restarted in a loop by its service manager would otherwise fill the
    disk with copies: an earlier copy with the same size and modification time
    (copy2 keeps it) as the current files is reused.
    """
    wal = path.with_name(path.name + "-wal")
    for earlier in sorted(path.parent.glob(path.name + ".corrupt-*"), reverse=True):
        if earlier.name.endswith(("-wal", "-shm")):
            continue
        earlier_wal = earlier.with_name(earlier.name + "-wal")
        if _same_file(path, earlier) and (
            _same_file(wal, earlier_wal) if wal.exists() else not earlier_wal.exists()
        ):
            return earlier
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    shutil.copy2(path, target)
    if wal.exists():
        shutil.copy2(wal, target.with_name(target.name + "-wal"))
    return target


def corrupt(path: Path, seq: int | None, reason: str) -> CorruptLog:
    """The error to raise for damage at ``seq``, after making the backup copy."""
    try:
        copy: Path | None = backup(path)
    except OSError as exc:
        copy = None
        reason = f"{reason} (and the backup copy failed: {exc})"
    log.error("event log %s damaged at seq %s: %s; backup %s", path, seq, reason, copy)
    return CorruptLog(path, seq, reason, copy)


@dataclass(frozen=True)
class RepairReport:
    """What ``repair`` did: what it kept, what it set aside and where."""

    path: Path
    backup: Path
    kept: int
    set_aside: int
    unreadable: int
    snapshots_dropped: int
    first_bad: int | None
    reason: str

    def __str__(self) -> str:
        if self.first_bad is None:
            return f"{self.path}: no damaged record found; {self.kept} records kept, nothing moved."
        lines = [
            f"{self.path}: record {self.first_bad} {self.reason}.",
            f"Kept records 1-{self.kept} (every record before the damage).",
            f"Set aside {self.set_aside} records from seq {self.first_bad} on in the table "
            f"{SET_ASIDE_TABLE!r} of the same file (not deleted)"
            + (f"; {self.unreadable} could not be read at all" if self.unreadable else "")
            + ".",
            f"Dropped {self.snapshots_dropped} snapshots taken after the damage "
            "(they are rebuilt from the log).",
            f"The files as they were before the repair: {self.backup}",
        ]
        return "\n".join(lines)


_SET_ASIDE_DDL = f"""
CREATE TABLE IF NOT EXISTS {SET_ASIDE_TABLE} (
    seq INTEGER NOT NULL,
    type,
    version,
    payload,
    crc,
    key TEXT,
    reason TEXT NOT NULL,
    repaired_at TEXT NOT NULL
)
"""


def _readable_after(
    conn: sqlite3.Connection, first_bad: int
) -> tuple[list[tuple[object, ...]], int]:
    """Every row from ``first_bad`` on that can still be read, and how many could not be."""
    try:
        row = conn.execute("SELECT max(seq) FROM events").fetchone()
        top = int(row[0]) if row and row[0] is not None else first_bad
    except sqlite3.DatabaseError:
        top = first_bad
    rows: list[tuple[object, ...]] = []
    unreadable = 0
    # A type that is not UTF-8 is read as bytes, so the record is set aside, not lost.
    conn.text_factory = _text_or_bytes
    for seq in range(first_bad, top + 1):
        try:
            found = conn.execute(
                "SELECT seq, type, version, payload, crc FROM events WHERE seq = ?", (seq,)
            ).fetchone()
        except sqlite3.DatabaseError:
            unreadable += 1
            continue
        if found is not None:
            rows.append(tuple(found))
    return rows, unreadable


def _text_or_bytes(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple[object, ...]]:
    """Best effort: a table SQLite cannot read any more is left behind (it is in the backup)."""
    try:
        return [tuple(row) for row in conn.execute(sql)]
    except sqlite3.DatabaseError as exc:
        log.warning("repair: could not read with %r: %s", sql, exc)
        return []


def _copy_good_records(
    src: sqlite3.Connection, dst: sqlite3.Connection
) -> tuple[int, int | None, str]:
    """Copy records 1..last good; return (last good seq, first bad seq or None, reason)."""
    last_good, first_bad, reason = 0, None, ""
    batch: list[tuple[int, str, int, bytes, int]] = []
    try:
        for seq, type_, version, payload in scan(src, 0):
            batch.append((seq, type_, version, payload, record_crc(type_, version, payload)))
            last_good = seq
            if len(batch) >= 50_000:
                dst.executemany(INSERT_EVENT, batch)
                batch = []
    except BadRecord as bad:
        first_bad, reason = bad.seq, bad.reason
    dst.executemany(INSERT_EVENT, batch)
    return last_good, first_bad, reason


def _copy_snapshots(src: sqlite3.Connection, dst: sqlite3.Connection, last_good: int) -> int:
    """Copy the intact snapshots up to ``last_good``; return how many were dropped."""
    rows = _rows(src, "SELECT seq, version, blob, crc FROM snapshots")
    kept = [
        row
        for row in rows
        if isinstance(row[0], int)
        and row[0] <= last_good
        and isinstance(row[1], int)
        and isinstance(row[2], bytes)
        and snapshot_crc(row[0], row[1], row[2]) == row[3]
    ]
    dst.executemany("INSERT INTO snapshots (seq, version, blob, crc) VALUES (?, ?, ?, ?)", kept)
    return len(rows) - len(kept)


def _base_rows(src: sqlite3.Connection) -> list[tuple[object, ...]]:
    if not _rows(src, "SELECT 1 FROM sqlite_master WHERE name = 'base'"):
        return []  # never compacted
    return _rows(src, "SELECT id, seq, version, blob, crc FROM base")


def repair(path: Path | str) -> RepairReport:
    """Keep every record up to the last good one; set the rest aside in the same file.

    The log must not be open elsewhere (the daemon must be stopped).  A backup
    copy is made first.  The good records are copied into a fresh file built
    beside the old one, which then takes its name: a file SQLite calls malformed
    is only read from, never written to.
    """
    path = Path(path)
    if not path.exists():
        raise StoreError(f"there is no event log at {path}; nothing to repair")
    copy = backup(path)
    fresh = path.with_name(path.name + ".repairing")
    for leftover in _companions(fresh):
        leftover.unlink(missing_ok=True)
    src = sqlite3.connect(path, isolation_level=None)
    try:
        dst = connect(fresh)
        try:
            ensure_schema(dst, fresh)
            dst.execute("BEGIN IMMEDIATE")
            dst.execute(_SET_ASIDE_DDL)
            last_good, first_bad, reason = _copy_good_records(src, dst)
            dst.executemany(
                INSERT_KEY, _rows(src, f"SELECT key, seq FROM keys WHERE seq <= {last_good}")
            )
            set_aside = unreadable = 0
            if first_bad is not None:
                rows, unreadable = _readable_after(src, first_bad)
                keys = {
                    row[1]: row[0]
                    for row in _rows(src, f"SELECT key, seq FROM keys WHERE seq >= {first_bad}")
                }
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                dst.executemany(
                    f"INSERT INTO {SET_ASIDE_TABLE} "
                    "(seq, type, version, payload, crc, key, reason, repaired_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            *row,
                            keys.get(row[0]),
                            reason if row[0] == first_bad else f"after the damage at {first_bad}",
                            stamp,
                        )
                        for row in rows
                    ],
                )
                set_aside = len(rows)
            snapshots_dropped = _copy_snapshots(src, dst, last_good)
            # A compacted log's base is its start: without it the records kept below it
            # would be replayed as if whole (store/compaction.py).
            dst.executemany("INSERT INTO base VALUES (?, ?, ?, ?, ?)", _base_rows(src))
            dst.execute("COMMIT")
            check = dst.execute("PRAGMA integrity_check").fetchone()
            if check is None or check[0] != "ok":
                raise StoreError(
                    f"the repaired copy {fresh} failed SQLite's integrity check ({check!r}); "
                    f"the original {path} is untouched and backed up as {copy}"
                )
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            dst.close()
    finally:
        src.close()
    # The old WAL belongs to the old file: it must go before the new file takes its name.
    for stale in _companions(path)[1:]:
        stale.unlink(missing_ok=True)
    os.replace(fresh, path)
    for stale in _companions(fresh):
        stale.unlink(missing_ok=True)
    return RepairReport(
        path=path,
        backup=copy,
        kept=last_good,
        set_aside=set_aside,
        unreadable=unreadable,
        snapshots_dropped=snapshots_dropped,
        first_bad=first_bad,
        reason=reason,
    )


def _companions(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]

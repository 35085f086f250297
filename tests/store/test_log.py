"""What only the SQLite log does: the file format, group commit, damage and repair."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from pathlib import Path

import pytest

from volee_desktop.store import (
    REPAIR_COMMAND,
    SCHEMA_VERSION,
    SET_ASIDE_TABLE,
    CorruptLog,
    EventLog,
    Record,
    Snapshot,
    StoreError,
    repair,
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


def fill(path: Path, n: int, size: int = 20) -> None:
    with EventLog.open(path) as log:
        log.append_sync(
            [
                Record("filled", 1, f"MARK{seq:06d}".encode().ljust(size, b"."))
                for seq in range(1, n + 1)
            ]
        )


def sql(path: Path, statement: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(statement, args).fetchall()


def test_the_file_is_wal_versioned_and_fsyncs_each_commit(path: Path) -> None:
    with EventLog.open(path) as log:
        assert log._writer.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert sql(path, "PRAGMA journal_mode") == [("wal",)]
        assert sql(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


def _sqlite_memory() -> int | None:
    """The bytes SQLite holds in this process (None where its library cannot be asked)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("sqlite3")
    try:
        lib = ctypes.CDLL(name or "libsqlite3.so.0")
        used = lib.sqlite3_memory_used
    except (OSError, AttributeError):
        return None
    used.restype = ctypes.c_int64
    return int(used())


def test_the_page_cache_stays_small_as_the_log_grows(path: Path) -> None:
    # Issue 22's soak: SQLite's default 2 MiB page cache per connection filled as the log
    # grew, and the daemon's memory with it, for the first hour of a day's log.
    before = _sqlite_memory()
    if before is None:
        pytest.skip("SQLite's library cannot be asked for its memory here")
    with EventLog.open(path) as log:
        assert log._writer.execute("PRAGMA cache_size").fetchone() == (-512,)
        opened = _sqlite_memory()
        assert opened is not None
        for batch in range(60):  # 6 MB of records, three times the default cache
            records = [
                Record("filled", 1, f"{batch}-{n}".encode().ljust(1000, b".")) for n in range(100)
            ]
            log.append_sync(records, key=f"batch-{batch}")
            assert log.key_seq(f"batch-{batch}") == log.last_seq() - 99  # the reader's too
        grown = (_sqlite_memory() or 0) - opened
    assert grown < 1024 * 1024, f"SQLite grew by {grown / 2**20:.2f} MiB"


def test_a_log_from_a_newer_volee_is_refused(path: Path) -> None:
    fill(path, 1)
    sql(path, "PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="schema version 99, newer") as caught:
        EventLog.open(path)
    assert str(path) in str(caught.value)
    assert sql(path, "SELECT count(*) FROM events") == [(1,)]


async def test_concurrent_appends_share_commits(path: Path) -> None:
    with EventLog.open(path) as log:
        await asyncio.gather(*(log.append([Record("t", 1, b"x")]) for _ in range(300)))
        assert log.stats.records == 300
        # One fsync serves many callers: without group commit this would be 300.
        assert log.stats.commits <= 10, log.stats


async def test_a_cancelled_await_does_not_take_back_the_append(path: Path) -> None:
    with EventLog.open(path) as log:
        pending = asyncio.ensure_future(log.append([Record("t", 1, b"x")]))
        pending.cancel()
        assert await log.append([Record("t", 1, b"y")]) == [2]
        assert [r.payload for r in log.read()] == [b"x", b"y"]


async def test_a_failing_writer_fails_its_callers_instead_of_hanging(
    path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    log = EventLog.open(path)
    try:
        await log.append([Record("t", 1, b"fine")])

        def explode(batch: object) -> None:
            raise RuntimeError("a bug in the writer")

        monkeypatch.setattr(log, "_commit", explode)
        with pytest.raises(StoreError, match=r"writer failed.*a bug in the writer"):
            await log.append([Record("t", 1, b"lost?")])
        with pytest.raises(StoreError, match="stopped accepting writes"):
            log.append_sync([Record("t", 1, b"later")])
    finally:
        log.close()
    assert "writer thread failed" in caplog.text
    with EventLog.open(path) as again:
        assert [r.payload for r in again.read()] == [b"fine"]


def test_a_changed_record_stops_the_reader_after_a_backup(path: Path) -> None:
    fill(path, 10)
    sql(path, "UPDATE events SET payload = ? WHERE seq = 5", b"tampered")
    with EventLog.open(path) as log:
        reader = log.read()
        seen = [next(reader).seq for _ in range(4)]
        with pytest.raises(CorruptLog) as caught:
            next(reader)
    assert seen == [1, 2, 3, 4]
    error = caught.value
    assert error.seq == 5
    assert error.path == path
    assert error.backup is not None
    assert error.backup.name.startswith("events.db.corrupt-")
    message = str(error)
    for part in (str(path), "seq 5", "checksum", str(error.backup), REPAIR_COMMAND):
        assert part in message
    # The backup holds the damaged state; the log itself was not touched.
    assert sql(error.backup, "SELECT payload FROM events WHERE seq = 5") == [(b"tampered",)]
    assert sql(path, "SELECT count(*) FROM events") == [(10,)]


def test_a_second_detection_reuses_the_backup(path: Path) -> None:
    fill(path, 5)
    sql(path, "UPDATE events SET crc = crc + 1 WHERE seq = 2")
    backups = []
    for _ in range(3):
        with EventLog.open(path) as log, pytest.raises(CorruptLog) as caught:
            list(log.read())
        backups.append(caught.value.backup)
    assert backups[1] == backups[2]
    assert len(list(path.parent.glob("events.db.corrupt-*"))) <= 2


def test_a_missing_record_is_damage(path: Path) -> None:
    fill(path, 6)
    sql(path, "DELETE FROM events WHERE seq = 3")
    with EventLog.open(path) as log, pytest.raises(CorruptLog, match=r"seq 3.*missing"):
        list(log.read())


def test_a_record_of_the_wrong_type_is_damage(path: Path) -> None:
    fill(path, 3)
    sql(path, "UPDATE events SET payload = 'text' WHERE seq = 2")
    with EventLog.open(path) as log, pytest.raises(CorruptLog, match=r"seq 2.*not bytes"):
        list(log.read())


def test_repair_keeps_the_good_records_and_sets_the_rest_aside(path: Path) -> None:
    with EventLog.open(path) as log:
        for n in range(1, 11):
            log.append_sync([Record("t", 1, f"r{n}".encode())], key=f"k{n}")
            if n in (3, 8):
                log.save_snapshot_sync(n, 1, f"at {n}".encode())
    sql(path, "UPDATE events SET payload = ? WHERE seq = 5", b"tampered")

    report = repair(path)

    assert (report.first_bad, report.kept, report.set_aside) == (5, 4, 6)
    assert report.snapshots_dropped == 1
    assert report.backup.exists()
    text = str(report)
    assert "Kept records 1-4" in text
    assert "Set aside 6" in text
    assert SET_ASIDE_TABLE in text
    assert sql(path, "PRAGMA integrity_check") == [("ok",)]
    aside = sql(path, f"SELECT seq, payload, key, reason FROM {SET_ASIDE_TABLE} ORDER BY seq")
    assert [row[0] for row in aside] == [5, 6, 7, 8, 9, 10]
    assert aside[0][1:3] == (b"tampered", "k5")
    assert "checksum" in str(aside[0][3])
    with EventLog.open(path) as log:
        assert log.verify() == 4
        assert log.last_seq() == 4
        assert log.has_key("k4")
        assert not log.has_key("k5")  # so a re-sent payload is ingested again
        assert log.latest_snapshot() == Snapshot(3, 1, b"at 3")
        assert log.append_sync([Record("t", 1, b"after repair")]) == [5]


def test_repair_of_a_sound_log_moves_nothing(path: Path) -> None:
    fill(path, 7)
    report = repair(path)
    assert (report.first_bad, report.kept, report.set_aside) == (None, 7, 0)
    assert "nothing moved" in str(report)
    with EventLog.open(path) as log:
        assert log.verify() == 7


def test_flipped_bytes_in_the_file_are_found(path: Path) -> None:
    fill(path, 200)  # closing checkpoints the WAL into the file
    data = bytearray(path.read_bytes())
    at = data.index(b"MARK000123")
    data[at + 5] ^= 0x01
    path.write_bytes(bytes(data))
    with EventLog.open(path) as log, pytest.raises(CorruptLog) as caught:
        list(log.read())
    assert caught.value.seq == 123
    assert repair(path).kept == 122


def test_a_destroyed_page_is_found_and_repaired(path: Path) -> None:
    fill(path, 3000, size=100)
    page_size = sql(path, "PRAGMA page_size")[0][0]
    assert isinstance(page_size, int)
    data = bytearray(path.read_bytes())
    pages = len(data) // page_size
    middle = pages // 2 * page_size
    data[middle : middle + page_size] = b"\xff" * page_size
    path.write_bytes(bytes(data))

    with EventLog.open(path) as log, pytest.raises(CorruptLog) as caught:
        list(log.read())
    first_bad = caught.value.seq
    assert first_bad is not None
    assert 1 < first_bad < 3000

    report = repair(path)
    assert report.kept == first_bad - 1
    assert report.set_aside + report.unreadable >= 3000 - report.kept
    assert report.unreadable > 0
    assert sql(path, "PRAGMA integrity_check") == [("ok",)]
    with EventLog.open(path) as log:
        assert log.verify() == first_bad - 1


def test_a_file_that_is_not_a_database_is_refused_with_a_backup(path: Path) -> None:
    path.write_bytes(b"this is not sqlite" * 500)
    with pytest.raises(CorruptLog, match="not a database") as caught:
        EventLog.open(path)
    assert caught.value.seq is None
    assert caught.value.backup is not None
    assert caught.value.backup.read_bytes() == path.read_bytes()
    assert REPAIR_COMMAND in str(caught.value)


def test_a_damaged_snapshot_is_skipped(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fill(path, 4)
    with EventLog.open(path) as log:
        log.save_snapshot_sync(2, 1, b"at 2")
        log.save_snapshot_sync(4, 1, b"at 4")
    sql(path, "UPDATE snapshots SET blob = ? WHERE seq = 4", b"garbled")
    with caplog.at_level(logging.WARNING), EventLog.open(path) as log:
        assert log.latest_snapshot() == Snapshot(2, 1, b"at 2")
    assert "snapshot at seq 4 is damaged" in caplog.text


async def test_an_idle_look_at_a_wal_in_place_answers_at_once_and_one_replaced_stops_writes(
    path: Path,
) -> None:
    """``check`` (the idle daemon's look every SPOOL_EVERY): a -wal still in place is said on
    the caller's thread, the writer not woken (an answer already there); one replaced by
    another file goes to the writer, which saves what it holds and stops taking writes."""
    log = EventLog.open(path)
    try:
        await log.append([Record("a", 1, b"1")])
        look = log.check()
        assert isinstance(look, asyncio.Future)
        assert look.done()  # not queued for the writer thread
        assert await look is None
        wal = Path(f"{path}-wal")
        other = path.with_name("other")
        other.write_bytes(wal.read_bytes())
        os.replace(other, wal)  # the same bytes, another file
        said = await log.check()
        assert said is not None
        assert "-wal file was replaced" in said
        with pytest.raises(StoreError, match="replaced"):
            await log.append([Record("b", 1, b"2")])
    finally:
        log.close()

"""The durable event log: SQLite in WAL mode, one writer thread, group commit.

Callers on the asyncio loop queue their batches; a single writer thread takes
everything queued, writes it in one transaction and commits it (an fsync), then
answers every caller.  While it commits, the next batches queue up: under load
one fsync serves many requests, so durability does not cost throughput, and
the loop itself never waits on the disk.

Order: a batch is queued when ``append`` is *called* (it is a plain function
returning an awaitable), so batches become durable in exactly the order the
calls were made.  A daemon that validates and applies in memory in call order
can rely on it; it can also hand over a whole prepared batch of groups with
``append_groups``, which writes them in one transaction, all or nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from . import compaction
from .errors import DuplicateKey, StoreError, WriteFailed
from .integrity import corrupt
from .reading import LogReading
from .records import (
    Group,
    Record,
    Snapshot,
    check_records,
    record_crc,
    snapshot_crc,
)
from .schema import INSERT_EVENT, INSERT_KEY, connect, ensure_schema, is_corruption

__all__ = ["CommitStats", "EventLog"]

log = logging.getLogger(__name__)

SNAPSHOTS_KEPT = 3

# What the writer hands back to one request: seqs per group, None for a
# snapshot, or the exception that request (or its whole transaction) failed with.
_Outcome = list[list[int]] | None | BaseException


@dataclass
class CommitStats:
    """Counters of the writer, for benchmarks and tests (records per commit shows grouping)."""

    commits: int = 0
    requests: int = 0
    records: int = 0
    failed_commits: int = 0


@dataclass
class _Request:
    """One queued unit of work: groups of records to append, or a snapshot to save."""

    groups: Sequence[Group] = ()
    snapshot: Snapshot | None = None
    # Only look whether the -wal is still the one SQLite writes (``check``).
    check: bool = False
    # Compaction (store/compaction.py), in a transaction of its own, in the writer's order:
    # make this snapshot the log's base, or drop these records at or below the base.
    base: Snapshot | None = None
    drop: Sequence[int] | None = None
    # Exactly one of these two waits for the outcome.
    future: asyncio.Future[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    sync: concurrent.futures.Future[_Outcome] | None = None
    # Turns a successful outcome into what the caller's future resolves to.
    shape: Callable[[list[list[int]] | None], Any] = lambda outcome: outcome


def _settle(items: list[tuple[asyncio.Future[Any], _Outcome, Callable[[Any], Any]]]) -> None:
    """On the caller's loop: resolve the futures of one transaction."""
    for future, outcome, shape in items:
        if future.done():  # the caller cancelled; the write happened anyway
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(shape(outcome))


class EventLog(LogReading):
    """The event log in one SQLite file; see the module docstring for how writes are grouped."""

    def __init__(self, path: Path, writer: sqlite3.Connection, reader: sqlite3.Connection) -> None:
        """Use ``EventLog.open``."""
        self.path = path
        self.stats = CommitStats()
        self._writer = writer
        self._reader = reader
        self._reader_lock = threading.Lock()
        row = writer.execute("SELECT max(seq) FROM events").fetchone()
        self._last = int(row[0]) if row and row[0] is not None else 0
        self._queue: list[_Request] = []
        self._cond = threading.Condition()
        self._closing = False
        self._closed = False
        # Set when the connection can no longer be trusted; every later write fails with it.
        self._broken: str | None = None
        # Set by a commit that failed cleanly; writes fail with it until ``resume``.
        self._fenced: str | None = None
        # The -wal file SQLite has open (device, inode), to see it deleted under us.
        self._wal = Path(f"{path}-wal")
        self._wal_id: tuple[int, int] | None = None
        try:
            st = os.stat(self._wal)
            self._wal_id = (st.st_dev, st.st_ino)
        except OSError:
            pass
        self._thread = threading.Thread(target=self._run, name="volee-store-writer", daemon=True)
        self._thread.start()

    # -- opening and closing ---------------------------------------------------

    @classmethod
    def open(cls, path: Path | str) -> EventLog:
        """Open (creating if needed) the log at ``path``.

        Raises StoreError for a file from a newer volee or one that cannot be
        opened, and CorruptLog when SQLite says the file is damaged.
        """
        path = Path(path)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _private_files(path)
        conns: list[sqlite3.Connection] = []
        try:
            writer = connect(path)
            conns.append(writer)
            ensure_schema(writer, path)
            reader = connect(path)
            conns.append(reader)
            return cls(path, writer, reader)
        except sqlite3.Error as exc:
            for conn in conns:
                conn.close()
            if is_corruption(exc):
                raise corrupt(path, None, f"SQLite says {exc}") from exc
            raise StoreError(
                f"could not open the event log {path}: {exc}; check that the folder is "
                "writable and that no other program holds the file"
            ) from exc
        except BaseException:
            for conn in conns:
                conn.close()
            raise

    def close(self) -> None:
        """Write what is queued, stop the writer and close the files. Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closing = True
            self._cond.notify()
        self._thread.join()
        with self._reader_lock:
            self._reader.close()
        self._closed = True

    @property
    def stopped(self) -> str | None:
        """Why the log takes no more writes (its connection cannot be trusted), or None."""
        return self._broken

    def resume(self) -> None:
        """Take writes again after a commit that failed cleanly (see ``WriteFailed``).

        The caller says it has dropped whatever it had decided on the failed writes.
        """
        with self._cond:
            self._fenced = None

    def __enter__(self) -> EventLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------

    def append(self, records: Sequence[Record], key: str | None = None) -> Awaitable[list[int]]:
        """Queue ``records`` (with an optional idempotency key); await it for their seqs.

        Queued at the call, resolved once the records are durable.  Fails with
        DuplicateKey if ``key`` is already in the log (nothing is written), and
        with StoreError if the transaction could not be committed.  Cancelling
        the await does not take back a queued append.
        """
        return self._submit_async(_Request(groups=[(list(records), key)], shape=_only_group))

    def append_groups(self, groups: Sequence[Group]) -> Awaitable[list[list[int]]]:
        """Queue several groups to be written in one transaction, in order, all or nothing.

        For a daemon that prepared a batch of requests (each group is one
        request's records and key): resolves to each group's seqs.  If any key
        is already written, no group is written and it fails with DuplicateKey.
        """
        return self._submit_async(_Request(groups=[(list(r), k) for r, k in groups]))

    def append_sync(self, records: Sequence[Record], key: str | None = None) -> list[int]:
        """Append and block until durable; for tools and tests, never on the event loop."""
        outcome = self._submit_sync(_Request(groups=[(list(records), key)]))
        assert outcome is not None
        return outcome[0]

    def save_snapshot(self, seq: int, version: int, blob: bytes) -> Awaitable[None]:
        """Queue a snapshot of the state after record ``seq``; done once durable.

        ``seq`` may name a record appended earlier but not yet durable: the
        snapshot goes into the same or a later transaction.  A ``seq`` beyond
        the log's end fails.  The newest three snapshots are kept.
        """
        return self._submit_async(self._snapshot_request(seq, version, blob))

    def save_snapshot_sync(self, seq: int, version: int, blob: bytes) -> None:
        """Save a snapshot and block until durable."""
        self._submit_sync(self._snapshot_request(seq, version, blob))

    def set_base(self, snapshot: Snapshot) -> Awaitable[None]:
        """Queue making ``snapshot`` (of durable state) the log's base (store/compaction.py);
        done once durable.  Its own transaction, in the writer's order among the appends."""
        return self._submit_async(_Request(base=snapshot, shape=lambda _: None))

    def drop_sync(self, seqs: Sequence[int]) -> int:
        """Drop these records (at most ``DROP_CHUNK``, all at or below the base) in one
        transaction of the writer's, between its commits; block until done (a compaction's
        thread, never the event loop).  Returns how many were dropped."""
        if len(seqs) > compaction.DROP_CHUNK:
            raise StoreError(f"drop at most {compaction.DROP_CHUNK} records at a time")
        request = _Request(drop=list(seqs))
        request.sync = concurrent.futures.Future()
        self._enqueue(request)  # no ``resume``: a fence is the appends' business, not ours
        outcome = request.sync.result()
        if isinstance(outcome, BaseException):
            raise outcome
        return len(seqs)

    def check(self) -> Awaitable[str | None]:
        """Look, while idle, whether the -wal SQLite writes is still in place (the check each
        commit makes): ``None`` when the log takes writes, else why it stopped.  A -wal found
        deleted or replaced is handled as at a commit: what the open WAL holds is copied into
        the main file and writes stop (docs/faults.md)."""
        try:
            in_place = self._wal_id is not None and self._wal_file() == self._wal_id
        except OSError:
            in_place = False
        if self._broken is None and in_place:
            # In place (the idle daemon's every look): said here, the writer thread not woken.
            done: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        return self._submit_async(_Request(check=True, shape=lambda _: self._broken))

    def _wal_file(self) -> tuple[int, int] | None:
        """The -wal's (device, inode) now; None when it is gone."""
        try:
            st = os.stat(self._wal)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino)

    def _snapshot_request(self, seq: int, version: int, blob: bytes) -> _Request:
        if type(seq) is not int or type(version) is not int or type(blob) is not bytes:
            raise StoreError(
                f"cannot save snapshot ({seq!r}, {version!r}, {type(blob).__name__}): "
                "seq and version must be int, blob bytes"
            )
        return _Request(snapshot=Snapshot(seq, version, blob), shape=lambda _: None)

    def _enqueue(self, request: _Request) -> None:
        for records, key in request.groups:
            check_records(records)
            if key is not None and type(key) is not str:
                raise StoreError(f"cannot append with key {key!r}: a key must be a str")
        with self._cond:
            if self._closing:
                raise StoreError(
                    self._broken or f"the event log {self.path} is closed; nothing was written"
                )
            self._queue.append(request)
            self._cond.notify()

    def _submit_async(self, request: _Request) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        request.loop = loop
        request.future = loop.create_future()
        self._enqueue(request)
        return request.future

    def _submit_sync(self, request: _Request) -> list[list[int]] | None:
        # A blocking caller has nothing in flight that could depend on an earlier failure.
        self.resume()
        request.sync = concurrent.futures.Future()
        self._enqueue(request)
        outcome = request.sync.result()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    # -- the writer thread -----------------------------------------------------

    def _run(self) -> None:
        batch: list[_Request] = []
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._closing:
                        self._cond.wait()
                    if not self._queue:
                        return
                    batch, self._queue = self._queue, []
                # Appends are grouped into one commit; a compaction step is a transaction of
                # its own, in its place in the queue.
                start = 0
                for i, request in enumerate([*batch, None]):
                    if request is None or request.base is not None or request.drop is not None:
                        if start < i:
                            self._deliver(batch[start:i], self._commit(batch[start:i]))
                        if request is not None:
                            self._deliver([request], [self._maintain(request)])
                        start = i + 1
                batch = []
        except BaseException as exc:
            # A bug here must not leave callers waiting for ever: fail everyone
            # in flight or queued, and refuse later writes with the reason.
            log.exception("event log %s: the writer thread failed", self.path)
            with self._cond:
                self._broken = (
                    f"the event log {self.path} stopped accepting writes: its writer "
                    f"failed ({exc!r}); restart the daemon"
                )
                self._closing = True
                batch += self._queue
                self._queue = []
            self._deliver(batch, [StoreError(self._broken) for _ in batch])
        finally:
            self._writer.close()

    def _commit(self, batch: list[_Request]) -> list[_Outcome]:
        """Write every request of ``batch`` in one transaction; one outcome per request."""
        if all(request.check for request in batch):
            if self._broken is None:
                self._wal_lost()
            return [None for _ in batch]
        if self._broken is not None:
            return [None if r.check else StoreError(self._broken) for r in batch]
        if self._fenced is not None:
            return [None if r.check else WriteFailed(self._fenced) for r in batch]
        conn = self._writer
        next_seq = self._last + 1
        outcomes: list[_Outcome] = []
        rows: list[tuple[int, str, int, bytes, int]] = []
        key_rows: list[tuple[str, int]] = []
        snapshots: list[tuple[int, int, bytes, int]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            written: dict[str, int] = {}
            for request in batch:
                if request.check:  # the commit's own look at the -wal answers it
                    outcomes.append(None)
                    continue
                if request.snapshot is not None:
                    outcomes.append(self._stage_snapshot(request.snapshot, next_seq, snapshots))
                    continue
                duplicate = self._find_duplicate(request.groups, written)
                if duplicate is not None:
                    outcomes.append(duplicate)
                    continue
                seqs_per_group: list[list[int]] = []
                for records, key in request.groups:
                    if key is not None:
                        key_rows.append((key, next_seq))
                        written[key] = next_seq
                    seqs = []
                    for record in records:
                        rows.append(
                            (
                                next_seq,
                                record.type,
                                record.version,
                                record.payload,
                                record_crc(record.type, record.version, record.payload),
                            )
                        )
                        seqs.append(next_seq)
                        next_seq += 1
                    seqs_per_group.append(seqs)
                outcomes.append(seqs_per_group)
            conn.executemany(INSERT_EVENT, rows)
            conn.executemany(INSERT_KEY, key_rows)
            if snapshots:
                conn.executemany(
                    "INSERT OR REPLACE INTO snapshots (seq, version, blob, crc) "
                    "VALUES (?, ?, ?, ?)",
                    snapshots,
                )
                conn.execute(
                    "DELETE FROM snapshots WHERE seq < (SELECT seq FROM snapshots "
                    f"ORDER BY seq DESC LIMIT 1 OFFSET {SNAPSHOTS_KEPT - 1})"
                )
            conn.execute("COMMIT")
        except BaseException as exc:
            return self._fail(batch, len(rows), exc)
        lost = self._wal_lost()
        if lost is not None:
            return [StoreError(lost) for _ in batch]
        self._last = next_seq - 1
        self.stats.commits += 1
        self.stats.requests += len(batch)
        self.stats.records += len(rows)
        return outcomes

    def _maintain(self, request: _Request) -> _Outcome:
        """A compaction step (``set_base`` or ``drop_sync``) in a transaction of its own."""
        if self._broken is not None:
            return StoreError(self._broken)
        if self._fenced is not None:
            return WriteFailed(self._fenced)
        try:
            if request.base is not None:
                compaction.set_base(self._writer, request.base)
            else:
                compaction.drop(self._writer, request.drop or ())
        except StoreError as exc:
            return exc
        except sqlite3.Error as exc:
            if self._writer.in_transaction:
                try:
                    self._writer.execute("ROLLBACK")
                except sqlite3.Error:
                    self._broken = f"the event log {self.path} stopped accepting writes: {exc}"
            if is_corruption(exc):
                self._broken = (
                    f"the event log {self.path} stopped accepting writes: SQLite says the file "
                    f"is damaged ({exc}); restart the daemon to check it"
                )
            log.error("event log %s: a compaction step failed: %s", self.path, exc)
            return StoreError(f"compacting the event log {self.path} failed: {exc}")
        lost = self._wal_lost()
        return None if lost is None else StoreError(lost)

    def _wal_lost(self) -> str | None:
        """After a commit: None if the -wal SQLite wrote is still in place, else why writes stop.

        A -wal deleted (or replaced) under a running daemon still takes commits, but in a file
        no one can open again: after a crash every event since the last checkpoint would be
        gone.  The commits made so far are copied into the main file (a checkpoint reads the
        open WAL), and the log stops taking writes.
        """
        now = self._wal_file()
        if now is not None and (self._wal_id is None or now == self._wal_id):
            self._wal_id = now
            return None
        what = "deleted" if now is None else "replaced"
        try:
            self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            saved = "every write acknowledged so far was saved in the main file"
            lost_this = False
        except sqlite3.Error as exc:
            saved = f"the writes since the last checkpoint could not be saved ({exc})"
            lost_this = True
        self._broken = (
            f"the event log {self.path} stopped accepting writes: its -wal file was {what} "
            f"while the daemon ran (by another program or by hand); {saved}. Restart the "
            "daemon, and keep other programs away from volee's state folder"
        )
        log.critical("%s", self._broken)
        return self._broken if lost_this else None

    def _stage_snapshot(
        self, snapshot: Snapshot, next_seq: int, staged: list[tuple[int, int, bytes, int]]
    ) -> _Outcome:
        if not 0 <= snapshot.seq < next_seq:
            return StoreError(
                f"cannot save a snapshot at seq {snapshot.seq}: the log holds seqs 1-"
                f"{next_seq - 1}; snapshot the state after a record that was appended"
            )
        staged.append((*snapshot, snapshot_crc(*snapshot)))
        return None

    def _find_duplicate(self, groups: Sequence[Group], written: dict[str, int]) -> _Outcome:
        """DuplicateKey for the first key already in the log or this transaction, else None."""
        seen: set[str] = set()
        for _records, key in groups:
            if key is None:
                continue
            if key in seen:
                return StoreError(f"the batch uses idempotency key {key!r} twice; use it once")
            seen.add(key)
            earlier = written.get(key)
            if earlier is None:
                row = self._writer.execute("SELECT seq FROM keys WHERE key = ?", (key,)).fetchone()
                earlier = None if row is None else int(row[0])
            if earlier is not None:
                return DuplicateKey(key, earlier)
        return None

    def _fail(self, batch: list[_Request], n_rows: int, exc: BaseException) -> list[_Outcome]:
        """Roll back; every caller of the transaction gets its own StoreError."""
        self.stats.failed_commits += 1
        try:
            if self._writer.in_transaction:
                self._writer.execute("ROLLBACK")
        except sqlite3.Error as rollback_exc:
            self._broken = (
                f"the event log {self.path} stopped accepting writes: a commit failed ({exc}) "
                f"and so did the rollback ({rollback_exc}); restart the daemon"
            )
        if isinstance(exc, sqlite3.Error) and is_corruption(exc):
            self._broken = (
                f"the event log {self.path} stopped accepting writes: SQLite says the file "
                f"is damaged ({exc}); restart the daemon to check it"
            )
        log.error("event log %s: commit of %d records failed: %s", self.path, n_rows, exc)
        outcomes: list[_Outcome] = []
        if self._broken is not None:
            for _ in batch:
                error = StoreError(self._broken)
                error.__cause__ = exc
                outcomes.append(error)
            return outcomes
        message = (
            f"could not write {n_rows} records to the event log {self.path}: {exc}; "
            "nothing of this transaction was kept and the log is still usable, so retry "
            "(it works once the cause is gone), and if it keeps failing check the disk "
            "(free space, permissions)"
        )
        self._fenced = message
        for _ in batch:
            failed = WriteFailed(message)
            failed.__cause__ = exc
            outcomes.append(failed)
        return outcomes

    def _deliver(self, batch: list[_Request], outcomes: list[_Outcome]) -> None:
        """Answer every caller; one wake-up per event loop rather than one per request."""
        per_loop: dict[
            asyncio.AbstractEventLoop,
            list[tuple[asyncio.Future[Any], _Outcome, Callable[[Any], Any]]],
        ] = {}
        for request, outcome in zip(batch, outcomes, strict=True):
            if request.sync is not None:
                if not request.sync.done():
                    request.sync.set_result(outcome)
            elif request.loop is not None and request.future is not None:
                per_loop.setdefault(request.loop, []).append(
                    (request.future, outcome, request.shape)
                )
        for loop, items in per_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, items)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting for these answers any more


def _private_files(path: Path) -> None:
    """Create the log 0600 before SQLite does (it would use the umask: 0644), and make an
    existing log and its -wal/-shm 0600 (SQLite gives those the main file's mode)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return  # SQLite's own open says what is wrong, in its words
    os.close(fd)
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if name.stat().st_mode & 0o077:
                os.chmod(name, 0o600)
        except OSError:
            pass


def _only_group(outcome: list[list[int]] | None) -> list[int]:
    assert outcome is not None
    return outcome[0]

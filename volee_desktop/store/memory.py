"""An in-memory event log with the same contract as ``EventLog``, for fast daemon tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import DuplicateKey, StoreError, WriteFailed
from .log import SNAPSHOTS_KEPT
from .records import Group, Record, Snapshot, StoredRecord, check_records

__all__ = ["MemoryLog"]


@dataclass
class _Contents:
    """What survives a ``restart``: the 'durable' part of a MemoryLog."""

    records: list[StoredRecord] = field(default_factory=list)
    keys: dict[str, int] = field(default_factory=dict)
    snapshots: dict[int, Snapshot] = field(default_factory=dict)


class MemoryLog:
    """Keeps records in a list; every append is 'durable' at once and in call order.

    Test knobs: ``break_writes(reason)`` makes every write fail with StoreError
    until ``mend_writes()``; ``restart()`` gives a new log over the same
    contents, as a restarted daemon would see them.
    """

    def __init__(self, contents: _Contents | None = None) -> None:
        self._contents = contents if contents is not None else _Contents()
        self._broken: str | None = None
        self._closed = False

    def restart(self) -> MemoryLog:
        """A new log over the same contents (this one should be closed first)."""
        return MemoryLog(self._contents)

    def break_writes(self, reason: str = "the disk is full") -> None:
        """Make every write fail (as a failing commit would) until ``mend_writes``."""
        self._broken = reason

    def mend_writes(self) -> None:
        """Let writes succeed again."""
        self._broken = None

    def resume(self) -> None:
        """As ``EventLog.resume`` (nothing is ever queued here)."""

    # -- writing ---------------------------------------------------------------

    def append(self, records: Sequence[Record], key: str | None = None) -> Awaitable[list[int]]:
        """Append; the awaitable is already resolved (or failed)."""
        groups: list[Group] = [(list(records), key)]
        _check_groups(groups)
        return _done(lambda: self._write(groups)[0])

    def append_groups(self, groups: Sequence[Group]) -> Awaitable[list[list[int]]]:
        """Append several groups at once, all or nothing."""
        listed: list[Group] = [(list(r), k) for r, k in groups]
        _check_groups(listed)
        return _done(lambda: self._write(listed))

    def append_sync(self, records: Sequence[Record], key: str | None = None) -> list[int]:
        """Append and return the seqs."""
        groups: list[Group] = [(list(records), key)]
        _check_groups(groups)
        return self._write(groups)[0]

    def save_snapshot(self, seq: int, version: int, blob: bytes) -> Awaitable[None]:
        """Keep a snapshot; the awaitable is already resolved (or failed)."""
        return _done(lambda: self.save_snapshot_sync(seq, version, blob))

    def save_snapshot_sync(self, seq: int, version: int, blob: bytes) -> None:
        """Keep a snapshot (the newest three are kept)."""
        if type(seq) is not int or type(version) is not int or type(blob) is not bytes:
            raise StoreError(
                f"cannot save snapshot ({seq!r}, {version!r}, {type(blob).__name__}): "
                "seq and version must be int, blob bytes"
            )
        self._check_writable()
        if not 0 <= seq <= self.last_seq():
            raise StoreError(
                f"cannot save a snapshot at seq {seq}: the log holds seqs 1-{self.last_seq()}; "
                "snapshot the state after a record that was appended"
            )
        snapshots = self._contents.snapshots
        snapshots[seq] = Snapshot(seq, version, blob)
        for old in sorted(snapshots)[:-SNAPSHOTS_KEPT]:
            del snapshots[old]

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreError("the memory log is closed; nothing was written")
        if self._broken is not None:
            raise WriteFailed(f"could not write to the memory log: {self._broken}")

    def _write(self, groups: list[Group]) -> list[list[int]]:
        seen: set[str] = set()
        for _records, key in groups:
            if key is None:
                continue
            if key in seen:
                raise StoreError(f"the batch uses idempotency key {key!r} twice; use it once")
            seen.add(key)
            if key in self._contents.keys:
                raise DuplicateKey(key, self._contents.keys[key])
        self._check_writable()
        out: list[list[int]] = []
        stored = self._contents.records
        for records, key in groups:
            if key is not None:
                self._contents.keys[key] = len(stored) + 1
            seqs = []
            for record in records:
                seq = len(stored) + 1
                stored.append(StoredRecord(seq, record.type, record.version, record.payload))
                seqs.append(seq)
            out.append(seqs)
        return out

    # -- reading ---------------------------------------------------------------

    def read(self, after: int = 0, *, whole: bool = False) -> Iterator[StoredRecord]:
        """The records with seq > ``after``, in order (those appended while reading too);
        never compacted, so ``whole`` changes nothing."""
        stored = self._contents.records
        index = max(after, 0)
        while index < len(stored):
            yield stored[index]
            index += 1

    def last_seq(self) -> int:
        """The newest seq (0 when empty)."""
        return len(self._contents.records)

    def has_key(self, key: str) -> bool:
        """Whether an append with this key was made."""
        return key in self._contents.keys

    def key_seq(self, key: str) -> int | None:
        """Where the append with this key began."""
        return self._contents.keys.get(key)

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, or None."""
        snapshots = self._contents.snapshots
        return snapshots[max(snapshots)] if snapshots else None

    def close(self) -> None:
        """Refuse further writes."""
        self._closed = True


def _check_groups(groups: list[Group]) -> None:
    for records, key in groups:
        check_records(records)
        if key is not None and type(key) is not str:
            raise StoreError(f"cannot append with key {key!r}: a key must be a str")


def _done(produce: Callable[[], Any]) -> asyncio.Future[Any]:
    """A future on the running loop, already holding ``produce()``'s result or exception."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    try:
        future.set_result(produce())
    except StoreError as exc:
        future.set_exception(exc)
    return future

"""What the store keeps: opaque records, their checksums, snapshots, and the log protocol."""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple, Protocol

from .errors import StoreError

# One append: the records to write together and an optional idempotency key.
Group = tuple[Sequence["Record"], "str | None"]


@dataclass(frozen=True, slots=True)
class Record:
    """One event as the store sees it: a type name, its schema version, opaque bytes."""

    type: str
    version: int
    payload: bytes


class StoredRecord(NamedTuple):
    """A record read back from the log with its position (1-based, gapless).

    A NamedTuple rather than a frozen dataclass because replay builds up to a
    million of them at start-up and a tuple is built twice as fast.
    """

    seq: int
    type: str
    version: int
    payload: bytes


class Snapshot(NamedTuple):
    """Derived state saved at ``seq``: start-up loads it and replays only what follows."""

    seq: int
    version: int
    blob: bytes


@lru_cache(maxsize=1024)
def header_crc(type_: str, version: int) -> int:
    """The CRC32 of a record's type and version, the start value of its payload's CRC."""
    # The separator keeps ("ab", 1) and ("a", 11) apart.
    return zlib.crc32(f"{type_}\x1f{version}\x1f".encode())


def record_crc(type_: str, version: int, payload: bytes) -> int:
    """CRC32 over a record's type, version and payload, as stored beside it."""
    return zlib.crc32(payload, header_crc(type_, version))


def snapshot_crc(seq: int, version: int, blob: bytes) -> int:
    """CRC32 over a snapshot's seq, version and blob."""
    return zlib.crc32(blob, zlib.crc32(f"snapshot\x1f{seq}\x1f{version}\x1f".encode()))


def check_records(records: Sequence[Record]) -> None:
    """Refuse bad input at the caller, before it can fail a shared transaction."""
    for record in records:
        if not isinstance(record, Record):
            raise StoreError(f"cannot append {record!r}: the log takes Record objects only")
        if (
            type(record.type) is not str
            or type(record.version) is not int
            or type(record.payload) is not bytes
        ):
            raise StoreError(
                f"cannot append {record!r}: type must be str, version int, payload bytes"
            )


class Log(Protocol):
    """The event log as the daemon uses it; ``EventLog`` and ``MemoryLog`` both pass the contract.

    ``append`` and ``append_groups`` queue their work when *called* (not when
    awaited), so appends become durable in exactly the order they were called.
    """

    def append(self, records: Sequence[Record], key: str | None = None) -> Awaitable[list[int]]:
        """Queue one batch; the awaitable gives its seqs once they are durable."""
        ...

    def append_groups(self, groups: Sequence[Group]) -> Awaitable[list[list[int]]]:
        """Queue several batches to be written in one transaction, all or nothing."""
        ...

    def append_sync(self, records: Sequence[Record], key: str | None = None) -> list[int]:
        """Append and block until durable (tools and tests; not on the event loop)."""
        ...

    def resume(self) -> None:
        """Take writes again after a commit that failed cleanly (``WriteFailed``)."""
        ...

    def has_key(self, key: str) -> bool:
        """Whether an append with this idempotency key is durable."""
        ...

    def key_seq(self, key: str) -> int | None:
        """Where the append with this key began, or None."""
        ...

    def read(self, after: int = 0, *, whole: bool = False) -> Iterator[StoredRecord]:
        """The durable records with seq > ``after``, in seq order (``whole``: all of them, or
        ``Compacted`` where a compaction dropped some)."""
        ...

    def last_seq(self) -> int:
        """The seq of the newest durable record (0 when empty)."""
        ...

    def save_snapshot(self, seq: int, version: int, blob: bytes) -> Awaitable[None]:
        """Queue a snapshot of the state after record ``seq``; done once durable."""
        ...

    def save_snapshot_sync(self, seq: int, version: int, blob: bytes) -> None:
        """Save a snapshot and block until durable (tools and tests)."""
        ...

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot that is intact, or None."""
        ...

    def close(self) -> None:
        """Finish the queued appends and release the log."""
        ...

"""The durable event log: SQLite in WAL mode, group commit, snapshots, corruption handling.

The store knows nothing of the domain: it keeps opaque ``Record``s (type,
version, payload bytes).  Mapping domain events to records and upcasting old
versions on read is the codec's job; stored records are never rewritten.
"""

from __future__ import annotations

from .errors import (
    REPAIR_COMMAND,
    Compacted,
    CorruptLog,
    DuplicateKey,
    Error,
    StoreError,
    WriteFailed,
)
from .integrity import SET_ASIDE_TABLE, RepairReport, repair
from .log import SNAPSHOTS_KEPT, CommitStats, EventLog
from .memory import MemoryLog
from .records import Group, Log, Record, Snapshot, StoredRecord, record_crc
from .schema import SCHEMA_VERSION

__all__ = [
    "REPAIR_COMMAND",
    "SCHEMA_VERSION",
    "SET_ASIDE_TABLE",
    "SNAPSHOTS_KEPT",
    "CommitStats",
    "Compacted",
    "CorruptLog",
    "DuplicateKey",
    "Error",
    "EventLog",
    "Group",
    "Log",
    "MemoryLog",
    "Record",
    "RepairReport",
    "Snapshot",
    "StoreError",
    "StoredRecord",
    "WriteFailed",
    "record_crc",
    "repair",
]

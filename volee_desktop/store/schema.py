"""The SQLite layout of the event log, its version, and how connections are opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .errors import StoreError

# PRAGMA user_version.  Bump it (and teach ``ensure_schema`` to migrate) when the
# tables change; a file with a newer version is refused rather than misread.
# 2: the ``base`` table of a compacted log (store/compaction.py); a version-1 file is a log
# never compacted and is read as it is (it gets the table, and version 2, when compacted).
SCHEMA_VERSION = 2

# No STRICT tables: some Pythons ship an SQLite older than 3.37.  Types are
# checked on read instead, together with the CRC.
DDL = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    version INTEGER NOT NULL,
    payload BLOB NOT NULL,
    crc INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS keys (
    key TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    seq INTEGER PRIMARY KEY,
    version INTEGER NOT NULL,
    blob BLOB NOT NULL,
    crc INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS base (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    version INTEGER NOT NULL,
    blob BLOB NOT NULL,
    crc INTEGER NOT NULL
);
"""

INSERT_EVENT = "INSERT INTO events (seq, type, version, payload, crc) VALUES (?, ?, ?, ?, ?)"
INSERT_KEY = "INSERT INTO keys (key, seq) VALUES (?, ?)"
SELECT_EVENTS = "SELECT seq, type, version, payload, crc FROM events WHERE seq > ? ORDER BY seq"

# Extended result codes are masked to their primary code before comparing.
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


def is_corruption(exc: sqlite3.Error) -> bool:
    """Whether SQLite says the file itself is damaged (not locked, not missing)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


#: SQLite's page cache of each connection, KiB.
CACHE_KIB = 512


def connect(path: Path, *, durable: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, fsync on commit."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreError(
                f"could not put the event log {path} in WAL mode (SQLite answered {mode!r}); "
                "keep it on a local disk (not a network share) and try again"
            )
        # FULL: in WAL mode the WAL is fsync'd at every commit, so a commit that
        # returned survives a power cut.  fullfsync makes that true on macOS too
        # (F_FULLFSYNC); elsewhere it is a no-op.
        conn.execute("PRAGMA synchronous=FULL" if durable else "PRAGMA synchronous=OFF")
        conn.execute("PRAGMA fullfsync=ON")
        conn.execute("PRAGMA checkpoint_fullfsync=ON")
        # SQLite's page cache, per connection: 2 MiB unless told, filled as the log grows
        # (an hour of issue 22's soak filled the writer's; the daemon's memory grew with it).
        # The log is appended at its end and read near it: 512 KiB holds what is hot, the
        # rest comes from the system's file cache (no slower per append, measured).
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    except BaseException:
        conn.close()
        raise
    return conn


def ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Create the tables in a new file; refuse a file written by a newer volee."""
    row = conn.execute("PRAGMA user_version").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the event log {path} has store schema version {version}, newer than this "
            f"volee understands ({SCHEMA_VERSION}); upgrade volee, or move the file aside "
            "to start an empty log"
        )
    if version in (1, SCHEMA_VERSION):
        return
    # Statement by statement inside one transaction: executescript would commit
    # half-way, and two processes opening a new file at once must not both create.
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in DDL.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise

"""Run the event log contract against the SQLite log and the in-memory one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from volee_desktop.store import EventLog, Log, MemoryLog

from .contract import LogContract


class TestEventLog(LogContract):
    def open_log(self, path: Path) -> Log:
        return EventLog.open(path)

    def reopen(self, log: Log, path: Path) -> Log:
        log.close()
        return EventLog.open(path)

    def break_writes(self, log: Log) -> None:
        # A real failing transaction: a trigger aborts every insert, as a full
        # disk or an I/O error would abort the commit.
        assert isinstance(log, EventLog)
        with sqlite3.connect(log.path) as conn:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON events "
                "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
            )

    def mend_writes(self, log: Log) -> None:
        assert isinstance(log, EventLog)
        with sqlite3.connect(log.path) as conn:
            conn.execute("DROP TRIGGER refuse")


class TestMemoryLog(LogContract):
    def open_log(self, path: Path) -> Log:
        return MemoryLog()

    def reopen(self, log: Log, path: Path) -> Log:
        assert isinstance(log, MemoryLog)
        log.close()
        return log.restart()

    def break_writes(self, log: Log) -> None:
        assert isinstance(log, MemoryLog)
        log.break_writes()

    def mend_writes(self, log: Log) -> None:
        assert isinstance(log, MemoryLog)
        log.mend_writes()

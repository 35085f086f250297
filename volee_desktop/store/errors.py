"""The store's exceptions.

::

    StoreError                 anything the store could not do (root; alias ``Error``)
     +-- WriteFailed           a commit failed and was rolled back (disk full, read-only):
     |                         nothing of it was kept, the log is usable, a retry can work
     +-- DuplicateKey          an append's idempotency key was already written
     +-- CorruptLog            a record or the file itself is damaged; nothing was changed
     +-- Compacted             records wanted whole from below a compacted log's base
     +-- CodecError            a record that cannot be turned back into an event (codec.py)
     +-- BadRecord             internal to the scan: a damaged record (integrity.py)
"""

from __future__ import annotations

from pathlib import Path

REPAIR_COMMAND = "volee daemon repair"


class StoreError(Exception):
    """The store could not do what was asked; the message says what and what to do."""


Error = StoreError


class WriteFailed(StoreError):
    """A commit failed cleanly (rolled back): nothing of it was written and the log is usable.

    The writes queued behind it fail the same way until ``EventLog.resume`` (they may have
    been decided on the failed ones); after that, a retry works once the cause is gone.
    """


class DuplicateKey(StoreError):
    """An append carried an idempotency key that is already in the log.

    Only the caller that brought the key gets this; the other appends of the same
    transaction are written.  ``seq`` is where the key's first append began.
    """

    def __init__(self, key: str, seq: int) -> None:
        super().__init__(
            f"idempotency key {key!r} was already written (at seq {seq}); "
            "the append was not repeated. Treat the earlier append as this one's result."
        )
        self.key = key
        self.seq = seq


class CorruptLog(StoreError):
    """The log file is damaged; a backup was made before anything else was done.

    ``seq`` is the position of the first bad record, or None when the damage is in
    the file itself before any record could be read.  ``backup`` is the copy made.
    """

    def __init__(self, path: Path, seq: int | None, reason: str, backup: Path | None) -> None:
        where = f"at record seq {seq}" if seq is not None else "before any record could be read"
        saved = (
            f"A copy of the damaged files was saved as {backup}."
            if backup is not None
            else "No backup copy could be made (see the reason above); copy the file by hand."
        )
        keep = f"every record before seq {seq}" if seq is not None else "every readable record"
        super().__init__(
            f"the event log {path} is damaged {where}: {reason}. {saved} "
            "Nothing was changed and no event was dropped. "
            f"To keep {keep} and set the rest aside (kept in the file, not deleted), "
            f"run: {REPAIR_COMMAND}"
        )
        self.path = path
        self.seq = seq
        self.reason = reason
        self.backup = backup


class Compacted(StoreError):
    """The records after ``after`` are wanted whole, but the log is compacted up to ``base``."""

    def __init__(self, base: int, after: int) -> None:
        super().__init__(
            f"the event log is compacted up to seq {base}: the records after {after} are no "
            f"longer all there; subscribe afresh (a snapshot), or from seq {base} or later"
        )
        self.base = base
        self.after = after

"""Snapshot-and-compact: which events of the log may go once a base snapshot covers them, and
the daemon compacting by itself (``Compactor``).

The rule (docs/decisions.md, "Compacting the event log"): an event at or below the base is
kept when it is younger than ``KEEP_DAYS``, when it is one of the last ``KEEP_LAST`` events
of an agent the registry still holds (or forgot less than ``KEEP_DAYS`` ago), when it
belongs to a mission still open or closed less than ``KEEP_DAYS`` ago, or when it is a
person's confirmation of settings; everything else at or below the base goes.  Nothing
above the base is touched, so no acknowledged event a replay needs is lost: the base holds
the state they made.

The daemon compacts by itself (``Compactor``) right after it saved a periodic snapshot at S
(a safe point: every event up to S is durable and applied), once ``COMPACT_AFTER`` records
were appended since the log's base (or its start) and its oldest record is older than
``KEEP_DAYS``.  The snapshot's own registry becomes the base, through the log's writer (a
transaction of its own, in order among the appends); then a thread reads the records at or
below S and hands the ones to drop to the writer ``DROP_CHUNK`` at a time, each a transaction
between two group commits, so appends stay durable and in order and wait at most one chunk.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from ..core import events as ev
from ..core.registry import Registry
from ..store import compaction as store
from ..store.codec import SNAPSHOT_VERSION, decode_event, encode_registry
from ..store.errors import StoreError
from ..store.log import EventLog
from ..store.records import Snapshot, StoredRecord
from ..store.schema import connect
from .clock import Clock
from .errors import Error

log = logging.getLogger(__name__)

KEEP_DAYS = 30
KEEP_LAST = 1000
DAY = 86_400.0
#: The daemon compacts (after a periodic snapshot) once this many records were appended since
#: the log's base, or its start: about two weeks of a person's work (840 records an
#: agent-hour, docs/performance.md), so each compaction has weeks of old records to drop and
#: the records it keeps below the base are read again only that rarely.
COMPACT_AFTER = 500_000


@dataclass(frozen=True)
class Kept:
    """What the rule asks of the registry at the base (which agents it knows, each mission's
    end): taken on the loop at the snapshot, read by the compaction's thread."""

    agents: frozenset[str]
    #: mission id -> (ended, updated_at)
    missions: dict[str, tuple[bool, float]]

    @classmethod
    def of(cls, registry: Registry) -> Kept:
        return cls(
            frozenset(registry.agents),
            {
                m: (mission.status.ended, mission.updated_at)
                for m, mission in registry.missions.items()
            },
        )


@dataclass
class Compacted:
    """What one compaction did."""

    base: int
    dropped: int


def parties(event: ev.Event) -> tuple[str, ...]:
    """The agents whose timeline shows the event (``timeline.concerns``, as a tuple)."""
    if isinstance(event, ev.AgentEvent):
        return (event.agent,)
    if isinstance(event, ev.MessagePosted):
        return (event.sender, *event.recipients)
    if isinstance(event, ev.MessageDelivered | ev.MessageRead):
        return (event.recipient,)
    if isinstance(event, ev.WorkerAssessed):
        return (event.agent,)
    return ()


def to_drop(
    records: Iterator[StoredRecord], registry: Registry | Kept, now: float
) -> Iterator[int]:
    """The seqs to drop among ``records`` (newest first, all at or below the base)."""
    kept = registry if isinstance(registry, Kept) else Kept.of(registry)
    cutoff = now - KEEP_DAYS * DAY
    seen: dict[str, int] = {}
    gone_at: dict[str, float] = {}  # agents forgotten or expired, from their event
    for record in records:
        event = decode_event(record.type, record.version, record.payload)
        if isinstance(event, ev.AgentForgotten | ev.AgentExpired):
            gone_at.setdefault(event.agent, event.at)
        keep = event.at >= cutoff or isinstance(event, ev.SettingsConfirmed)
        who = parties(event)
        for agent in who:
            seen[agent] = count = seen.get(agent, 0) + 1
            known = agent in kept.agents or gone_at.get(agent, 0.0) >= cutoff
            keep = keep or (known and count <= KEEP_LAST)
        if not who:
            mission = kept.missions.get(getattr(event, "mission", None) or "")
            keep = keep or (mission is not None and (not mission[0] or mission[1] >= cutoff))
        if not keep:
            yield record.seq


def compact(path: Path, registry: Registry, now: float, *, vacuum: bool = False) -> Compacted:
    """Make ``registry`` (the state after its ``seq``, durable) the base, then drop below it.

    Runs beside a daemon's writer (short transactions); ``vacuum`` (no daemon running) then
    gives the freed pages back to the disk.
    """
    base = Snapshot(registry.seq, SNAPSHOT_VERSION, encode_registry(registry))
    writer = connect(path)
    reader = connect(path)
    try:
        store.set_base(writer, base)
        dropped = store.drop(writer, to_drop(store.newest_first(reader, base.seq), registry, now))
        reader.close()
        if vacuum:
            store.vacuum(writer)
    finally:
        for conn in (reader, writer):
            try:
                conn.close()
            except sqlite3.Error:
                pass
    return Compacted(base.seq, dropped)


class LogStatus(TypedDict):
    """``daemon.status``'s ``log``: how many records the log holds and its last compaction."""

    #: Records in the log (None while a compaction runs: it changes under the count).
    records: int | None
    #: The base of a compacted log (0: never compacted, the log is whole).
    base_seq: int
    #: When the log was last compacted: by this daemon, when it finished; else the time of
    #: the base's newest record (the daemon compacts right after it). None: never.
    compacted_at: float | None
    #: What this daemon's last compaction dropped, and how long it ran (None: none yet).
    dropped: int | None
    seconds: float | None
    compacting: bool
    #: Why the last compaction of this daemon stopped short, if it did ("the last compaction
    #: <problem>").
    problem: str | None


class Stopped(Error):
    """The daemon closes: the compaction stops between two chunks (what it dropped stays)."""


class Compactor:
    """Compacts the log from the daemon, in the background, after a periodic snapshot."""

    def __init__(self, event_log: EventLog, clock: Clock, base_seq: int) -> None:
        self.log = event_log
        self.clock = clock
        #: The log's base; marked before the base is written (a feed's replay from below it
        #: is refused from then on), put back if writing it failed.
        self.base_seq = base_seq
        #: The seq of the last snapshot a due compaction looked at (run or found nothing old).
        self.looked = 0
        self._stop = threading.Event()
        self._running: asyncio.Future[None] | None = None
        self._done: tuple[float, int, float] | None = None  # at, dropped, seconds
        self._problem: str | None = None
        #: (base, records at or below it, its newest record's time), counted once per base.
        self._below: tuple[int, int, float | None] | None = None

    def due(self, seq: int) -> bool:
        """Whether a snapshot at ``seq`` should be followed by a compaction."""
        return (
            self._running is None
            and not self._stop.is_set()
            and self.log.stopped is None
            and seq - self.base_seq >= COMPACT_AFTER
        )

    def start(self, snapshot: Snapshot, kept: Kept) -> None:
        """Compact up to ``snapshot`` (the registry at a durable seq, just saved)."""
        if not self.due(snapshot.seq):
            return
        self._running = asyncio.ensure_future(self._compact(snapshot, kept, self.clock.now()))
        self._running.add_done_callback(self._ended)

    def _ended(self, future: asyncio.Future[None]) -> None:
        self._running = None
        if not future.cancelled() and future.exception() is not None:
            log.error("compacting the event log failed", exc_info=future.exception())

    async def close(self) -> None:
        """Stop a running compaction between two chunks and wait for its thread to end."""
        self._stop.set()
        running = self._running
        if running is not None:
            await asyncio.wait({running})

    async def _compact(self, snapshot: Snapshot, kept: Kept, now: float) -> None:
        oldest = await asyncio.to_thread(self._oldest_at)
        self.looked = snapshot.seq
        if oldest is None or oldest >= now - KEEP_DAYS * DAY:
            return  # nothing old enough to go: no base yet (an older volee still reads it)
        began = time.perf_counter()
        previous, self.base_seq = self.base_seq, snapshot.seq
        try:
            await self.log.set_base(snapshot)
        except StoreError as exc:
            self.base_seq = previous
            self._problem = f"could not write the base: {exc}"
            log.warning("compacting the event log: %s", self._problem)
            return
        log.info("event log compacting up to seq %d", snapshot.seq)
        try:
            below, dropped = await asyncio.to_thread(self._drop, snapshot.seq, kept, now)
        except Stopped:
            self._problem = "was stopped by the daemon's close; the next one goes on"
            return
        except StoreError as exc:
            self._problem = f"stopped short: {exc}"
            log.warning("compacting the event log %s", self._problem)
            return
        seconds = time.perf_counter() - began
        self._problem = None
        self._done = (self.clock.now(), dropped, seconds)
        self._below = (snapshot.seq, below, self._done[0])
        log.info(
            "event log compacted up to seq %d: %d records dropped in %.1f s, %d kept below",
            snapshot.seq,
            dropped,
            seconds,
            below,
        )

    def _oldest_at(self) -> float | None:
        """The time of the log's oldest record (in a thread)."""
        conn = connect(self.log.path)
        try:
            row = conn.execute(
                "SELECT type, version, payload FROM events ORDER BY seq LIMIT 1"
            ).fetchone()
        finally:
            conn.close()
        return None if row is None else decode_event(*row).at

    def _drop(self, base: int, kept: Kept, now: float) -> tuple[int, int]:
        """Drop what the rule lets go at or below ``base`` (in a thread); (kept, dropped)."""
        reader = connect(self.log.path)
        scanned = dropped = 0

        def counted() -> Iterator[StoredRecord]:
            nonlocal scanned
            for record in store.newest_first(reader, base):
                scanned += 1
                if scanned % store.DROP_CHUNK == 0 and self._stop.is_set():
                    raise Stopped
                yield record

        try:
            chunk: list[int] = []
            for seq in to_drop(counted(), kept, now):
                chunk.append(seq)
                if len(chunk) >= store.DROP_CHUNK:
                    dropped += self.log.drop_sync(chunk)
                    chunk = []
                    if self._stop.is_set():
                        raise Stopped
            if chunk:
                dropped += self.log.drop_sync(chunk)
        finally:
            reader.close()
        return scanned - dropped, dropped

    async def status(self) -> LogStatus:
        """The log's part of ``daemon.status`` (counts the records below the base once)."""
        running = self._running is not None
        base = self.base_seq
        records: int | None = None
        at: float | None = None
        if not running:
            if base == 0:
                records = self.log.last_seq()  # a whole log: every seq from 1 is there
            else:
                if self._below is None or self._below[0] != base:
                    self._below = await asyncio.to_thread(self._count_below, base)
                _, below, at = self._below
                records = below + self.log.last_seq() - base
        done = self._done
        return {
            "records": records,
            "base_seq": base,
            "compacted_at": done[0] if done is not None else at,
            "dropped": done[1] if done is not None else None,
            "seconds": done[2] if done is not None else None,
            "compacting": running,
            "problem": self._problem,
        }

    def _count_below(self, base: int) -> tuple[int, int, float | None]:
        conn = connect(self.log.path)
        try:
            (count,) = conn.execute(
                "SELECT count(*) FROM events WHERE seq <= ?", (base,)
            ).fetchone()
            row = conn.execute(
                "SELECT type, version, payload FROM events WHERE seq <= ? "
                "ORDER BY seq DESC LIMIT 1",
                (base,),
            ).fetchone()
        finally:
            conn.close()
        return base, int(count), None if row is None else decode_event(*row).at

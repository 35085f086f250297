"""Snapshots of the registry: loading the newest at start (plus the log after it), and saving
one every ``SNAPSHOT_EVERY`` events and at close.  A snapshot is derived data: failing to save
one is only logged, and an unreadable one is replaced by replaying the whole log."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..core.registry import Registry
from ..store.codec import SNAPSHOT_VERSION, CodecError, decode_registry, encode_registry
from ..store.compaction import read_base
from ..store.errors import StoreError
from ..store.integrity import corrupt
from ..store.log import EventLog
from ..store.records import Snapshot
from ..store.schema import connect
from .compaction import Compactor, Kept
from .context import Tasks
from .service import Service, replay

log = logging.getLogger(__name__)

SNAPSHOT_EVERY = 10_000


@dataclass
class StartupFacts:
    """What start-up found, for `volee daemon status` and logs."""

    snapshot_seq: int = 0
    #: The base of a compacted log (0: whole): a feed resumed from before it gets a snapshot.
    base_seq: int = 0
    replayed: int = 0
    spooled: int = 0
    seconds: float = 0.0
    config_problems: list[str] = field(default_factory=list)


def load_registry(event_log: EventLog) -> tuple[Registry, StartupFacts]:
    """The newest snapshot plus the tail of the log after it (or the whole log)."""
    facts = StartupFacts()
    registry = Registry()
    base = compacted_base(event_log)
    facts.base_seq = base.seq if base is not None else 0
    snapshot = event_log.latest_snapshot()
    if base is not None and (
        snapshot is None or snapshot.seq < base.seq or snapshot.version != SNAPSHOT_VERSION
    ):
        snapshot = base  # below it the log is compacted: no replay can start earlier
    if snapshot is not None and snapshot.version == SNAPSHOT_VERSION:
        try:
            registry = decode_registry(snapshot.blob)
            registry.seq = snapshot.seq
            facts.snapshot_seq = snapshot.seq
        except CodecError as exc:
            if base is not None and snapshot is not base:
                return load_registry_from(event_log, base, facts)
            log.warning(
                "snapshot at %d unreadable (%s); replaying the whole log", snapshot.seq, exc
            )
            registry = Registry()
    if base is not None and registry.seq < base.seq:
        raise StoreError(
            f"the event log {event_log.path} is compacted up to seq {base.seq} and its base "
            f"snapshot (version {base.version}) cannot be read by this volee "
            f"(version {SNAPSHOT_VERSION}); upgrade volee or restore a backup"
        )
    before = registry.seq
    try:
        replay(registry, event_log.read(registry.seq))
    except CodecError as exc:
        raise corrupt(event_log.path, registry.seq + 1, f"an event cannot be read: {exc}") from exc
    facts.replayed = registry.seq - before
    return registry, facts


def compacted_base(event_log: EventLog) -> Snapshot | None:
    """The base of a compacted log (store/compaction.py), or None for a whole log."""
    conn = connect(event_log.path)
    try:
        return read_base(conn)
    finally:
        conn.close()


def load_registry_from(
    event_log: EventLog, base: Snapshot, facts: StartupFacts
) -> tuple[Registry, StartupFacts]:
    """The base plus the log after it (a newer snapshot could not be read)."""
    try:
        registry = decode_registry(base.blob)
    except CodecError as exc:
        raise StoreError(f"the compacted log's base snapshot cannot be read: {exc}") from exc
    registry.seq = facts.snapshot_seq = base.seq
    replay(registry, event_log.read(registry.seq))
    facts.replayed = registry.seq - base.seq
    return registry, facts


class Snapshots:
    """Saves a snapshot of the visible registry every ``SNAPSHOT_EVERY`` events; after one,
    the ``compactor`` may make it the log's base and compact below it (compaction.py)."""

    def __init__(
        self,
        event_log: EventLog,
        service: Service,
        tasks: Tasks,
        compactor: Compactor | None = None,
    ) -> None:
        self.log = event_log
        self.service = service
        self.tasks = tasks
        self.compactor = compactor
        self._since = 0
        service.listen(self._count)

    def _count(self, _seq: int, _event: object) -> None:
        self._since += 1
        if self._since >= SNAPSHOT_EVERY:
            self._since = 0
            self.tasks.spawn(self.save(compact=True), "snapshot")

    async def save(self, *, compact: bool = False) -> None:
        """Save the visible registry as a snapshot (derived data: failure is only logged);
        ``compact``: then compact the log below it if it is due (the periodic ones)."""
        registry = self.service.registry
        if registry.seq == 0:
            return
        blob = encode_registry(registry)
        compactor = self.compactor if compact else None
        # Taken with the blob, before any await: the rule's view of the same registry.
        kept = Kept.of(registry) if compactor is not None and compactor.due(registry.seq) else None
        seq = registry.seq
        try:
            await self.log.save_snapshot(seq, SNAPSHOT_VERSION, blob)
        except StoreError as exc:
            log.warning("could not save a snapshot at %d: %s", seq, exc)
            return
        if compactor is not None and kept is not None:
            compactor.start(Snapshot(seq, SNAPSHOT_VERSION, blob), kept)

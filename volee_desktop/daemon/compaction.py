"""Snapshot-and-compact: which events of the log may go once a base snapshot covers them.

The rule (docs/decisions.md, "Compacting the event log"): an event at or below the base is
kept when it is younger than ``KEEP_DAYS``, when it is one of the last ``KEEP_LAST`` events
of an agent the registry still holds (or forgot less than ``KEEP_DAYS`` ago), when it
belongs to a mission still open or closed less than ``KEEP_DAYS`` ago, or when it is a
person's confirmation of settings; everything else at or below the base goes.  Nothing
above the base is touched, so no acknowledged event a replay needs is lost: the base holds
the state they made.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core import events as ev
from ..core.registry import Registry
from ..store import compaction as store
from ..store.codec import SNAPSHOT_VERSION, decode_event, encode_registry
from ..store.records import Snapshot, StoredRecord
from ..store.schema import connect

KEEP_DAYS = 30
KEEP_LAST = 1000
DAY = 86_400.0


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


def to_drop(records: Iterator[StoredRecord], registry: Registry, now: float) -> Iterator[int]:
    """The seqs to drop among ``records`` (newest first, all at or below the base)."""
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
            known = agent in registry.agents or gone_at.get(agent, 0.0) >= cutoff
            keep = keep or (known and count <= KEEP_LAST)
        if not who:
            mission = registry.missions.get(getattr(event, "mission", None) or "")
            keep = keep or (
                mission is not None and (not mission.status.ended or mission.updated_at >= cutoff)
            )
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

"""A log written by an older volee still decodes, to the letter, with no upcaster.

``fixtures/log-2026-12-01.db`` was written by volee as of 2026-12-01, before the
closed sets of the events (how a session was linked, how a host started, what
recovery decided, who stopped an agent) became enums: the strings it stores are
the ones the enums must keep.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from volee_desktop.core import events as ev
from volee_desktop.core.registry import Registry
from volee_desktop.store.codec import decode_event, decode_registry, encode_event
from volee_desktop.store.log import EventLog

FIXTURE = Path(__file__).parent / "fixtures" / "log-2026-12-01.db"


def _read(tmp_path: Path) -> tuple[list[ev.Event], list[bytes], Registry]:
    copy = tmp_path / "events.db"
    shutil.copyfile(FIXTURE, copy)
    with EventLog.open(copy) as log:
        records = list(log.read())
        snapshot = log.latest_snapshot()
    assert snapshot is not None
    assert snapshot.seq == len(records) == 23
    events = [decode_event(r.type, r.version, r.payload) for r in records]
    return events, [r.payload for r in records], decode_registry(snapshot.blob)


def test_every_record_decodes_and_encodes_back_to_the_same_bytes(tmp_path: Path) -> None:
    events, payloads, _ = _read(tmp_path)
    assert [encode_event(e)[2] for e in events] == payloads


def test_the_stored_strings_are_the_closed_sets(tmp_path: Path) -> None:
    events, _, _ = _read(tmp_path)
    linked = [e.how for e in events if isinstance(e, ev.SessionLinked)]
    started = [e.how for e in events if isinstance(e, ev.HostStarted)]
    decided = [e.outcome for e in events if isinstance(e, ev.RecoveryDecided)]
    stopped = [e.by for e in events if isinstance(e, ev.StopRequested)]
    assert linked == ["started", "discovered", "continued", "moved", "resumed"]
    assert started == ["launch", "resume", "restart", "relaunch"]
    assert decided == ["resume", "relaunch", "stopped", "held", "failed"]
    assert stopped == ["human", "human"]
    # The strings come back as the closed sets' members, with no upcaster.
    assert all(isinstance(how, ev.LinkKind) for how in linked)
    assert all(isinstance(how, ev.StartKind) for how in started)
    assert all(isinstance(outcome, ev.RecoveryOutcome) for outcome in decided)
    assert all(isinstance(by, ev.Stopper) for by in stopped)


def test_the_replayed_registry_equals_the_stored_snapshot(tmp_path: Path) -> None:
    events, _, snapshot = _read(tmp_path)
    registry = Registry()
    for event in events:
        assert registry.validate(event) is None, event
        registry.apply(event)
    registry.seq = len(events)
    assert registry == snapshot
    assert [a.name for a in registry.by_urgency()] == ["fix-login", "spike", "docs"]

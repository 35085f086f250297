"""Snapshot-and-compact: the registry loaded from a compacted log (its base and the tail) is the
registry of the whole log, at every step a crash could stop it, and timelines keep their rule."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.store.test_old_logs import FIXTURE
from volee_desktop.core import events as ev
from volee_desktop.core.ids import new_id
from volee_desktop.core.model import HUMAN, Harness, ThreadKind
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.daemon import compaction
from volee_desktop.daemon.agents.timeline import concerns
from volee_desktop.daemon.compaction import DAY, compact, parties, to_drop
from volee_desktop.daemon.service import replay
from volee_desktop.daemon.snapshots import load_registry
from volee_desktop.store import CorruptLog, repair
from volee_desktop.store import compaction as store
from volee_desktop.store.codec import encode_event, encode_registry
from volee_desktop.store.log import EventLog
from volee_desktop.store.records import Record
from volee_desktop.store.schema import connect

START = 1_760_000_000.0


def _id(prefix: str, rng: random.Random, at: float) -> str:
    return new_id(prefix, int(at * 1000), rng.randbytes(10))


def generated(seed: int, lives: int = 40) -> list[ev.Event]:
    """Agents over 90 days: each registered, working turns (activity, context, a message from
    the person), stopped, some forgotten; valid in order."""
    rng = random.Random(seed)
    registry = Registry()
    out: list[ev.Event] = []

    def add(event: ev.Event) -> None:
        assert registry.validate(event) is None, (event, registry.validate(event))
        registry.apply(event)
        out.append(event)

    for life in range(lives):
        at = START + life * (90 * DAY / lives)
        agent = _id("ag_", rng, at)
        add(ev.AgentRegistered(at=at, agent=agent, name=f"a{life}", harness=Harness.CLAUDE))
        thread = _id("th_", rng, at)
        add(ev.ThreadOpened(at=at, thread=thread, kind=ThreadKind.DIRECT, parties=(HUMAN, agent)))
        for turn in range(rng.randint(1, 30)):
            at += 60
            message = _id("msg_", rng, at)
            add(
                ev.MessagePosted(
                    at=at,
                    message=message,
                    thread=thread,
                    sender=HUMAN,
                    recipients=(agent,),
                    body=f"turn {turn}",
                )
            )
            add(ev.MessageDelivered(at=at, message=message, recipient=agent))
            add(ev.StateChanged(at=at, agent=agent, state=AgentState.WORKING))
            for call in range(rng.randint(0, 4)):
                add(ev.ActivityRecorded(at=at + call, agent=agent, activity=f"Bash: {call}"))
            add(ev.ContextUsed(at=at + 5, agent=agent, share=rng.random()))
            add(ev.StateChanged(at=at + 6, agent=agent, state=AgentState.DONE))
        add(ev.StopRequested(at=at + 10, agent=agent))
        add(ev.StateChanged(at=at + 11, agent=agent, state=AgentState.STOPPED))
        if rng.random() < 0.4:
            add(ev.AgentForgotten(at=at + 12, agent=agent))
    return out


def written(path: Path, events: list[ev.Event]) -> None:
    with EventLog.open(path) as log:
        log.append_sync([Record(*encode_event(e)) for e in events])


def whole(path: Path) -> Registry:
    with EventLog.open(path) as log:
        return replay(Registry(), log.read())


def loaded(path: Path) -> Registry:
    with EventLog.open(path) as log:
        return load_registry(log)[0]


@pytest.fixture(autouse=True)
def few_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # A small K, so that the generated agents' older events do go.
    monkeypatch.setattr(compaction, "KEEP_LAST", 20)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_base_and_tail_equal_the_whole_log_on_a_generated_log(tmp_path: Path, seed: int) -> None:
    events = generated(seed)
    path = tmp_path / "events.db"
    cut = len(events) * 2 // 3  # events after the base: the tail a start replays
    written(path, events[:cut])
    at_base = whole(path)
    with EventLog.open(path) as log:
        log.append_sync([Record(*encode_event(e)) for e in events[cut:]])
    expected = encode_registry(whole(path))
    with EventLog.open(path) as log:
        before = sum(1 for _ in log.read())
    done = compact(path, at_base, now=events[-1].at, vacuum=True)
    assert done.base == cut
    assert done.dropped > 0
    with EventLog.open(path) as log:
        kept = list(log.read())  # a timeline reads across the gaps
    assert len(kept) == before - done.dropped
    assert [r.seq for r in kept if r.seq > cut] == list(range(cut + 1, len(events) + 1))
    assert encode_registry(loaded(path)) == expected


def test_a_crash_at_each_step_leaves_a_log_that_loads_to_the_same_registry(
    tmp_path: Path,
) -> None:
    events = generated(7)
    path = tmp_path / "events.db"
    written(path, events)
    registry = whole(path)
    expected = encode_registry(registry)
    snapshot = store.Snapshot(registry.seq, 1, encode_registry(registry))
    drops = list(to_drop(store.newest_first(connect(path), registry.seq), registry, events[-1].at))
    assert drops
    conn = connect(path)
    store.set_base(conn, snapshot)  # killed here: base written, nothing dropped
    conn.close()
    assert encode_registry(loaded(path)) == expected
    for part in (drops[: len(drops) // 3], drops[len(drops) // 3 :]):  # killed between chunks
        conn = connect(path)
        store.drop(conn, part)
        conn.close()
        assert encode_registry(loaded(path)) == expected


def test_the_stored_fixture_compacts_to_the_same_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "KEEP_LAST", 2)
    path = tmp_path / "events.db"
    shutil.copyfile(FIXTURE, path)
    registry = whole(path)
    expected = encode_registry(registry)
    # A year later, with K of 2: its agents keep their last two events, nothing more.
    done = compact(path, registry, now=START + 400 * DAY, vacuum=True)
    assert done.dropped > 0
    assert encode_registry(loaded(path)) == expected


def test_the_rule_keeps_recent_events_last_k_of_known_agents_and_drops_the_forgotten(
    tmp_path: Path,
) -> None:
    events = generated(5)
    path = tmp_path / "events.db"
    written(path, events)
    registry = whole(path)
    now = events[-1].at
    with EventLog.open(path) as log:
        records = {r.seq: r for r in log.read()}
    dropped = set(to_drop(store.newest_first(connect(path), registry.seq), registry, now))
    count: dict[str, int] = {}
    for seq in sorted(records, reverse=True):
        event = events[seq - 1]
        who = parties(event)
        assert who or isinstance(event, ev.ThreadOpened)
        for agent in who:
            assert concerns(event, agent)
            count[agent] = count.get(agent, 0) + 1
        recent = event.at >= now - compaction.KEEP_DAYS * DAY
        last_k = any(a in registry.agents and count[a] <= compaction.KEEP_LAST for a in who)
        assert (seq in dropped) == (not recent and not last_k), event


def test_nothing_above_the_base_can_be_dropped(tmp_path: Path) -> None:
    events = generated(9, lives=3)
    path = tmp_path / "events.db"
    written(path, events)
    conn = connect(path)
    store.set_base(conn, store.Snapshot(5, 1, b"{}"))
    with pytest.raises(store.StoreError):
        store.drop(conn, [6])
    conn.close()


def test_a_repair_keeps_the_base_of_a_compacted_log(tmp_path: Path) -> None:
    events = generated(11)
    path = tmp_path / "events.db"
    written(path, events)
    registry = whole(path)
    expected = encode_registry(registry)
    compact(path, registry, now=events[-1].at)
    repair(path)
    assert encode_registry(loaded(path)) == expected


def test_a_hole_above_the_base_is_still_damage(tmp_path: Path) -> None:
    events = generated(13, lives=3)
    path = tmp_path / "events.db"
    written(path, events)
    conn = connect(path)
    store.set_base(conn, store.Snapshot(5, 1, b"{}"))
    store.drop(conn, [3, 4])
    conn.execute("DELETE FROM events WHERE seq = 8")
    conn.close()
    with EventLog.open(path) as log, pytest.raises(CorruptLog) as caught:
        list(log.read())
    assert caught.value.seq == 8

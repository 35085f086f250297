"""The daemon compacts its log by itself (daemon/compaction.py ``Compactor``), after a periodic
snapshot, through the log's writer: appends stay durable and in order while it runs, a crash
or a failure between its chunks leaves a log that starts to the same registry, a feed cannot
replay from below the base, and ``daemon.status`` says how many records the log holds and when
it was last compacted."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import registered
from tests.fakes.clock import FakeClock
from tests.polling import until
from volee_desktop.cli.daemon import log_text
from volee_desktop.core import events as ev
from volee_desktop.daemon import compaction, snapshots
from volee_desktop.daemon.compaction import DAY, KEEP_DAYS
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import ErrorCode, IpcError
from volee_desktop.paths import dirs
from volee_desktop.store import Compacted, EventLog, integrity
from volee_desktop.store import compaction as store
from volee_desktop.store.codec import encode_event, encode_registry
from volee_desktop.store.records import Record, Snapshot
from volee_desktop.store.schema import connect

ROOT = Path(__file__).resolve().parents[2]
#: Events the crash child commits: its last one is a snapshot that is due for compaction.
EVENTS = 200


def small_rule(setattr_: Callable[[Any, str, Any], None]) -> None:
    """A snapshot every 50 events, a compaction due after 200, chunks of 20, 5 events kept of
    an agent below the base: a few hundred events exercise what a year does."""
    setattr_(snapshots, "SNAPSHOT_EVERY", 50)
    setattr_(compaction, "COMPACT_AFTER", 200)
    setattr_(compaction, "KEEP_LAST", 5)
    setattr_(store, "DROP_CHUNK", 20)


@pytest.fixture(autouse=True)
def rule(monkeypatch: pytest.MonkeyPatch) -> None:
    small_rule(monkeypatch.setattr)


def old_activity(now: float, count: int, age: float = 40 * DAY) -> Iterator[ev.Event]:
    """An agent registered ``age`` ago, then its activity, one event a second from then."""
    a = registered("a", at=now - age)
    yield a
    for i in range(count - 1):
        yield ev.ActivityRecorded(at=now - age + 1 + i, agent=a.agent, activity=f"Bash: {i}")


def rows(path: Path) -> list[int]:
    with sqlite3.connect(path) as conn:
        return [int(r[0]) for r in conn.execute("SELECT seq FROM events ORDER BY seq")]


async def status_of(d: Daemon) -> dict[str, Any]:
    client = await AsyncClient.connect(d.dirs.socket)
    try:
        return dict(await client.call("daemon.status", {}))
    finally:
        await client.close()


async def test_the_daemon_compacts_after_a_snapshot_while_appends_go_on_durable_and_in_order(
    volee_home: Path,
) -> None:
    clock = FakeClock(start=1_900_000_000.0)
    home = dirs()
    d = await Daemon.start(home, clock=clock)
    try:
        before = await status_of(d)
        assert before["log"] == {
            "records": 0,
            "base_seq": 0,
            "compacted_at": None,
            "dropped": None,
            "seconds": None,
            "compacting": False,
            "problem": None,
        }
        events = list(old_activity(clock.now(), 300))
        for event in events:  # the compaction from the snapshot at 200 runs among these
            await d.service.commit([event])
        status = await until(lambda: _compacted(d), what="the daemon's own compaction", timeout=30)
        log = status["log"]
        base = log["base_seq"]
        assert 200 <= base <= 300
        assert log["dropped"] > 0
        assert log["compacted_at"] == clock.now()
        kept = rows(home.events_db)
        assert log["records"] == len(kept) == 300 - log["dropped"]
        # Nothing above the base went, and every append made while it ran is there, in order.
        # and below it only the agent's last 5 (all its events are 40 days old).
        assert kept == list(range(base - 4, 301))
        assert "compacted up to seq" in log_text(status)
        client = await AsyncClient.connect(d.dirs.socket)
        try:
            with pytest.raises(IpcError) as refused:
                await client.call("subscribe", {"since": base - 1, "interactive": False})
            assert refused.value.code == ErrorCode.CONFLICT
            assert f"base (seq {base})" in str(refused.value)
        finally:
            await client.close()
        expected = encode_registry(d.service.registry)
    finally:
        await d.close()
    d = await Daemon.start(home, clock=clock)
    try:
        assert encode_registry(d.service.registry) == expected
        assert d.facts.base_seq == base
        again = (await status_of(d))["log"]
        assert again["records"] == len(kept)  # counted below the base once, at the first ask
        assert again["compacted_at"] == events[base - 1].at  # the base's newest record
    finally:
        await d.close()


async def _compacted(d: Daemon) -> dict[str, Any] | None:
    status = await status_of(d)
    log = status["log"]
    return status if log["dropped"] is not None and not log["compacting"] else None


async def test_nothing_older_than_the_kept_days_no_compaction_until_the_clock_says_so(
    volee_home: Path,
) -> None:
    clock = FakeClock(start=1_900_000_000.0)
    home = dirs()
    d = await Daemon.start(home, clock=clock, serve=False)
    try:
        for event in old_activity(clock.now(), 250, age=0.0):
            await d.service.commit([event])
        await until(lambda: d.compactor.looked == 250, what="the look after the snapshot at 250")
        assert (await d.compactor.status())["base_seq"] == 0  # all young: no base written
        assert _snapshot_at(home.events_db, 250)
        assert len(rows(home.events_db)) == 250
        clock.t += (KEEP_DAYS + 1) * DAY
        a = next(iter(d.service.registry.agents))
        for i in range(50):
            await d.service.commit([ev.ActivityRecorded(at=clock.now(), agent=a, activity=f"{i}")])
        done = await until(
            lambda: _done(d), what="the compaction once the events are old", timeout=30
        )
        assert done["base_seq"] == 300
        assert done["dropped"] == 250  # the old ones, but the last 5 of the agent: all new
    finally:
        await d.close()


def _snapshot_at(path: Path, seq: int) -> bool:
    with sqlite3.connect(path) as conn:
        return bool(conn.execute("SELECT 1 FROM snapshots WHERE seq = ?", (seq,)).fetchone())


async def _done(d: Daemon) -> compaction.LogStatus | None:
    status = await d.compactor.status()
    return status if status["dropped"] is not None else None


async def test_a_failure_between_two_chunks_keeps_appends_going_and_the_registry_whole(
    volee_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = store.drop
    calls = 0

    def failing(conn: sqlite3.Connection, seqs: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real(conn, seqs)

    monkeypatch.setattr(store, "drop", failing)
    clock = FakeClock(start=1_900_000_000.0)
    home = dirs()
    d = await Daemon.start(home, clock=clock, serve=False)
    try:
        for event in old_activity(clock.now(), 200):
            await d.service.commit([event])
        status = await until(
            lambda: _stopped_short(d), what="the compaction to stop short", timeout=30
        )
        assert "disk I/O error" in status["problem"]
        assert len(rows(home.events_db)) == 200 - 20  # one chunk went, then it stopped
        a = next(iter(d.service.registry.agents))
        await d.service.commit([ev.ActivityRecorded(at=clock.now(), agent=a, activity="after")])
        assert d.service.broken is None
        assert d.service.failing is None
        expected = encode_registry(d.service.registry)
    finally:
        await d.close()
    d = await Daemon.start(home, clock=clock, serve=False)
    try:
        assert encode_registry(d.service.registry) == expected
        assert d.service.registry.agents[a].activity == "after"
    finally:
        await d.close()


async def _stopped_short(d: Daemon) -> compaction.LogStatus | None:
    status = await d.compactor.status()
    return status if status["problem"] and not status["compacting"] else None


async def test_a_daemon_killed_between_two_chunks_starts_again_to_the_same_registry(
    volee_home: Path, tmp_path: Path
) -> None:
    expected = tmp_path / "expected.json"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.daemon.compaction_crash", str(expected), cwd=ROOT
    )
    assert await asyncio.wait_for(child.wait(), 60) == 9
    home = dirs()
    kept = rows(home.events_db)
    assert len(kept) == EVENTS - 20  # the base written, its first chunk dropped, then killed
    with sqlite3.connect(home.events_db) as conn:
        assert conn.execute("SELECT seq FROM base").fetchone() == (EVENTS,)
    d = await Daemon.start(home, serve=False)
    try:
        assert encode_registry(d.service.registry) == expected.read_bytes()
        assert d.facts.base_seq == EVENTS
    finally:
        await d.close()


def _log_of(path: Path, count: int) -> None:
    now = 1_900_000_000.0
    with EventLog.open(path) as log:
        log.append_sync([Record(*encode_event(e)) for e in old_activity(now, count)])


def test_a_read_beside_a_compaction_sees_the_log_whole_as_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.db"
    _log_of(path, 30)
    real = integrity.base_seq

    def then_compact(conn: sqlite3.Connection) -> int:
        seen = real(conn)
        other = connect(path)  # a compaction commits between the base's read and the records'
        store.set_base(other, Snapshot(20, 1, b"{}"))
        store.drop(other, range(1, 20))
        other.close()
        return seen

    monkeypatch.setattr(integrity, "base_seq", then_compact)
    with EventLog.open(path) as log:
        assert [r.seq for r in log.read(0)] == list(range(1, 31))


def test_a_replay_wanted_whole_from_below_the_base_says_where_the_base_is(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    _log_of(path, 30)
    conn = connect(path)
    store.set_base(conn, Snapshot(20, 1, b"{}"))
    store.drop(conn, [3, 4])
    conn.close()
    with EventLog.open(path) as log:
        with pytest.raises(Compacted, match="compacted up to seq 20") as caught:
            list(log.read(2, whole=True))
        assert caught.value.base == 20
        assert [r.seq for r in log.read(20, whole=True)] == list(range(21, 31))
        assert len(list(log.read(0))) == 28  # a timeline reads across the gaps


def test_status_words_for_the_log() -> None:
    part: dict[str, Any] = {
        "records": 1_082_250,
        "base_seq": 1_495_170,
        "compacted_at": 1_900_000_000.0,
        "dropped": 412_920,
        "seconds": 17.6,
        "compacting": False,
        "problem": None,
    }
    text = log_text({"seq": 1_500_000, "log": part})
    assert text.startswith(
        "1,082,250 records, up to seq 1,500,000; compacted up to seq 1,495,170 ("
    )
    assert text.endswith(", 412,920 dropped in 17.6 s)")
    never = {**part, "base_seq": 0, "compacted_at": None, "dropped": None, "records": 10}
    assert log_text({"seq": 10, "log": never}) == "10 records, up to seq 10; never compacted"
    assert log_text({"seq": 10}) == "10 events"  # an older daemon


async def test_a_replay_that_meets_a_compaction_after_its_check_ends_the_connection(
    volee_home: Path,
) -> None:
    home = dirs()
    d = await Daemon.start(home)
    a = registered("a")
    await d.service.commit([a])
    for i in range(4):
        await d.service.commit([ev.ActivityRecorded(at=2 + i, agent=a.agent, activity=f"s{i}")])
    registry = d.service.registry
    await d.close()
    compaction.compact(home.events_db, registry, now=10 * 365 * DAY)  # drops 1-4, base 5
    d = await Daemon.start(home)
    d.compactor.base_seq = 0  # as if the compaction began after subscribe's look at the base
    client = await AsyncClient.connect(d.dirs.socket)
    pushed: list[int] = []
    client.on_push("event", lambda p: pushed.append(p["seq"]))
    try:
        assert await client.call("subscribe", {"since": 2}) == {"seq": 2, "replay": True}
        await asyncio.wait_for(client.closed.wait(), 10)  # dropped, never a replay with holes
        assert pushed == []
    finally:
        await client.close()
        await d.close()

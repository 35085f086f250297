"""The contract every event log passes (EventLog, MemoryLog): subclass LogContract and fill in."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from volee_desktop.store import (
    SNAPSHOTS_KEPT,
    DuplicateKey,
    Log,
    Record,
    Snapshot,
    StoredRecord,
    StoreError,
    WriteFailed,
)
from volee_desktop.store.log import EventLog


def rec(n: int, type_: str = "thing-happened", version: int = 1) -> Record:
    return Record(type_, version, f"payload {n}".encode())


def stored(log: Log, after: int = 0) -> list[StoredRecord]:
    return list(log.read(after))


class LogContract:
    """Behaviour the daemon relies on, whatever keeps the records."""

    # -- what an implementation provides --------------------------------------

    def open_log(self, path: Path) -> Log:
        raise NotImplementedError

    def reopen(self, log: Log, path: Path) -> Log:
        """Close ``log`` and open it again, as a restarted daemon would."""
        raise NotImplementedError

    def break_writes(self, log: Log) -> None:
        """Make every commit fail until ``mend_writes``."""
        raise NotImplementedError

    def mend_writes(self, log: Log) -> None:
        raise NotImplementedError

    @pytest.fixture
    def path(self, tmp_path: Path) -> Path:
        return tmp_path / "state" / "events.db"

    @pytest.fixture
    def log(self, path: Path) -> Iterator[Log]:
        opened = self.open_log(path)
        self._open = [opened]
        yield opened
        for each in self._open:
            each.close()

    def restart(self, log: Log, path: Path) -> Log:
        again = self.reopen(log, path)
        self._open.append(again)
        return again

    # -- the contract ----------------------------------------------------------

    def test_a_new_log_is_empty(self, log: Log) -> None:
        assert log.last_seq() == 0
        assert stored(log) == []
        assert log.latest_snapshot() is None
        assert not log.has_key("k")
        assert log.key_seq("k") is None

    def test_seqs_start_at_one_and_have_no_gaps(self, log: Log) -> None:
        assert log.append_sync([rec(1), rec(2)]) == [1, 2]
        assert log.append_sync([rec(3)]) == [3]
        assert log.append_sync([]) == []
        assert log.append_sync([rec(4, "other", 7)]) == [4]
        assert stored(log) == [
            StoredRecord(1, "thing-happened", 1, b"payload 1"),
            StoredRecord(2, "thing-happened", 1, b"payload 2"),
            StoredRecord(3, "thing-happened", 1, b"payload 3"),
            StoredRecord(4, "other", 7, b"payload 4"),
        ]
        assert log.last_seq() == 4

    def test_read_after_gives_only_the_tail(self, log: Log) -> None:
        log.append_sync([rec(n) for n in range(1, 11)])
        assert [r.seq for r in log.read(after=7)] == [8, 9, 10]
        assert stored(log, after=10) == []
        assert stored(log, after=99) == []

    def test_the_version_is_kept_as_written(self, log: Log) -> None:
        # Upcasting is the codec's business: the store never rewrites a record.
        log.append_sync([Record("renamed", 1, b"old"), Record("renamed", 3, b"new")])
        assert [(r.version, r.payload) for r in log.read()] == [(1, b"old"), (3, b"new")]

    async def test_concurrent_appends_are_durable_in_call_order(self, log: Log) -> None:
        # The awaitables are created in this order; nothing is awaited in between.
        pending = [log.append([rec(n)] * (1 + n % 3)) for n in range(60)]
        results = await asyncio.gather(*pending)
        flat = [seq for seqs in results for seq in seqs]
        assert flat == list(range(1, len(flat) + 1))
        assert [r.payload for r in log.read()] == [
            f"payload {n}".encode() for n in range(60) for _ in range(1 + n % 3)
        ]

    async def test_appends_from_tasks_all_land(self, log: Log) -> None:
        async def writer(w: int) -> list[int]:
            seqs: list[int] = []
            for n in range(20):
                seqs += await log.append([rec(w * 100 + n)])
            return seqs

        results = await asyncio.gather(*(writer(w) for w in range(10)))
        all_seqs = sorted(seq for seqs in results for seq in seqs)
        assert all_seqs == list(range(1, 201))
        for w, seqs in enumerate(results):
            assert seqs == sorted(seqs)
            assert [r.payload for r in log.read() if r.seq in set(seqs)] == [
                f"payload {w * 100 + n}".encode() for n in range(20)
            ]

    async def test_a_key_is_written_once(self, log: Log) -> None:
        assert await log.append([rec(1)]) == [1]
        assert await log.append([rec(2), rec(3)], key="hook-42") == [2, 3]
        assert log.has_key("hook-42")
        assert log.key_seq("hook-42") == 2
        with pytest.raises(DuplicateKey) as caught:
            await log.append([rec(9)], key="hook-42")
        assert caught.value.seq == 2
        assert "hook-42" in str(caught.value)
        assert log.last_seq() == 3

    async def test_a_duplicate_key_fails_only_its_own_caller(self, log: Log) -> None:
        await log.append([rec(0)], key="dup")
        first = log.append([rec(1)])
        second = log.append([rec(2)], key="dup")
        third = log.append([rec(3)], key="fresh")
        results = await asyncio.gather(first, second, third, return_exceptions=True)
        assert results[0] == [2]
        assert isinstance(results[1], DuplicateKey)
        assert results[2] == [3]
        assert [r.payload for r in log.read()] == [b"payload 0", b"payload 1", b"payload 3"]

    async def test_the_same_new_key_twice_in_flight_is_written_once(self, log: Log) -> None:
        results = await asyncio.gather(
            log.append([rec(1)], key="k"), log.append([rec(2)], key="k"), return_exceptions=True
        )
        assert results[0] == [1]
        assert isinstance(results[1], DuplicateKey)
        assert log.last_seq() == 1

    async def test_a_key_on_an_empty_append_is_remembered(self, log: Log) -> None:
        log.append_sync([rec(1)])
        assert await log.append([], key="nothing-to-say") == []
        assert log.has_key("nothing-to-say")
        assert log.last_seq() == 1

    async def test_groups_go_in_together_and_in_order(self, log: Log) -> None:
        log.append_sync([rec(0)])
        result = await log.append_groups([([rec(1), rec(2)], "a"), ([], "b"), ([rec(3)], None)])
        assert result == [[2, 3], [], [4]]
        assert log.has_key("a")
        assert log.has_key("b")

    async def test_groups_are_all_or_nothing(self, log: Log) -> None:
        log.append_sync([rec(0)], key="taken")
        with pytest.raises(DuplicateKey):
            await log.append_groups([([rec(1)], "new"), ([rec(2)], "taken")])
        with pytest.raises(StoreError, match="twice"):
            await log.append_groups([([rec(1)], "x"), ([rec(2)], "x")])
        assert log.last_seq() == 1
        assert not log.has_key("new")
        assert not log.has_key("x")

    async def test_bad_input_is_refused_at_the_call(self, log: Log) -> None:
        with pytest.raises(StoreError, match="payload bytes"):
            log.append([Record("t", 1, "not bytes")])  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="Record objects"):
            log.append_sync([("t", 1, b"x")])  # type: ignore[list-item]
        with pytest.raises(StoreError, match="key"):
            log.append([rec(1)], key=5)  # type: ignore[arg-type]
        assert log.last_seq() == 0

    async def test_a_failed_commit_fails_every_caller_and_the_log_goes_on(self, log: Log) -> None:
        log.append_sync([rec(1)])
        self.break_writes(log)
        results = await asyncio.gather(
            *(log.append([rec(n)]) for n in range(10)), return_exceptions=True
        )
        assert all(isinstance(r, StoreError) for r in results), results
        with pytest.raises(StoreError):
            log.append_sync([rec(99)])
        assert log.last_seq() == 1
        self.mend_writes(log)
        # Writes queued behind a failure may rest on it: they fail too until resume().
        log.resume()
        assert await log.append([rec(2)]) == [2]
        assert [r.seq for r in log.read()] == [1, 2]

    async def test_writes_queued_behind_a_failure_fail_until_resume(self, log: Log) -> None:
        log.append_sync([rec(1)])
        self.break_writes(log)
        with pytest.raises(WriteFailed):
            await log.append([rec(2)])
        self.mend_writes(log)
        if isinstance(log, EventLog):
            with pytest.raises(WriteFailed):
                await log.append([rec(3)])
        log.resume()
        assert await log.append([rec(4)]) == [2]

    def test_everything_survives_a_restart(self, log: Log, path: Path) -> None:
        log.append_sync([rec(1), rec(2)], key="k")
        log.save_snapshot_sync(2, 5, b"state at 2")
        log.append_sync([rec(3)])
        again = self.restart(log, path)
        assert again.last_seq() == 3
        assert [r.payload for r in again.read()] == [b"payload 1", b"payload 2", b"payload 3"]
        assert again.key_seq("k") == 1
        assert again.latest_snapshot() == Snapshot(2, 5, b"state at 2")
        assert again.append_sync([rec(4)]) == [4]

    def test_the_newest_snapshots_are_kept(self, log: Log) -> None:
        log.append_sync([rec(n) for n in range(1, 11)])
        for seq in (2, 4, 6, 8, 10):
            log.save_snapshot_sync(seq, 1, f"at {seq}".encode())
        snapshot = log.latest_snapshot()
        assert snapshot is not None
        seq, version, blob = snapshot
        assert (seq, version, blob) == (10, 1, b"at 10")
        assert SNAPSHOTS_KEPT == 3

    def test_a_snapshot_beyond_the_end_is_refused(self, log: Log) -> None:
        log.append_sync([rec(1)])
        with pytest.raises(StoreError, match="seq 5"):
            log.save_snapshot_sync(5, 1, b"from the future")
        with pytest.raises(StoreError, match="bytes"):
            log.save_snapshot_sync(1, 1, "text")  # type: ignore[arg-type]
        assert log.latest_snapshot() is None

    async def test_a_snapshot_may_follow_an_append_still_in_flight(self, log: Log) -> None:
        appended = log.append([rec(1), rec(2)])
        saved = log.save_snapshot(2, 1, b"after two")
        assert await appended == [1, 2]
        await saved
        assert log.latest_snapshot() == Snapshot(2, 1, b"after two")

    def test_writes_after_close_are_refused(self, path: Path) -> None:
        log = self.open_log(path)
        log.append_sync([rec(1)])
        log.close()
        log.close()
        with pytest.raises(StoreError, match="closed"):
            log.append_sync([rec(2)])

    @settings(
        max_examples=25,
        deadline=None,
        # Each subclass runs this on its own log on purpose; tmp_path is only a
        # folder, every example opens a file of its own.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(
        batches=st.lists(
            st.tuples(
                st.lists(
                    st.builds(
                        Record,
                        st.sampled_from(["a", "b-c", "ünï"]),
                        st.integers(0, 3),
                        st.binary(max_size=40),
                    ),
                    max_size=4,
                ),
                st.one_of(st.none(), st.sampled_from(["k1", "k2", "k3"])),
            ),
            max_size=12,
        )
    )
    def test_reading_gives_back_what_was_appended(
        self, tmp_path: Path, batches: list[tuple[list[Record], str | None]]
    ) -> None:
        path = tmp_path / f"prop-{id(batches)}-{len(list(tmp_path.iterdir()))}.db"
        log = self.open_log(path)
        try:
            expected: list[Record] = []
            keys: set[str] = set()
            for records, key in batches:
                if key is not None and key in keys:
                    with pytest.raises(DuplicateKey):
                        log.append_sync(records, key)
                    continue
                if key is not None:
                    keys.add(key)
                seqs = log.append_sync(records, key)
                assert seqs == list(range(len(expected) + 1, len(expected) + 1 + len(records)))
                expected += records
            got = list(log.read())
            assert [r.seq for r in got] == list(range(1, len(expected) + 1))
            assert [Record(r.type, r.version, r.payload) for r in got] == expected
        finally:
            log.close()

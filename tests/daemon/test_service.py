"""The service: validate -> append (durable) -> apply -> notify, in that order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.errors import Broken, NotWritten, Refused
from volee_desktop.daemon.service import Service, replay
from volee_desktop.store.errors import StoreError
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

from .helpers import registered


def make() -> tuple[Service, MemoryLog]:
    log = MemoryLog()
    return Service(log, Registry(), Record), log


async def test_given_a_valid_event_when_committed_then_durable_applied_and_notified() -> None:
    service, log = make()
    seen: list[tuple[int, str, int]] = []
    # The listener checks the order: by the time it hears of an event, the log has it
    # and the visible registry shows it.
    service.listen(lambda seq, e: seen.append((seq, e.TYPE, log.last_seq())))
    event = registered()
    seqs = await service.commit([event])
    assert seqs == [1]
    assert seen == [(1, "agent-registered", 1)]
    assert event.agent in service.registry.agents
    assert service.registry.seq == 1


async def test_given_an_invalid_event_when_committed_then_refused_and_nothing_written() -> None:
    service, log = make()
    with pytest.raises(Refused, match="unknown agent"):
        await service.commit([ev.StateChanged(at=1, agent="ag_nobody", state=AgentState.WORKING)])
    assert log.last_seq() == 0
    assert service.registry.agents == {}


async def test_a_batch_is_all_or_nothing() -> None:
    service, log = make()
    first = registered("a")
    with pytest.raises(Refused, match="already used"):
        await service.commit([first, first])
    assert log.last_seq() == 0
    assert service.current().agents == {}
    await service.commit([first])
    assert log.last_seq() == 1


async def test_concurrent_requests_validate_against_each_other_and_share_commits() -> None:
    service, _log = make()
    a = registered("a")
    # Two concurrent requests: the second depends on the first, which is not durable yet.
    working = ev.StateChanged(at=2, agent=a.agent, state=AgentState.WORKING)
    results = await asyncio.gather(service.commit([a]), service.commit([working]))
    assert list(results) == [[1], [2]]
    assert service.registry.agents[a.agent].state is AgentState.WORKING


class GateLog(MemoryLog):
    """A log whose appends become durable only when the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    def append(self, records: Sequence[Record], key: str | None = None) -> Awaitable[list[int]]:
        written = super().append(records, key)

        async def later() -> list[int]:
            await self.gate.wait()
            return await written

        return asyncio.ensure_future(later())


async def test_the_visible_registry_and_listeners_change_only_once_durable() -> None:
    log = GateLog()
    service = Service(log, Registry(), Record)
    heard: list[int] = []
    service.listen(lambda seq, _e: heard.append(seq))
    a = registered("a")
    b = registered("b")
    first = asyncio.ensure_future(service.commit([a]))
    second = asyncio.ensure_future(service.commit([b]))
    for _ in range(5):
        await asyncio.sleep(0)
    assert a.agent in service.current().agents  # accepted: later requests validate against it
    assert a.agent not in service.registry.agents  # not visible before it is durable
    assert heard == []
    log.gate.set()
    assert await first == [1]
    assert await second == [2]
    assert heard == [1, 2]
    assert {a.agent, b.agent} <= service.registry.agents.keys()


async def test_an_idempotency_key_commits_once() -> None:
    service, log = make()
    a = registered("a")
    await service.commit([a], key="k1")
    assert (
        await service.commit([ev.ActivityRecorded(at=2, agent=a.agent, activity="x")], key="k1")
        == []
    )
    assert log.last_seq() == 1


async def test_a_write_that_failed_cleanly_can_be_retried_once_the_cause_is_gone() -> None:
    service, log = make()
    log.break_writes("disk full")
    a = registered("a")
    with pytest.raises(NotWritten, match="disk full"):
        await service.commit([a])
    assert a.agent not in service.current().agents
    log.mend_writes()
    await service.commit([a])
    assert a.agent in service.registry.agents


async def test_replay_rebuilds_the_same_registry() -> None:
    service, log = make()
    a = registered("a")
    await service.commit([a])
    await service.commit([ev.StateChanged(at=3, agent=a.agent, state=AgentState.WORKING)])
    rebuilt = replay(Registry(), log.read(0))
    assert rebuilt == service.registry


async def test_events_after_reads_from_the_log() -> None:
    service, _log = make()
    a = registered("a")
    await service.commit([a])
    await service.commit([ev.ActivityRecorded(at=2, agent=a.agent, activity="Bash: ls")])
    assert [(s, e.TYPE) for s, e in service.events_after(1)] == [(2, "activity-recorded")]


async def test_a_repeated_key_answers_only_once_the_first_commit_is_durable() -> None:
    log = GateLog()
    service = Service(log, Registry(), Record)
    a = registered("a")
    first = asyncio.ensure_future(service.commit([a], key="k1"))
    for _ in range(5):
        await asyncio.sleep(0)
    again = asyncio.ensure_future(service.commit([a], key="k1"))
    for _ in range(5):
        await asyncio.sleep(0)
    # Answering now would tell the caller its hook is stored while nothing is on disk yet.
    assert not again.done()
    log.gate.set()
    assert await first == [1]
    assert await again == []
    assert a.agent in service.registry.agents


class ClosedLog(MemoryLog):
    """A log that refuses a write at once, as ``EventLog.append`` does once closed or broken."""

    def append(self, records: Sequence[Record], key: str | None = None) -> Awaitable[list[int]]:
        raise StoreError("the event log is closed; nothing was written")


async def test_a_log_that_refuses_a_write_at_once_breaks_the_service_without_a_phantom() -> None:
    service = Service(ClosedLog(), Registry(), Record)
    a = registered("a")
    with pytest.raises(Broken, match="restart the daemon"):
        await service.commit([a], key="k1")
    # Nothing was written: later decisions must not see the event as accepted.
    assert a.agent not in service.current().agents
    with pytest.raises(Broken):
        await service.commit([registered("b")])

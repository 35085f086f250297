"""The discovery cadence on a fake clock: intervals, resets, shared refreshes, failures."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.fakes.clock import FakeClock
from tests.fakes.lister import FakeLister
from tests.polling import until
from volee_desktop.config import DiscoveryConfig
from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT, new_id
from volee_desktop.core.model import Harness
from volee_desktop.core.reconcile import ListedSession, Listing
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import Coarse
from volee_desktop.daemon.context import Clients
from volee_desktop.daemon.discovery.listers import ListingFailed, Unavailable
from volee_desktop.daemon.discovery.loop import Discovery
from volee_desktop.daemon.service import Service
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

CONFIG = DiscoveryConfig(
    discovery_interval=2.0, max_discovery_interval=10.0, idle_discovery_interval=30.0
)


def session(n: int) -> ListedSession:
    return ListedSession(
        harness=Harness.CLAUDE,
        session=f"00000000-0000-4000-8000-{n:012d}",
        pid=1000 + n,
        cwd="/tmp",
        status=Coarse.IDLE,
        name=f"s{n}",
    )


def listing(*ns: int) -> Listing:
    return Listing(sessions=tuple(session(n) for n in ns), complete=frozenset({Harness.CLAUDE}))


@dataclass
class Rig:
    clock: FakeClock
    lister: FakeLister
    discovery: Discovery
    service: Service
    clients: Clients
    seen: int = 0
    first_wait: float = 0.0

    async def waits(self) -> float:
        """The wait the loop chose after its next listing (one not asked about yet)."""
        await until(
            lambda: self.clock.sleeping(self.seen), what="the loop to wait", timeout=5, every=0
        )
        (left,) = self.clock.sleeping(self.seen)
        self.seen = self.clock.serial
        return left

    async def next_listing(self, after: float) -> None:
        """Advance by ``after`` seconds and wait for the listing that follows."""
        count = len(self.lister.calls)
        self.clock.advance(after)
        await until(
            lambda: len(self.lister.calls) > count,
            what=f"a listing {after} s later",
            timeout=5,
            every=0,
        )

    async def no_listing_within(self, seconds: float) -> None:
        count = len(self.lister.calls)
        self.clock.advance(seconds)
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(self.lister.calls) == count


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    clock = FakeClock()
    lister = FakeLister(clock, [listing()])
    service = Service(MemoryLog(), Registry(), Record)
    clients = Clients()
    discovery = Discovery(service, CONFIG, lister, clock, clients)
    task = asyncio.ensure_future(discovery.run())
    rig = Rig(clock, lister, discovery, service, clients)
    rig.first_wait = await rig.waits()  # after the listing at start
    yield rig
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_lists_at_start_then_every_thirty_seconds_with_no_interactive_client(
    rig: Rig,
) -> None:
    assert len(rig.lister.calls) == 1
    assert rig.first_wait == 30.0
    await rig.no_listing_within(29.9)
    await rig.next_listing(0.1)
    assert rig.lister.calls[1] - rig.lister.calls[0] == pytest.approx(30.0)


async def test_an_interactive_subscription_lists_at_once_then_backs_off_to_ten(rig: Rig) -> None:
    rig.clients.joined()
    await until(
        lambda: len(rig.lister.calls) == 2,
        what="a listing for the new subscription",
        timeout=5,
        every=0,
    )
    assert rig.lister.calls[1] == rig.lister.calls[0]  # at once: no time passed

    waits = [await rig.waits()]
    for _ in range(4):
        await rig.next_listing(waits[-1])
        waits.append(await rig.waits())
    assert waits == [2.0, 4.0, 8.0, 10.0, 10.0]


async def test_a_listing_that_changed_something_brings_the_two_second_wait_back(
    rig: Rig,
) -> None:
    rig.clients.joined()
    await rig.waits()
    await rig.next_listing(2.0)
    assert await rig.waits() == 4.0

    rig.lister.script[:] = [listing(1), listing(1)]  # a new session: reconciled events
    await rig.next_listing(4.0)

    assert await rig.waits() == 2.0
    assert len(rig.service.registry.agents) == 1


async def test_no_interactive_client_left_means_the_idle_wait(rig: Rig) -> None:
    rig.clients.joined()
    await rig.waits()
    rig.clients.left()

    await rig.next_listing(2.0)

    assert await rig.waits() == 30.0


async def test_refresh_lists_at_once_and_resets_the_wait(rig: Rig) -> None:
    rig.clients.joined()
    await rig.waits()
    for wait in (2.0, 4.0):
        await rig.next_listing(wait)
    assert await rig.waits() == 8.0

    answer = await rig.discovery.refresh()

    assert answer == {"listed": True, "events": 0}
    assert rig.lister.calls[-1] == rig.lister.calls[-2]  # no time passed
    assert await rig.waits() == 2.0


async def test_refreshes_wait_for_a_listing_that_started_after_them_and_share_it(
    rig: Rig,
) -> None:
    rig.lister.gate = asyncio.Event()
    first = asyncio.ensure_future(rig.discovery.refresh())
    await until(
        lambda: len(rig.lister.calls) == 2,
        what="the refresh's listing to start",
        timeout=5,
        every=0,
    )

    # Asked while that listing runs: it started before them, so they wait for the next one.
    second = asyncio.ensure_future(rig.discovery.refresh())
    third = asyncio.ensure_future(rig.discovery.refresh())
    rig.lister.script[:] = [listing(2), listing(2)]
    rig.lister.gate.set()
    assert await first == {"listed": True, "events": 0}
    answers = await asyncio.gather(second, third)

    assert answers == [{"listed": True, "events": 3}] * 2  # one shared listing, one agent
    assert len(rig.lister.calls) == 3


async def test_hook_events_never_shorten_the_wait(rig: Rig) -> None:
    agent = new_id(AGENT, 1_800_000_000_000, b"\x01" * 10)

    await rig.service.commit(
        [ev.AgentRegistered(at=rig.clock.t, agent=agent, name="mine", harness=Harness.CLAUDE)]
    )

    await rig.no_listing_within(29.0)
    assert rig.clock.sleeping() == [pytest.approx(1.0)]


async def test_a_failing_listing_changes_nothing_and_is_logged_once(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.clients.joined()
    await rig.waits()
    caplog.set_level(logging.INFO, logger="volee_desktop.daemon.discovery.loop")
    boom = ListingFailed("claude agents timed out")
    rig.lister.script[:] = [boom, boom, boom, listing()]

    waits = []
    for wait in (2.0, 4.0, 8.0):
        await rig.next_listing(wait)
        waits.append(await rig.waits())
    failing = rig.discovery.status()
    await rig.next_listing(10.0)
    await rig.waits()

    assert waits == [4.0, 8.0, 10.0]
    assert (failing["state"], failing["reason"]) == ("failing", "claude agents timed out")
    assert rig.discovery.status()["state"] == "on"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("listing failed" in m for m in messages) == 1
    assert sum("works again" in m for m in messages) == 1
    assert rig.service.registry.seq == 0


async def test_claude_too_old_turns_discovery_off_and_refresh_says_why() -> None:
    clock = FakeClock()
    reason = "Claude Code at /x/claude cannot list its sessions (unknown option '--json')"
    lister = FakeLister(clock, [Unavailable(reason)])
    service = Service(MemoryLog(), Registry(), Record)
    discovery = Discovery(service, CONFIG, lister, clock, Clients())

    await asyncio.wait_for(discovery.run(), 5)  # returns: discovery is off

    assert await discovery.refresh() == {"listed": False, "reason": reason}
    assert discovery.status()["state"] == "off"
    assert discovery.status()["reason"] == reason
    assert len(lister.calls) == 1


async def test_claude_missing_means_no_loop_and_an_immediate_answer() -> None:
    service = Service(MemoryLog(), Registry(), Record)
    discovery = Discovery(
        service, CONFIG, None, FakeClock(), Clients(), off="Claude Code not found"
    )

    assert await discovery.refresh() == {"listed": False, "reason": "Claude Code not found"}


async def test_the_daemon_lists_with_the_lister_and_waits_on_the_clock_it_is_built_with() -> None:
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.paths import dirs

    clock = FakeClock(start=time.time())
    lister = FakeLister(clock, [listing(1)])
    daemon = await Daemon.start(dirs(), clock=clock, lister=lister)
    try:
        await until(
            lambda: daemon.service.registry.agents,
            what="the first listing's agent",
            timeout=5,
            every=0,
        )
        assert lister.calls == [clock.now()]  # the daemon's listing, on its clock
        (agent,) = daemon.service.registry.agents.values()
        assert agent.session == session(1).session
        # Nobody watches: the next listing waits the idle interval of the config, 30 s.
        await until(
            lambda: 30.0 in clock.sleeping(),
            what="the idle wait on the fake clock",
            timeout=5,
            every=0,
        )
        clock.advance(29.0)
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(lister.calls) == 1
        clock.advance(1.0)
        await until(
            lambda: len(lister.calls) == 2, what="the listing 30 s later", timeout=5, every=0
        )
        status = daemon.discovery.status()
        assert (status["state"], status["listings"]) == ("on", 2)
    finally:
        await daemon.close()

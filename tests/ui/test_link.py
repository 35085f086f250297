"""IpcDaemonLink over the real socket: snapshot, events in order, errors, reconnect with since."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_link import FakeDaemonLink, World
from tests.fakes.fake_daemon import FakeDaemon
from volee_desktop.app.errors import LinkError
from volee_desktop.app.link import IpcDaemonLink
from volee_desktop.app.live import LiveRegistry
from volee_desktop.core import events as ev
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState


class Listener:
    """Records what the link delivers; wakes waiters on each delivery."""

    def __init__(self) -> None:
        self.live = LiveRegistry()
        self.connection: list[bool] = []
        self.changed = asyncio.Event()

    def on_snapshot(self, registry: Registry, seq: int) -> None:
        self.live.on_snapshot(registry, seq)
        self.changed.set()

    def on_event(self, seq: int, event: ev.Event) -> None:
        self.live.on_event(seq, event)
        self.changed.set()

    def on_notice(self, notice: dict[str, Any]) -> None:
        pass

    def on_machines(self, push: dict[str, Any]) -> None:
        self.live.on_machines(push)
        self.changed.set()

    def on_connection(self, connected: bool, detail: str) -> None:
        self.connection.append(connected)
        self.changed.set()

    async def until(self, predicate: Any, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


class Scenario:
    """Builds events with World against a throwaway fake link, to push to the real daemon."""

    def __init__(self) -> None:
        self.scratch = FakeDaemonLink()
        self.world = World(self.scratch)

    def take(self) -> list[ev.Event]:
        events = [e for _, e in self.scratch.log]
        self.scratch.log.clear()
        return events


@pytest.fixture
def socket_path(volee_home: Path) -> Path:
    return volee_home / "run" / "volee.sock"


async def test_snapshot_then_live_events(socket_path: Path) -> None:
    daemon = FakeDaemon(socket_path)
    scenario = Scenario()
    a = scenario.world.agent("before", AgentState.WORKING)
    await daemon.start()
    await daemon.push(*scenario.take())
    link = await IpcDaemonLink.connect(socket_path)
    listener = Listener()
    try:
        await link.subscribe(listener)
        assert listener.live.registry.agents[a].name == "before"
        assert listener.live.registry.seq == 1
        b = scenario.world.agent("after", AgentState.NEEDS_INPUT, "permission for Bash")
        scenario.world.state(a, AgentState.DONE)
        await daemon.push(*scenario.take())
        await listener.until(lambda: listener.live.registry.seq == 3)
        assert listener.live.registry.agents[b].detail == "permission for Bash"
        assert listener.live.registry.agents[a].state is AgentState.DONE
        assert [x.id for x in listener.live.registry.by_urgency()] == [b, a]
    finally:
        await link.close()
        await daemon.close()


@pytest.mark.parametrize(("part", "inline"), [(64, False), (256 * 1024, False), (0, True)])
async def test_snapshot_in_parts_or_inline(socket_path: Path, part: int, inline: bool) -> None:
    scenario = Scenario()
    ids = [scenario.world.agent(f"agent-{i}", AgentState.WORKING) for i in range(30)]
    daemon = FakeDaemon(socket_path, snapshot_part=part or 1, inline_snapshot=inline)
    await daemon.start()
    await daemon.push(*scenario.take())
    link = await IpcDaemonLink.connect(socket_path)
    listener = Listener()
    try:
        await link.subscribe(listener)
        assert set(listener.live.registry.agents) == set(ids)
        assert listener.live.registry.seq == 30
        late = scenario.world.agent("late", AgentState.NEEDS_INPUT)
        await daemon.push(*scenario.take())
        await listener.until(lambda: late in listener.live.registry.agents)
    finally:
        await link.close()
        await daemon.close()


async def test_a_daemon_error_is_a_link_error(socket_path: Path) -> None:
    daemon = FakeDaemon(socket_path)
    await daemon.start()
    link = await IpcDaemonLink.connect(socket_path)
    try:
        with pytest.raises(LinkError, match="unknown method"):
            await link.call("no.such.method", {})
        assert await link.call("agents.stop", {"agent": "x"}) == {}
        assert daemon.calls == [("agents.stop", {"agent": "x"})]
    finally:
        await link.close()
        await daemon.close()


async def test_reconnects_and_resumes_after_the_last_seq_without_a_gap(socket_path: Path) -> None:
    daemon = FakeDaemon(socket_path)
    scenario = Scenario()
    await daemon.start()
    link = await IpcDaemonLink.connect(socket_path)
    listener = Listener()
    try:
        await link.subscribe(listener)
        a = scenario.world.agent("one", AgentState.WORKING)
        await daemon.push(*scenario.take())
        await listener.until(lambda: listener.live.registry.seq == 1)
        # The daemon goes away; events happen while the app is not connected.
        await daemon.close()
        await listener.until(lambda: listener.connection[-1:] == [False])
        scenario.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
        scenario.world.agent("two", AgentState.WORKING)
        for event in scenario.take():
            daemon.registry.apply(event)
            daemon.registry.seq += 1
            daemon.log.append((daemon.registry.seq, event))
        await daemon.start()  # same log, new server: the link reconnects by itself
        await listener.until(lambda: listener.live.registry.seq == 3)
        assert listener.connection[-1] is True
        assert listener.live.registry.agents[a].state is AgentState.NEEDS_INPUT
        assert len(listener.live.registry.agents) == 2
        assert listener.live.synced
    finally:
        await link.close()
        await daemon.close()


async def test_a_gap_asks_for_a_new_snapshot() -> None:
    live = LiveRegistry()
    asked: list[int] = []
    live.on_gap = lambda: asked.append(1)
    live.on_snapshot(Registry(), 5)
    live.on_event(
        7, ev.StateChanged(at=1.0, agent="ag_x", state=AgentState.WORKING)
    )  # 6 is missing
    assert asked == [1]
    assert live.registry.seq == 5

"""The daemon's IPC methods against wrong-typed parameters and dropped subscribers."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tests.fakes.clock import FakeClock
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.daemon import main as daemon_main
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.serving.subscriptions import SubscribeParams
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import ErrorCode, IpcError, ServerStartError
from volee_desktop.ipc.server import Connection, Reply
from volee_desktop.paths import dirs
from volee_desktop.store.codec import decode_registry
from volee_desktop.store.errors import StoreError

from .helpers import registered

SAMPLES = Path(__file__).resolve().parents[1] / "harness" / "samples"


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await d.close()


async def call_error(d: Daemon, method: str, params: dict[str, Any]) -> IpcError:
    client = await AsyncClient.connect(d.dirs.socket)
    try:
        with pytest.raises(IpcError) as caught:
            await client.call(method, params)
        return caught.value
    finally:
        await client.close()


@pytest.mark.parametrize("value", ["yes", "false", 1, [True]])
async def test_agents_list_refuses_an_all_that_is_not_a_bool(daemon: Daemon, value: Any) -> None:
    error = await call_error(daemon, "agents.list", {"all": value})
    assert error.code == ErrorCode.BAD_REQUEST
    assert "'all'" in error.message
    assert "true or false" in error.message


@pytest.mark.parametrize("value", [True, False, 1.5, "3"])
async def test_subscribe_refuses_a_since_that_is_not_a_seq(daemon: Daemon, value: Any) -> None:
    error = await call_error(daemon, "subscribe", {"since": value})
    assert error.code == ErrorCode.BAD_REQUEST
    assert "'since'" in error.message


async def test_subscribe_refuses_an_interactive_that_is_not_a_bool(daemon: Daemon) -> None:
    error = await call_error(daemon, "subscribe", {"since": None, "interactive": "false"})
    assert error.code == ErrorCode.BAD_REQUEST
    assert "'interactive'" in error.message


class ClosedConnection:
    """A connection that closed before the subscribe reply could be written."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.closed.set()

    def close(self) -> None:
        self.closed.set()


async def test_a_subscriber_gone_before_its_reply_leaves_no_listener(daemon: Daemon) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    before = daemon.service.listener_count
    conn = cast(Connection, ClosedConnection())
    reply = await daemon.subscriptions.subscribe(conn, SubscribeParams(interactive=False))
    assert isinstance(reply, Reply)
    # The server never runs ``after`` when the reply cannot be written: nothing else cleans up.
    await daemon.service.commit([ev.ActivityRecorded(at=2, agent=a.agent, activity="x")])
    assert daemon.service.listener_count == before


@pytest.mark.parametrize("at", [float("nan"), float("inf"), True])
async def test_a_hook_with_an_unusable_received_at_keeps_the_log_readable(at: Any) -> None:
    daemon = await Daemon.start(dirs())
    a = registered("a")
    await daemon.service.commit([a])
    payload = json.loads((SAMPLES / "claude-hook-UserPromptSubmit.json").read_text())
    params = {"event": "UserPromptSubmit", "payload": json.dumps(payload), "agent": a.agent}
    reply = await daemon.intake.hook({**params, "received_at": at})
    assert reply["accepted"] is True
    since = daemon.service.registry.agents[a.agent].state_since
    assert math.isfinite(since)
    assert since > 1_000_000  # the daemon's clock, not True == 1.0
    await daemon.close()
    again = await Daemon.start(dirs())  # a NaN stored as null made this raise CorruptLog
    try:
        assert again.service.registry.agents[a.agent].state_since == since
    finally:
        await again.close()


@pytest.mark.parametrize("lines", ["x", True, 0, -3, 2.5])
async def test_agents_screen_refuses_lines_that_are_not_a_count(daemon: Daemon, lines: Any) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    error = await call_error(daemon, "agents.screen", {"agent": a.agent, "lines": lines})
    assert error.code == ErrorCode.BAD_REQUEST
    assert "'lines'" in error.message


async def test_a_start_that_cannot_serve_leaves_no_log_writer_running() -> None:
    folders = dirs()
    folders.socket.parent.mkdir(parents=True, exist_ok=True)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        squatter.bind(str(folders.socket))
        squatter.listen()
        with pytest.raises(ServerStartError):
            await Daemon.start(folders)
    finally:
        squatter.close()
    writers = [t for t in threading.enumerate() if t.name == "volee-store-writer"]
    assert writers == []
    again = await Daemon.start(folders)  # the lock was let go as well
    await again.close()


async def test_a_timeline_too_long_for_one_reply_gives_the_newest_after_a_marker(
    daemon: Daemon,
) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    text = "Bash: npm test --workspace packages/something-long"
    for i in range(0, 6000, 500):
        await daemon.service.commit(
            [
                ev.ActivityRecorded(at=2 + i + j, agent=a.agent, activity=f"{text} {i + j}")
                for j in range(500)
            ]
        )
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        items = await client.call("agents.timeline", {"agent": a.agent})
    finally:
        await client.close()
    assert items[0]["type"] == "timeline-truncated"
    left_out = int(items[0]["text"].split()[0])
    assert left_out > 0
    assert len(items) - 1 + left_out == 6001
    assert items[-1]["text"] == f"{text} 5999"
    assert items[1]["seq"] == items[0]["seq"] + 1


async def test_a_subscription_that_cannot_replay_drops_its_client(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    await daemon.service.commit([registered("a")])

    def unreadable(_seq: int) -> Iterator[tuple[int, ev.Event]]:
        raise StoreError("could not read the event log")

    monkeypatch.setattr(daemon.service, "events_after", unreadable)
    reader, writer = await asyncio.open_unix_connection(str(daemon.dirs.socket))
    try:
        request = {"v": 1, "id": 1, "method": "subscribe", "params": {"since": 0}}
        writer.write(json.dumps(request).encode() + b"\n")
        reply = json.loads(await asyncio.wait_for(reader.readline(), 5))
        assert reply["result"] == {"seq": 0, "replay": True}
        # Without the events it asked for, the client must learn it has to reconnect.
        assert await asyncio.wait_for(reader.read(), 5) == b""
    finally:
        writer.close()


async def test_a_second_subscribe_on_one_connection_replaces_the_first_feed(
    daemon: Daemon,
) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        seqs: list[int] = []
        got = asyncio.Event()

        def on_event(payload: dict[str, Any]) -> None:
            seqs.append(payload["seq"])
            got.set()

        client.on_push("event", on_event)
        before = daemon.service.listener_count
        await client.call("subscribe", {"since": 1, "interactive": False})
        # The app resyncs this way, on the same connection.
        await client.call("subscribe", {"since": 1, "interactive": False})
        await until(  # one feed, not two
            lambda: daemon.service.listener_count == before + 1,
            what="the first feed to stop listening",
            timeout=5,
        )
        await daemon.service.commit([ev.ActivityRecorded(at=2, agent=a.agent, activity="x")])
        await asyncio.wait_for(got.wait(), 5)
        assert seqs[0] == 2
    finally:
        await client.close()


async def test_a_late_hook_payload_does_not_take_the_agent_back_to_an_older_state(
    daemon: Daemon,
) -> None:
    a = registered("a")
    await daemon.service.commit([a])

    async def hook(name: str, at: float) -> None:
        payload = json.loads((SAMPLES / f"claude-hook-{name}.json").read_text())
        params = {"event": name, "payload": json.dumps(payload), "agent": a.agent}
        reply = await daemon.intake.hook({**params, "received_at": at})
        assert reply["accepted"] is True

    await hook("UserPromptSubmit", 100.0)
    await hook("Stop", 200.0)
    # Received before the Stop, handed over after it (spooled, ingested at the next start).
    await hook("PostToolUse", 150.0)
    agent = daemon.service.registry.agents[a.agent]
    assert agent.state is AgentState.DONE
    assert agent.state_since == 200.0


async def test_a_payload_spooled_while_the_daemon_runs_is_ingested_without_a_restart() -> None:
    clock = FakeClock(start=time.time())
    d = await Daemon.start(dirs(), clock=clock)
    try:
        a = registered("a")
        await d.service.commit([a])
        payload = json.loads((SAMPLES / "claude-hook-Stop.json").read_text())
        params = {
            "event": "Stop",
            "payload": json.dumps(payload),
            "agent": a.agent,
            "key": "00001-timed-out",
            "received_at": 10.0,
        }
        # What the hook shim does when the daemon is too slow to answer.
        d.dirs.spool.mkdir(parents=True, exist_ok=True)
        (d.dirs.spool / "00001-timed-out.json").write_text(json.dumps(params))
        await until(clock.sleeping, what="the spool's loop to wait on the clock", timeout=5)
        clock.advance(daemon_main.SPOOL_EVERY - 1)
        for _ in range(20):
            await asyncio.sleep(0)
        assert list(d.dirs.spool.glob("*.json")), "ingested before its time"
        clock.advance(1)
        # The file goes once its events are durable, so a moment after the state changes.
        await until(
            lambda: (
                d.service.registry.agents[a.agent].state is AgentState.DONE
                and not list(d.dirs.spool.glob("*.json"))
            ),
            what="the spool to be ingested",
            timeout=5,
        )
        assert d.service.registry.agents[a.agent].state is AgentState.DONE
    finally:
        await d.close()


async def test_a_snapshot_of_four_byte_characters_still_fits_the_push_limit(
    daemon: Daemon,
) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    wide = "\U0001f600" * 600_000  # 4 bytes each in UTF-8: a part of 256 Ki exceeds 1 MiB
    await daemon.service.commit([ev.ActivityRecorded(at=2, agent=a.agent, activity=wide)])
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        parts: list[str] = []
        client.on_push("snapshot", lambda p: parts.append(p["data"]))
        result = await client.call("subscribe", {"since": None, "interactive": False})
        await until(lambda: len(parts) >= result["snapshot_parts"], what="the snapshot", timeout=5)
        assert decode_registry("".join(parts).encode()).agents[a.agent].activity == wide
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"harness": "generic", "argv": "sleep 5"}, "argv"),
        ({"harness": "generic", "argv": ["sleep", 5]}, "argv"),
        ({"prompt": "x", "env": {"A": 1}}, "env"),
        ({"prompt": "x", "name": 3}, "name"),
        ({"prompt": "x", "worktree": "yes"}, "worktree"),
    ],
)
def test_spawn_params_of_the_wrong_type_are_a_bad_request(
    params: dict[str, object], word: str
) -> None:
    from volee_desktop.daemon.params import spawn_request
    from volee_desktop.ipc.protocol import ErrorCode, IpcError

    with pytest.raises(IpcError) as info:
        spawn_request(params)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert word in str(info.value)

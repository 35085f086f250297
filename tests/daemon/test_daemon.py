"""A real daemon in-process: start-up, subscriptions, hook intake, spool, lock, corruption."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.compaction import compact
from volee_desktop.daemon.errors import AlreadyRunning
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import ErrorCode, IpcError
from volee_desktop.paths import dirs
from volee_desktop.store.codec import decode_registry, event_from_dict
from volee_desktop.store.errors import CorruptLog

from .helpers import registered

SAMPLES = Path(__file__).resolve().parents[1] / "harness" / "samples"


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await d.close()


async def client_of(d: Daemon) -> AsyncClient:
    return await AsyncClient.connect(d.dirs.socket)


def hook_params(name: str, payload: dict[str, Any], agent: str | None, key: str) -> dict[str, Any]:
    return {
        "event": name,
        "payload": json.dumps(payload),
        "agent": agent,
        "harness": "claude",
        "key": key,
        "received_at": 10.0,
    }


async def test_subscribe_gives_a_snapshot_then_every_later_event(daemon: Daemon) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    client = await client_of(daemon)
    try:
        parts: list[str] = []
        events: list[tuple[int, str]] = []
        got_two = asyncio.Event()
        client.on_push("snapshot", lambda p: parts.append(p["data"]))

        def on_event(p: dict[str, Any]) -> None:
            events.append((p["seq"], p["event"]["type"]))
            if len(events) == 2:
                got_two.set()

        client.on_push("event", on_event)
        result = await client.call("subscribe", {"since": None})
        assert result["seq"] == 1
        await daemon.service.commit(
            [ev.StateChanged(at=2, agent=a.agent, state=AgentState.WORKING)]
        )
        await daemon.service.commit([ev.ActivityRecorded(at=3, agent=a.agent, activity="x")])
        await asyncio.wait_for(got_two.wait(), 5)
        assert len(parts) == result["snapshot_parts"]
        snapshot = decode_registry("".join(parts).encode())
        assert a.agent in snapshot.agents
        assert events == [(2, "state-changed"), (3, "activity-recorded")]
    finally:
        await client.close()


async def test_a_client_that_reconnects_catches_up_without_a_gap(daemon: Daemon) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    for i in range(5):
        await daemon.service.commit(
            [ev.ActivityRecorded(at=2 + i, agent=a.agent, activity=f"s{i}")]
        )
    client = await client_of(daemon)
    try:
        seqs: list[int] = []
        done = asyncio.Event()

        def on_event(p: dict[str, Any]) -> None:
            seqs.append(p["seq"])
            event_from_dict(p["event"])  # decodes back to a domain event
            if p["seq"] == 8:
                done.set()

        client.on_push("event", on_event)
        result = await client.call("subscribe", {"since": 2})
        assert result == {"seq": 2, "replay": True}
        await daemon.service.commit([ev.ActivityRecorded(at=9, agent=a.agent, activity="live")])
        await daemon.service.commit([ev.ActivityRecorded(at=9, agent=a.agent, activity="live2")])
        await asyncio.wait_for(done.wait(), 5)
        assert seqs == [3, 4, 5, 6, 7, 8]
    finally:
        await client.close()


async def test_a_feed_resumed_from_below_a_compacted_base_is_refused_naming_the_base() -> None:
    home = dirs()
    d = await Daemon.start(home)
    a = registered("a")
    await d.service.commit([a])
    for i in range(4):
        await d.service.commit([ev.ActivityRecorded(at=2 + i, agent=a.agent, activity=f"s{i}")])
    registry = d.service.registry
    await d.close()
    compact(home.events_db, registry, now=10 * 365 * 86_400.0)
    d = await Daemon.start(home)
    client = await client_of(d)
    try:
        # Below the base the log may have holes: refused (the clients then take a snapshot),
        # never a replay with holes nor a snapshot the caller did not ask for.
        with pytest.raises(IpcError) as refused:
            await client.call("subscribe", {"since": 2})
        assert refused.value.code == ErrorCode.CONFLICT
        assert "below the event log's base (seq 5)" in str(refused.value)
        result = await client.call("subscribe", {"since": 5})  # from the base on: a replay
        assert result == {"seq": 5, "replay": True}
    finally:
        await client.close()
        await d.close()


async def test_a_hook_for_a_known_agent_becomes_events(daemon: Daemon) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    payload = json.loads((SAMPLES / "claude-hook-UserPromptSubmit.json").read_text())
    reply = await daemon.intake.hook(hook_params("UserPromptSubmit", payload, a.agent, "k1"))
    assert reply["accepted"] is True
    agent = daemon.service.registry.agents[a.agent]
    assert agent.state is AgentState.WORKING
    assert agent.session == payload["session_id"]


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"event": "Stop", "payload": "{not json"}, "not JSON"),
        ({"event": "Stop", "payload": "[1, 2]"}, "not a JSON object"),
        ({"event": "", "payload": "{}"}, "no hook event name"),
        ({"event": "Stop", "payload": json.dumps({"session_id": "nobody"})}, "no agent owns"),
        (
            {"event": "Stop", "payload": "{}", "agent": "ag_01HF7YAT083N3S9GC2GD1P476R"},
            "unknown agent",
        ),
    ],
)
async def test_bad_hook_payloads_are_kept_with_the_reason(
    daemon: Daemon, params: dict[str, Any], reason: str
) -> None:
    reply = await daemon.intake.hook({**params, "key": "bad1"})
    assert reply["accepted"] is False
    assert reason in reply["reason"]
    kept = json.loads((daemon.dirs.rejected / "bad1.json").read_text())
    assert reason in kept["reason"]
    assert kept["params"]["payload"] == params["payload"]  # nothing lost


async def test_a_payload_missing_its_session_id_is_kept(daemon: Daemon) -> None:
    a = registered("a")
    await daemon.service.commit([a])
    reply = await daemon.intake.hook(hook_params("Stop", {"cwd": "/x"}, a.agent, "k9"))
    assert reply["accepted"] is False
    assert "session_id" in reply["reason"]
    assert (daemon.dirs.rejected / "k9.json").exists()


async def test_the_spool_is_ingested_at_start_in_order_exactly_once(volee_home: Path) -> None:
    folders = dirs()
    d = await Daemon.start(folders)
    a = registered("a")
    await d.service.commit([a])
    payload = json.loads((SAMPLES / "claude-hook-UserPromptSubmit.json").read_text())
    # This payload was answered before the daemon died (its key is in the log) and spooled too.
    await d.intake.hook(hook_params("UserPromptSubmit", payload, a.agent, "00001-answered"))
    await d.close()
    folders.spool.mkdir(parents=True, exist_ok=True)
    stop = {**payload, "hook_event_name": "Stop"}
    for key, name, body in (
        ("00001-answered", "UserPromptSubmit", payload),
        ("00002-stop", "Stop", stop),
    ):
        (folders.spool / f"{key}.json").write_text(
            json.dumps(hook_params(name, body, a.agent, key))
        )
    (folders.spool / "00003-garbage.json").write_text("{torn")
    d = await Daemon.start(folders)
    try:
        agent = d.service.registry.agents[a.agent]
        assert agent.state is AgentState.DONE
        types = [e.TYPE for _, e in d.service.events_after(0)]
        assert types.count("state-changed") == 2  # working once, done once: no double ingest
        assert list(folders.spool.glob("*.json")) == []
        assert (folders.rejected / "00003-garbage.json").exists()
        assert d.facts.spooled == 2
    finally:
        await d.close()
    d = await Daemon.start(folders)  # a second start ingests nothing again
    try:
        assert d.facts.spooled == 0
    finally:
        await d.close()


async def test_a_second_daemon_on_the_same_home_says_which_pid_holds_it(daemon: Daemon) -> None:
    import os

    with pytest.raises(AlreadyRunning, match=f"pid {os.getpid()}"):
        await Daemon.start(dirs())


async def test_start_up_loads_the_snapshot_and_replays_only_the_tail(volee_home: Path) -> None:
    folders = dirs()
    d = await Daemon.start(folders)
    a = registered("a")
    await d.service.commit([a])
    await d.close()  # saves a snapshot at seq 1
    d = await Daemon.start(folders)
    try:
        await d.service.commit([ev.ActivityRecorded(at=3, agent=a.agent, activity="x")])
    finally:
        await d.close()
    d = await Daemon.start(folders)
    try:
        assert d.facts.snapshot_seq == 2
        assert d.facts.replayed == 0
        assert d.service.registry.agents[a.agent].activity == "x"
    finally:
        await d.close()


async def test_a_corrupt_record_refuses_start_naming_file_position_backup_and_repair(
    volee_home: Path,
) -> None:
    folders = dirs()
    d = await Daemon.start(folders)
    a = registered("a")
    await d.service.commit([a])
    await d.service.commit([ev.ActivityRecorded(at=3, agent=a.agent, activity="x")])
    # No snapshot: the tail must be replayed from the log.
    d.snapshots.save = _no_snapshot  # type: ignore[method-assign]
    await d.close()
    with sqlite3.connect(folders.events_db) as conn:
        conn.execute("UPDATE events SET payload = ? WHERE seq = 2", (b'{"broken": tru',))
    with pytest.raises(CorruptLog) as info:
        await Daemon.start(folders)
    message = str(info.value)
    assert str(folders.events_db) in message
    assert "seq 2" in message
    assert "volee daemon repair" in message
    assert info.value.backup is not None
    assert info.value.backup.exists()


async def _no_snapshot() -> None:
    return None


async def test_config_problems_are_told_to_every_subscriber(volee_home: Path) -> None:
    folders = dirs()
    folders.config.mkdir(parents=True, exist_ok=True)
    folders.config_file.write_text("[agents]\nrestart_delays = [1, -5]\n")
    d = await Daemon.start(folders)
    client = await client_of(d)
    try:
        notices: list[dict[str, Any]] = []
        got = asyncio.Event()

        def on_notice(p: dict[str, Any]) -> None:
            notices.append(p)
            got.set()

        client.on_push("notice", on_notice)
        await client.call("subscribe", {"since": None})
        await asyncio.wait_for(got.wait(), 5)
        assert notices[0]["kind"] == "config-problems"
        assert "agents.restart_delays" in notices[0]["text"]
        assert d.config.agents.restart_delays == (1.0, 5.0, 15.0)  # the default is used
    finally:
        await client.close()
        await d.close()

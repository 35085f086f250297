"""Bad input is answered: nested JSON and TOML, out-of-bounds settings, hostile spool files,
payloads over the shim's cap."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.cli import hookshim
from volee_desktop.config import AgentsConfig, DiscoveryConfig, load_config
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.protocol import RequestError, decode_request
from volee_desktop.paths import dirs

DEEP = 5000


def _deep_request(depth: int) -> bytes:
    deep = "[" * depth + "]" * depth
    return f'{{"v": 1, "id": 7, "method": "daemon.status", "params": {{"x": {deep}}}}}'.encode()


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    try:
        yield d
    finally:
        await d.close()


async def _ask(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, line: bytes
) -> dict[str, Any]:
    writer.write(line + b"\n")
    await writer.drain()
    reply: dict[str, Any] = json.loads(await asyncio.wait_for(reader.readline(), 10))
    return reply


@pytest.mark.parametrize("depth", [1000, DEEP, 100_000])
def test_deeply_nested_json_is_a_bad_request(depth: int) -> None:
    with pytest.raises(RequestError) as caught:
        decode_request(_deep_request(depth))
    assert caught.value.code == "bad_request"
    assert "nested too deeply" in caught.value.message


async def test_the_daemon_answers_nested_json_and_keeps_the_connection(daemon: Daemon) -> None:
    reader, writer = await asyncio.open_unix_connection(str(daemon.dirs.socket))
    try:
        reply = await _ask(reader, writer, _deep_request(DEEP))
        assert reply["error"]["code"] == "bad_request"
        assert "nested too deeply" in reply["error"]["message"]
        # The same connection still works.
        again = await _ask(reader, writer, b'{"v": 1, "id": 8, "method": "daemon.status"}')
        assert again["id"] == 8
        assert "result" in again
    finally:
        writer.close()


async def test_a_hook_payload_nested_deeply_is_kept_with_its_reason(daemon: Daemon) -> None:
    payload = "[" * DEEP + "]" * DEEP
    params = {"event": "Stop", "payload": payload, "agent": None, "key": "k-deep"}
    answer = await daemon.intake.hook(params)
    assert answer["accepted"] is False
    assert "nested too deeply" in answer["reason"]


def test_a_config_nested_5000_deep_gives_the_defaults_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[agents]\nrestart_delays = " + "[" * DEEP + "]" * DEEP + "\n")
    result = load_config(path)
    assert result.config.agents == AgentsConfig()
    assert len(result.problems) == 1
    assert "nested too deeply" in result.problems[0]


async def test_the_daemon_starts_with_a_config_nested_5000_deep() -> None:
    folders = dirs()
    folders.config.mkdir(parents=True, exist_ok=True)
    folders.config_file.write_text("x = " + "[" * DEEP + "]" * DEEP + "\n")
    d = await Daemon.start(folders)
    try:
        assert any("nested too deeply" in p for p in d.facts.config_problems)
    finally:
        await d.close()


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("[agents]\nrestart_delays = []", "restart_on_crash = false"),
        ("[agents]\nrestart_delays = [1e308]", "at most 86400"),
        ("[agents]\nrestart_delays = [" + "1, " * 50 + "1]", "at most 20 delays"),
        ("[agents]\nresume_cap_per_start = 1000000000000", "at most 1000"),
        ("[agents]\nresume_max_age = 1e308", "at most"),
        ("[discovery]\nidle_discovery_interval = 1e308", "at most 3600"),
    ],
)
def test_settings_out_of_bounds_keep_their_default_and_say_so(
    tmp_path: Path, line: str, words: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(line + "\n")
    result = load_config(path)
    assert result.config.agents == AgentsConfig()
    assert result.config.discovery == DiscoveryConfig()
    assert len(result.problems) == 1
    assert words in result.problems[0]


# --- the spool ---------------------------------------------------------------------------


@pytest.mark.timeout(30)  # without the fix, the FIFO blocks the start for ever
async def test_a_fifo_named_json_in_the_spool_does_not_hang_the_start() -> None:
    folders = dirs()
    folders.spool.mkdir(parents=True)
    os.mkfifo(folders.spool / "00000000000000000001-1-aaaa.json")
    (folders.spool / "00000000000000000002-1-bbbb.json").symlink_to("/dev/zero")
    d = await Daemon.start(folders)
    try:
        kept = sorted(p.name for p in folders.rejected.iterdir())
        assert "00000000000000000001-1-aaaa.json" in kept
        assert "00000000000000000002-1-bbbb.json" in kept
        reason = (folders.rejected / "00000000000000000001-1-aaaa.json.reason.txt").read_text()
        assert "not a regular file" in reason
        assert not list(folders.spool.glob("*.json"))
    finally:
        await d.close()


async def test_a_stale_half_written_tmp_is_cleaned_and_kept(daemon: Daemon) -> None:
    spool = daemon.dirs.spool
    old = spool / ".00000000000000000003-1-cccc.json.tmp"
    old.write_text('{"event": "Sto')
    past = time.time() - 3600
    os.utime(old, (past, past))
    young = spool / ".00000000000000000004-1-dddd.json.tmp"
    young.write_text('{"event": "Sto')  # a hook writing it right now
    await daemon.intake.ingest_spool()
    assert not old.exists()
    assert young.exists()
    assert (daemon.dirs.rejected / old.name).read_text() == '{"event": "Sto'
    assert "killed mid-write" in (daemon.dirs.rejected / f"{old.name}.reason.txt").read_text()


def _run_shim(monkeypatch: pytest.MonkeyPatch, data: bytes, *args: str) -> int:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    return hookshim.main(list(args))


def test_a_payload_over_the_shims_cap_is_refused_whole_not_cut(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hookshim, "MAX_PAYLOAD", 1000)
    folders = dirs()
    monkeypatch.setenv("VOLEE_SOCKET", str(folders.socket))  # nobody listens: it spools
    monkeypatch.setenv("VOLEE_SPOOL", str(folders.spool))
    payload = json.dumps({"session_id": "s", "prompt": "x" * 5000}).encode()
    assert _run_shim(monkeypatch, payload, "UserPromptSubmit") == 0
    assert "too large" in capsys.readouterr().err
    (spooled,) = folders.spool.glob("*.json")
    params = json.loads(spooled.read_text())
    assert params["too_large"] == 1000
    assert params["payload"] == ""  # nothing cut and passed on as if whole


async def test_the_daemon_rejects_a_too_large_payload_saying_so(
    monkeypatch: pytest.MonkeyPatch, daemon: Daemon
) -> None:
    params = {"event": "Stop", "payload": "", "too_large": 8 << 20, "key": "k-big"}
    answer = await daemon.intake.hook(params)
    assert answer["accepted"] is False
    assert "too large" in answer["reason"]
    (kept,) = daemon.dirs.rejected.glob("k-big.json")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600

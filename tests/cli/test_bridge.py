"""``volee bridge``: stdin/stdout relayed to this machine's daemon, or one clear line why not."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from volee_desktop.cli import bridge
from volee_desktop.daemon.main import Daemon
from volee_desktop.paths import dirs

BRIDGE = Path(bridge.__file__)


def test_without_a_daemon_it_says_so_in_one_line_and_fails(volee_home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", "bridge"],
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == bridge.NOT_RUNNING
    assert result.stdout == b""
    [line] = result.stderr.decode().splitlines()
    assert line.startswith(f"volee is not running on {os.uname().nodename}")
    assert "volee daemon install" in line


async def test_it_relays_the_daemons_api_both_ways(volee_home: Path) -> None:
    daemon = await Daemon.start(dirs())
    try:
        # As lean as the hook shim: the file alone, no site, told the socket.
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            str(BRIDGE),
            "bridge",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "VOLEE_SOCKET": str(daemon.dirs.socket)},
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b'{"v": 1, "id": 1, "method": "machine.hello"}\n')
        proc.stdin.write(b'{"v": 1, "id": 2, "method": "caller"}\n')
        await proc.stdin.drain()
        hello = json.loads(await asyncio.wait_for(proc.stdout.readline(), 10))
        caller = json.loads(await asyncio.wait_for(proc.stdout.readline(), 10))
        assert hello["result"]["machine_id"] == daemon.machines.id
        # Not an agent's process: the daemon takes the bridge for the person.
        assert caller["result"]["kind"] == "person"
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    finally:
        await daemon.close()


async def test_a_daemon_that_stops_ends_the_bridge_saying_so(volee_home: Path) -> None:
    daemon = await Daemon.start(dirs())
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        str(BRIDGE),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "VOLEE_SOCKET": str(daemon.dirs.socket)},
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(b'{"v": 1, "id": 1, "method": "machine.hello"}\n')
        await proc.stdin.drain()
        await asyncio.wait_for(proc.stdout.readline(), 10)
    finally:
        await daemon.close()
    _out, err = await asyncio.wait_for(proc.communicate(), 10)
    assert proc.returncode == 1
    assert b"closed the connection" in err

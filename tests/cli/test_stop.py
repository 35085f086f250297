"""`volee daemon stop` against a daemon that does not go away."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
from typing import Any

import pytest

from volee_desktop.cli import commands
from volee_desktop.ipc.server import Connection, IpcServer, MethodTable
from volee_desktop.paths import dirs


async def test_stop_says_so_when_the_daemon_is_still_running_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(commands, "STOP_TIMEOUT", 0.3)
    stuck = subprocess.Popen(["sleep", "60"])  # plays a daemon that never exits
    table = MethodTable()

    async def status(_conn: Connection, _params: dict[str, Any]) -> Any:
        return {"pid": stuck.pid}

    async def stop(_conn: Connection, _params: dict[str, Any]) -> Any:
        return {}

    table.add("daemon.status", status)
    table.add("daemon.stop", stop)
    server = await IpcServer.start(dirs().socket, table)
    try:
        args = argparse.Namespace(json=False)
        with pytest.raises(commands.CliError, match=f"pid {stuck.pid}.*still running") as caught:
            await asyncio.to_thread(commands.cmd_daemon_stop, args)
        assert f"kill {stuck.pid}" in str(caught.value)
    finally:
        await server.close()
        stuck.kill()
        stuck.wait()

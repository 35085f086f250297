"""`volee daemon stop` against a daemon that does not go away."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
from typing import Any

import pytest

from volee_desktop.cli import daemon as cli_daemon
from volee_desktop.ipc.server import Connection, IpcServer, MethodTable
from volee_desktop.paths import dirs


async def test_stop_says_so_when_the_daemon_is_still_running_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli_daemon, "STOP_TIMEOUT", 0.3)
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
        with pytest.raises(cli_daemon.CliError, match=f"pid {stuck.pid}.*still running") as caught:
            await asyncio.to_thread(cli_daemon.cmd_daemon_stop, args)
        assert f"kill {stuck.pid}" in str(caught.value)
    finally:
        await server.close()
        stuck.kill()
        stuck.wait()


def test_stop_ends_a_daemon_that_holds_the_lock_but_does_not_serve_yet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    folders = dirs()
    # Plays a daemon still starting: it holds the lock, the socket is not there yet.
    code = (
        "import sys, time; from pathlib import Path; from volee_desktop.pidlock import PidLock;"
        "PidLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); "
        "time.sleep(60)"
    )
    starting = subprocess.Popen(
        [sys.executable, "-c", code, str(folders.daemon_lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert starting.stdout is not None
        assert starting.stdout.readline() == "locked\n"
        outcome: list[int] = []
        stopper = threading.Thread(
            target=lambda: outcome.append(
                cli_daemon.cmd_daemon_stop(argparse.Namespace(json=False))
            )
        )
        stopper.start()
        starting.wait(10)  # reaps it here (it is this process's child), so the stop sees it go
        stopper.join(10)
        assert outcome == [0]
        assert "stopped" in capsys.readouterr().out
    finally:
        starting.kill()
        starting.wait()
        if starting.stdout is not None:
            starting.stdout.close()

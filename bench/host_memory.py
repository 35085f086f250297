"""Measure a host's memory (USS/RSS/PSS): target <= 6 MiB USS per host.

Starts a real detached host holding a shell in a PTY, measures it at rest, attached, with
its scrollback full (400 KB printed) and after a ``screen`` request (which imports
``re``), then stops it.  Compares with a
bare interpreter started the same way.  psutil is used here only, never by the host.

    .venv/bin/python bench/host_memory.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from volee_desktop.hosts.launcher import HostClient, launch_host

MIB = 1024 * 1024


def _mem(pid: int) -> str:
    info = psutil.Process(pid).memory_full_info()
    uss, pss, rss = (x / MIB for x in (info.uss, info.pss, info.rss))
    return f"USS {uss:5.2f} MiB  PSS {pss:5.2f} MiB  RSS {rss:5.2f} MiB"


def _settle() -> None:
    time.sleep(0.3)  # let the host finish its start-up work before measuring


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    try:
        bare = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
        _settle()
        print(f"bare python           {_mem(bare.pid)}")
        assert bare.stdin is not None
        bare.stdin.close()
        bare.wait()

        record = launch_host(
            "ag_bench",
            [
                "sh",
                "-c",
                "echo ready; read x; yes output-line | head -c 400000; echo filled; sleep 600",
            ],
            root,
            dict(os.environ),
            root / "hosts" / "ag_bench.json",
            root / "run" / "ag_bench.sock",
        )
        _settle()
        print(f"host at rest          {_mem(record.host_pid)}")
        client = HostClient(record.socket)
        with client.open_stream() as stream:
            stream.read_until(b"ready", 5)
            _settle()
            print(f"host, attached        {_mem(record.host_pid)}")
            client.send_text("go")
            stream.read_until(b"filled", 10)
            _settle()
            print(f"host, scrollback full {_mem(record.host_pid)}")
        client.screen(40)
        _settle()
        print(f"host after screen     {_mem(record.host_pid)}")
        uss = psutil.Process(record.host_pid).memory_full_info().uss / MIB
        exit_status = client.stop(grace=2)
        print(f"stopped: {exit_status.signal_name or exit_status.code}")
        print(f"target <= 6 MiB USS: {'met' if uss <= 6 else 'MISSED'} ({uss:.2f} MiB)")
        return 0 if uss <= 6 else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

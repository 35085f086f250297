"""The daemon's watch connection hears of the program's end at once, without its output."""

from __future__ import annotations

import json
import socket
import tempfile
import time
from pathlib import Path

from volee_desktop.hosts import wire
from volee_desktop.hosts.launcher import HostClient, launch_host


def test_a_watcher_hears_the_exit_before_the_host_lingers_out() -> None:
    root = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
    record = launch_host(
        "ag_watch",
        ["/bin/sh", "-c", "echo noise; sleep 0.5; exit 3"],
        root,
        {"PATH": "/usr/bin:/bin"},
        root / "hosts" / "ag_watch.json",
        root / "run" / "w.sock",
        linger=30.0,
    )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(record.socket)
    sock.sendall(wire.json_frame({"op": "watch"}))
    reader = wire.FrameReader()
    began = time.monotonic()
    messages: list[dict[str, object]] = []
    kinds: set[bytes] = set()
    while not any(m.get("event") == "exit" for m in messages):
        for kind, payload in reader.feed(sock.recv(65536)):
            kinds.add(kind)
            if kind == wire.JSON:
                messages.append(json.loads(payload))
    waited = time.monotonic() - began
    sock.close()
    HostClient(record.socket).close()  # let the lingering host go
    assert messages[0] == {"ok": True}
    exit_info = messages[-1]["exit"]
    assert isinstance(exit_info, dict)
    assert exit_info["code"] == 3
    assert wire.OUTPUT not in kinds  # a watcher gets no output
    assert waited < 10  # long before the 30 s linger would have closed the connection

"""The daemon's watch connection hears of the program's end at once (and its output, if asked)."""

from __future__ import annotations

import json
import socket
import tempfile
import time
from pathlib import Path

from tests.polling import wait_until
from volee_desktop.hosts import wire
from volee_desktop.hosts.launcher import HostClient, launch_host


def test_a_watcher_hears_the_exit_before_the_host_lingers_out(host_kind: str) -> None:
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
    assert messages[0] == {"ok": True, "rows": 40, "cols": 120}
    exit_info = messages[-1]["exit"]
    assert isinstance(exit_info, dict)
    assert exit_info["code"] == 3
    assert wire.OUTPUT not in kinds  # a watcher gets no output
    assert waited < 10  # long before the 30 s linger would have closed the connection


def test_a_watcher_asking_for_output_gets_it_then_resizes_then_the_exit(host_kind: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
    record = launch_host(
        "ag_watch",
        ["/bin/sh", "-c", "echo before; read line; echo after; exit 0"],
        root,
        {"PATH": "/usr/bin:/bin"},
        root / "hosts" / "ag_watch.json",
        root / "run" / "w.sock",
        linger=30.0,
    )
    client = HostClient(record.socket)
    wait_until(lambda: "before" in client.screen(5), what="the first line")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(record.socket)
    sock.sendall(wire.json_frame({"op": "watch", "output": True}))
    reader = wire.FrameReader()
    messages: list[dict[str, object]] = []
    output = b""
    resized = False
    while not any(m.get("event") == "exit" for m in messages):
        for kind, payload in reader.feed(sock.recv(65536)):
            if kind == wire.JSON:
                messages.append(json.loads(payload))
            elif kind == wire.OUTPUT:
                output += payload
        if messages and not resized:
            resized = True
            client.resize(30, 100)
            client.send_text("go")
    sock.close()
    client.close()
    assert b"before" in output  # the replay of what came before the watch
    assert b"after" in output
    assert {"event": "resize", "rows": 30, "cols": 100} in messages

"""The daemon's watch connection hears of the program's end at once (and its output, if asked)."""

from __future__ import annotations

import itertools
import json
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.polling import wait_until
from volee_desktop.hosts import wire
from volee_desktop.hosts.launcher import HostClient, launch_host
from volee_desktop.hosts.requests import STIRRED

#: A program told to go waits this long first: the output that follows keys sent to the
#: program is held back from no watch for ``STIRRED`` (the echoed "go" is sent at once).
CALM = f"sleep {STIRRED + 0.3}"


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


def _watch_output(
    record_socket: str, request: dict[str, object]
) -> tuple[list[tuple[float, bytes]], list[dict[str, object]]]:
    """Watch with ``request`` until the exit: each output frame with when it came, the JSON."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(record_socket)
    sock.sendall(wire.json_frame(request))
    reader = wire.FrameReader()
    frames: list[tuple[float, bytes]] = []
    messages: list[dict[str, object]] = []
    while not any(m.get("event") == "exit" for m in messages):
        data = sock.recv(65536)
        assert data, "the host closed the watch before the exit"
        for kind, payload in reader.feed(data):
            if kind == wire.JSON:
                messages.append(json.loads(payload))
            elif kind == wire.OUTPUT:
                frames.append((time.monotonic(), payload))
    sock.close()
    return frames, messages


def _ticker(root: Path, name: str, script: str) -> str:
    record = launch_host(
        name,
        ["/bin/sh", "-c", f"read go; {script}; exit 0"],
        root,
        {"PATH": "/usr/bin:/bin"},
        root / "hosts" / f"{name}.json",
        root / "run" / f"{name}.sock",
        linger=0.5,
    )
    return record.socket


def test_a_watch_every_ms_gets_the_output_in_order_at_most_that_often(host_kind: str) -> None:
    """The daemon's watch asks for output at most every so often (issue 27): a program that
    writes 40 lines 20 ms apart reaches it in few frames, every byte in order, the first at
    once, the last before the exit; a watch without ``every_ms`` gets a frame a line."""
    root = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
    script = f"{CALM}; i=0; while [ $i -lt 40 ]; do echo line$i; i=$((i+1)); sleep 0.02; done"
    seen: dict[str, list[tuple[float, bytes]]] = {}
    for name, request in (
        ("held", {"op": "watch", "output": True, "every_ms": 300}),
        ("plain", {"op": "watch", "output": True}),
    ):
        path = _ticker(root, name, script)
        client = HostClient(path)
        began: list[float] = []

        def go(client: HostClient = client, began: list[float] = began) -> None:
            time.sleep(0.3)  # the watch is in place
            began.append(time.monotonic())
            client.send_text("go")

        threading.Thread(target=go).start()
        frames, messages = _watch_output(path, request)
        client.close()
        assert messages[0] == {"ok": True, "rows": 40, "cols": 120}
        assert messages[-1]["event"] == "exit"
        text = b"".join(payload for _, payload in frames).decode()
        lines = [w for w in text.split() if w.startswith("line")]
        assert lines == [f"line{i}" for i in range(40)], text
        seen[name] = [(at - began[0], payload) for at, payload in frames]
    plain = seen["plain"]
    held = [frame for frame in seen["held"] if b"line" in frame[1]]  # not the stirred "go"
    assert len(plain) >= 15  # about one a line: what the hold saves
    # 300 ms apart (less the reading's own jitter), but for the last: the exit sends what is
    # held at once, before it.
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(held[:-1])]
    assert gaps
    assert min(gaps) >= 0.25, gaps
    assert len(held) <= (held[-1][0] - held[0][0]) / 0.3 + 2
    assert len(held) < len(plain) / 2


def test_a_watch_every_ms_sends_a_large_output_without_waiting(host_kind: str) -> None:
    """Held output goes at once from 64 KiB: a flood is not slowed to a frame per spell."""
    root = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
    path = _ticker(root, "flood", f"{CALM}; head -c 600000 /dev/zero | tr '\\0' x; sleep 1")
    client = HostClient(path)
    threading.Thread(target=lambda: (time.sleep(0.3), client.send_text("go"))).start()
    frames, _ = _watch_output(path, {"op": "watch", "output": True, "every_ms": 10_000})
    client.close()
    assert sum(payload.count(b"x") for _, payload in frames) == 600_000
    # 600 KB in 64 KiB frames, not one frame 10 s later (the program ended after 1 s).
    assert len(frames) >= 8
    assert frames[-1][0] - frames[0][0] < 5


@pytest.mark.parametrize(
    ("every", "said"),
    [
        (-1, "bad watch request: every_ms -1 is out of range"),
        (10_001, "bad watch request: every_ms 10001 is out of range"),
        (2**70, f"bad watch request: every_ms {2**70} is out of range"),
        ("soon", "bad watch request: invalid literal for int() with base 10: 'soon'"),
        ([], "bad watch request: 'every_ms' must be a number, not list"),
    ],
)
def test_a_watch_with_a_bad_every_ms_is_refused_and_the_connection_kept(
    host_kind: str, every: object, said: str
) -> None:
    root = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
    path = _ticker(root, "bad", "echo done")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(path)
    sock.sendall(wire.json_frame({"op": "watch", "output": True, "every_ms": every}))
    sock.sendall(wire.json_frame({"op": "hello"}))
    reader = wire.FrameReader()
    replies: list[dict[str, object]] = []
    while len(replies) < 2:
        replies += [json.loads(p) for k, p in reader.feed(sock.recv(65536)) if k == wire.JSON]
    sock.close()
    HostClient(path).stop()
    assert replies[0] == {"ok": False, "error": said}
    assert replies[1]["ok"] is True
    assert "agent" in replies[1]


def _held_watch(name: str, script: str) -> tuple[socket.socket, HostClient]:
    """A ticker running ``script`` once told to go and calm, watched with its output held 10 s."""
    root = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
    path = _ticker(root, name, f"{CALM}; {script}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(path)
    sock.sendall(wire.json_frame({"op": "watch", "output": True, "every_ms": 10_000}))
    client = HostClient(path)
    client.send_text("go")
    return sock, client


def test_a_flush_sends_the_held_output_before_its_reply(host_kind: str) -> None:
    sock, client = _held_watch("flush", "echo first; sleep 0.2; echo second; sleep 30")
    reader = wire.FrameReader()
    got: list[tuple[bytes, bytes]] = []
    sock.settimeout(1.0)
    deadline = time.monotonic() + STIRRED + 1.8  # "second" is printed, and held for 10 s
    while time.monotonic() < deadline:
        try:
            got += reader.feed(sock.recv(65536))
        except TimeoutError:
            pass
    before = b"".join(p for k, p in got if k == wire.OUTPUT)
    assert b"second" not in before
    sock.settimeout(10)
    sock.sendall(wire.json_frame({"op": "flush"}))
    after: list[tuple[bytes, bytes]] = []
    while not any(k == wire.JSON for k, _ in after):
        after += reader.feed(sock.recv(65536))
    sock.close()
    client.stop()
    assert after[-1][0] == wire.JSON
    assert json.loads(after[-1][1]) == {"ok": True}
    assert b"second" in b"".join(p for k, p in after if k == wire.OUTPUT)


def test_a_second_watch_changes_the_hold_without_replaying_the_output(host_kind: str) -> None:
    """The daemon holds an asking agent's output longer (answers.DIALOG_EVERY_MS): a
    ``watch`` again on the same connection with only ``every_ms`` sends what is held, then its
    reply, replays nothing, and holds what comes next as long as it now says."""
    script = f"echo first; sleep 0.2; echo second; read more; {CALM}; echo third; sleep 30"
    sock, client = _held_watch("rewatch", script)
    reader = wire.FrameReader()

    def until_json() -> list[tuple[bytes, bytes]]:
        got: list[tuple[bytes, bytes]] = []
        while not any(k == wire.JSON for k, _ in got):
            got += reader.feed(sock.recv(65536))
        return got

    got = until_json()  # the first watch's reply
    time.sleep(STIRRED + 1.0)  # the echoed "go" sent at once, what follows held for 10 s
    sock.sendall(wire.json_frame({"op": "watch", "every_ms": 0}))
    again = until_json()
    assert again[-1][0] == wire.JSON
    assert json.loads(again[-1][1]) == {"ok": True, "rows": 40, "cols": 120}
    assert b"second" in b"".join(p for k, p in again if k == wire.OUTPUT)  # sent before it
    output = b"".join(p for k, p in got + again if k == wire.OUTPUT)
    assert output.count(b"first") == 1  # nothing replayed
    began = time.monotonic()
    client.send_text("more")
    third = b""
    while b"third" not in third:
        third += b"".join(p for k, p in reader.feed(sock.recv(65536)) if k == wire.OUTPUT)
    assert time.monotonic() - began < 6  # not held for the first watch's 10 s
    sock.close()
    client.stop()


@pytest.mark.parametrize("stir", ["keys", "size"])
def test_keys_or_a_size_sent_to_the_program_lift_the_hold_a_moment(
    host_kind: str, stir: str
) -> None:
    """What a program draws after keys or a size reach it goes to the watch at once, whatever
    its hold (a dialog answered in the agent's terminal is seen gone at once, issue 27): what
    was held goes first; ``STIRRED`` later the hold is back."""
    # A resize's trap ends the shell's read as a line does; "later" comes once the stir is
    # over, and keys sent then would stir again.
    script = (
        f"trap 'echo stirred' WINCH; echo held; read x; echo answered; {CALM}; echo later; sleep 30"
    )
    sock, client = _held_watch(f"stir{stir}", script)
    reader = wire.FrameReader()
    sock.settimeout(0.2)

    def output_for(seconds: float) -> bytes:
        got = b""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                got += b"".join(p for k, p in reader.feed(sock.recv(65536)) if k == wire.OUTPUT)
            except TimeoutError:
                pass
        return got

    before = output_for(STIRRED + 1.5)  # "held" printed once calm, held for 10 s
    assert b"held" not in before
    began = time.monotonic()
    if stir == "keys":
        client.send_text("x")
        wanted = [b"held", b"answered"]
    else:
        client.resize(30, 100)
        wanted = [b"held", b"stirred"]
    stirred = b""
    while not all(w in stirred for w in wanted):
        stirred += output_for(0.2)
        assert time.monotonic() - began < 3, stirred  # not the 10 s hold
    assert stirred.index(b"held") < stirred.index(wanted[1])  # in order
    after = output_for(STIRRED + 1.5)  # "later" printed once calm again: held for 10 s
    sock.close()
    client.stop()
    assert b"later" not in after

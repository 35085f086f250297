"""The host stays lean: what it imports decides most of its memory (target <= 6 MiB USS)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from volee_desktop.hosts.launcher import _BOOT, PACKAGE_ROOT

HEAVY = {
    "asyncio",
    "psutil",
    "dataclasses",
    "typing",
    "argparse",
    "subprocess",
    "threading",
    "logging",
    "pathlib",
    "platformdirs",
    "volee_desktop.core",
    "volee_desktop.store",
    "volee_desktop.daemon",
    "volee_desktop.paths",
}
# The Python halves of json, socket and signal pull in re and enum: 1.5 MiB of every host,
# which uses their C halves (_json, _socket, _signal) and select.epoll instead.
STDLIB_HEAVY = {"enum", "re", "json", "socket", "signal", "typing", "collections"}
if sys.platform.startswith("linux"):
    STDLIB_HEAVY |= {"selectors", "math"}  # elsewhere the poller is selectors' (kqueue)
HOST_MODULES = {
    "volee_desktop.hosts",
    "volee_desktop.hosts.errors",  # the root of FrameError: class statements only
    "volee_desktop.hosts.host",
    "volee_desktop.lean",
    "volee_desktop.hosts.main",
    "volee_desktop.hosts.poller",
    "volee_desktop.hosts.recordio",
    "volee_desktop.hosts.requests",
    "volee_desktop.hosts.ring",
    "volee_desktop.hosts.spawn",
    "volee_desktop.hosts.tree",
    "volee_desktop.hosts.wire",
}


def test_the_host_imports_nothing_heavy() -> None:
    # The launcher's own interpreter flags and boot line, stopping short of running a host.
    boot = _BOOT.replace("cli()", "print(chr(10).join(sorted(sys.modules)))")
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", boot, str(PACKAGE_ROOT)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    loaded = set(done.stdout.split())

    assert "volee_desktop.hosts.host" in loaded
    assert "volee_desktop.hosts.main" in loaded
    assert {"_json", "_socket", "_signal", "select"} <= loaded  # the probe sees imports
    assert not loaded & HEAVY
    assert not loaded & STDLIB_HEAVY
    assert not {m for m in loaded if m.startswith("volee_desktop.")} - HOST_MODULES


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="vl", dir="/tmp"))  # a socket path has 103 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


# The program the host runs: a client of its host's socket (status), then it exits 0.
_CLIENT = """
import json, socket, struct, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
request = json.dumps({"op": "status"}).encode()
sock.sendall(b"J" + struct.pack(">I", len(request)) + request)
data = b""
while len(data) < 5 or len(data) < 5 + struct.unpack(">I", data[1:5])[0]:
    chunk = sock.recv(65536)
    if not chunk:
        break
    data += chunk
with open(sys.argv[2], "wb") as f:
    f.write(data)
"""


def test_a_running_host_loads_no_heavy_module(short_dir: Path) -> None:
    """A whole host's life in the foreground: serve, start, answer, record the exit, leave."""
    record, sock, reply = short_dir / "ag_1.json", short_dir / "ag_1.sock", short_dir / "reply"
    boot = _BOOT.replace(
        "cli()",
        "from volee_desktop.hosts.main import main; code = main(sys.argv[1:]); "
        "print(chr(10).join(sorted(sys.modules))); sys.exit(code)",
    )
    program = [sys.executable, "-I", "-S", "-c", _CLIENT, str(sock), str(reply)]
    options = ["--agent", "ag_1", "--record", str(record), "--socket", str(sock)]
    options += ["--cwd", str(short_dir), "--linger", "0", "--foreground"]
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", boot, str(PACKAGE_ROOT), *options, "--", *program],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr

    header, payload = reply.read_bytes()[:5], reply.read_bytes()[5:]
    assert header[:1] == b"J"
    assert int.from_bytes(header[1:], "big") == len(payload)
    status = json.loads(payload)
    assert status["ok"] is True
    assert status["running"] is True
    assert status["record"]["agent"] == "ag_1"
    assert payload == json.dumps(status, separators=(",", ":")).encode()
    text = record.read_text()
    written = json.loads(text)
    assert written["exit"]["code"] == 0
    assert written["exit"]["host_signal"] is None
    assert text == json.dumps(written, indent=1)  # the daemon's json reads the same file

    loaded = set(done.stdout.split())
    assert {"_json", "_socket", "_signal", "select", "volee_desktop.hosts.host"} <= loaded
    assert not loaded & HEAVY
    assert not loaded & STDLIB_HEAVY
    assert not {m for m in loaded if m.startswith("volee_desktop.")} - HOST_MODULES

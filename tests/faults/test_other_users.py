"""Other users: planted sockets and folders are refused, volee's files are private.

CI runs as root: "another user" is ``nobody`` (root can chown to it).  Without root these
tests are skipped, except the ones that need no other user.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import agent_id, registered
from tests.fakes.sockets import FakeSock
from tests.faults.conftest import Rig
from volee_desktop.cli import hookshim
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.client import Client
from volee_desktop.ipc.transport import UntrustedSocket, check_server_peer
from volee_desktop.paths import NotPrivate, dirs, ensure_private_dir

ROOT = Path(__file__).resolve().parents[2]


def _nobody() -> int:
    if os.geteuid() != 0:
        pytest.skip("needs root to play another user (chown to nobody)")
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("no user nobody")


class Planted:
    """A socket someone listens on, recording what it was sent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.received = bytearray()
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.settimeout(1.0)
            try:
                while chunk := conn.recv(65536):
                    self.received += chunk
                    conn.sendall(b'{"v": 1, "id": 1, "result": {"accepted": true}}\n')
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(5)


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Planted]:
    uid = _nobody()
    folder = tmp_path / "shared-run"
    folder.mkdir(mode=0o700)
    p = Planted(folder / "volee.sock")
    os.chown(p.path, uid, uid)
    os.chown(folder, uid, uid)  # a shared XDG_RUNTIME_DIR another user made
    yield p
    p.close()


# Where a planted socket listens, and the words every client refuses it with.
SITUATIONS = {
    "another user's folder": "not a private folder of yours",
    "another user's socket in my folder": "not a socket of yours",
    "my world-writable folder": "not a private folder of yours",
    "my group-writable folder": "not a private folder of yours",
}


@pytest.fixture(params=list(SITUATIONS))
def untrusted(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Planted, str]]:
    """A socket someone listens on where no client of volee may send to it."""
    situation: str = request.param
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    p = Planted(folder / "volee.sock")
    try:
        if situation.startswith("another user's"):
            uid = _nobody()
            os.chown(p.path, uid, uid)
            if situation == "another user's folder":
                os.chown(folder, uid, uid)
        else:
            os.chmod(folder, 0o777 if "world" in situation else 0o770)
        yield p, SITUATIONS[situation]
    finally:
        p.close()


def _run_file(path: str, args: list[str], stdin: bytes, env: dict[str, str]) -> Any:
    """An entry point run as agents run it: the file, ``-I -S``."""
    return subprocess.run(
        [sys.executable, "-I", "-S", path, *args],
        input=stdin,
        capture_output=True,
        timeout=30,
        env=env,
        check=False,
    )


def test_the_hook_shim_refuses_an_untrusted_socket(
    untrusted: tuple[Planted, str], tmp_path: Path
) -> None:
    planted, _said = untrusted
    spool = tmp_path / "spool"
    secret = json.dumps({"session_id": "s", "prompt": "the secret plan"}).encode()
    env = {"VOLEE_SOCKET": str(planted.path), "VOLEE_SPOOL": str(spool)}
    done = _run_file(hookshim.__file__, ["UserPromptSubmit"], secret, env)
    assert done.returncode == 0, done.stderr
    assert planted.accepted == 0
    (kept,) = spool.glob("*.json")  # kept for our own daemon instead
    assert "the secret plan" in kept.read_text()


def test_the_mcp_relay_refuses_an_untrusted_socket(untrusted: tuple[Planted, str]) -> None:
    from volee_desktop.mcp import relay

    planted, said = untrusted
    env = {"VOLEE_SOCKET": str(planted.path), "VOLEE_AGENT": "ag_x"}
    request = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}\n'
    done = _run_file(relay.__file__, [], request, env)
    assert done.returncode == 0, done.stderr
    (answer,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert answer["id"] == 7
    assert said in answer["error"]["message"]
    assert planted.accepted == 0


def test_the_bridge_refuses_an_untrusted_socket(untrusted: tuple[Planted, str]) -> None:
    from volee_desktop.cli import bridge

    planted, said = untrusted
    done = _run_file(bridge.__file__, [], b"", {"VOLEE_SOCKET": str(planted.path)})
    assert done.returncode == bridge.NOT_RUNNING
    assert said in done.stderr.decode()
    assert planted.accepted == 0


def test_the_client_refuses_an_untrusted_socket(untrusted: tuple[Planted, str]) -> None:
    planted, said = untrusted
    with pytest.raises(UntrustedSocket) as caught:
        Client.connect(planted.path, timeout=2.0)
    assert said in str(caught.value)
    assert caught.value.code == "refused"
    assert planted.accepted == 0


def test_a_client_refuses_a_socket_in_another_users_folder(planted: Planted) -> None:
    with pytest.raises(UntrustedSocket) as caught:
        Client.connect(planted.path, timeout=2.0)
    assert "not a private folder of yours" in str(caught.value)
    assert caught.value.code == "refused"
    assert planted.accepted == 0


def test_a_client_refuses_another_users_socket_in_its_own_folder(planted: Planted) -> None:
    os.chown(planted.path.parent, 0, 0)
    with pytest.raises(UntrustedSocket) as caught:
        Client.connect(planted.path, timeout=2.0)
    assert "not a socket of yours" in str(caught.value)
    assert planted.accepted == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED is Linux's")
def test_a_client_refuses_a_peer_of_another_uid() -> None:
    with pytest.raises(UntrustedSocket) as caught:
        check_server_peer(FakeSock(os.geteuid() + 1), Path("/x/volee.sock"))
    assert f"served by uid {os.geteuid() + 1}" in str(caught.value)
    check_server_peer(FakeSock(os.geteuid()), Path("/x/volee.sock"))  # ours: fine


def test_a_hook_never_sends_the_prompt_to_a_planted_socket(
    planted: Planted, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = dirs().spool
    monkeypatch.setenv("VOLEE_SOCKET", str(planted.path))
    monkeypatch.setenv("VOLEE_SPOOL", str(spool))
    secret = json.dumps({"session_id": "s", "prompt": "the secret plan"}).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(secret)))
    assert hookshim.main(["UserPromptSubmit"]) == 0
    assert planted.accepted == 0
    assert b"secret" not in planted.received
    (kept,) = spool.glob("*.json")  # kept for our own daemon instead
    assert "the secret plan" in kept.read_text()


def test_a_state_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    uid = _nobody()
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chown(state, uid, uid)
    with pytest.raises(NotPrivate) as caught:
        ensure_private_dir(state)
    assert f"belongs to uid {uid}" in str(caught.value)
    # Never chmod-ed into use (root could).
    assert stat.S_IMODE(state.stat().st_mode) == 0o755


async def test_the_daemon_refuses_a_state_folder_of_another_user() -> None:
    uid = _nobody()
    folders = dirs()
    folders.state.mkdir(parents=True, mode=0o700)
    os.chown(folders.state, uid, uid)
    with pytest.raises(NotPrivate):
        await Daemon.start(folders)
    assert not folders.events_db.exists()


def test_a_runtime_folder_of_another_user_never_fails_the_hook(tmp_path: Path) -> None:
    """platformdirs raises PermissionError for a /tmp/runtime-<uid> of another owner."""
    uid = _nobody()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    runtime = tmp / f"runtime-{os.geteuid()}"
    runtime.mkdir(mode=0o700)
    os.chown(runtime, uid, uid)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp),
        "XDG_STATE_HOME": str(tmp_path / "xstate"),
        "XDG_CONFIG_HOME": str(tmp_path / "xconfig"),
        "PYTHONPATH": str(ROOT),
    }
    payload = json.dumps({"session_id": "s", "hook_event_name": "Stop"})
    done = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", "hook", "Stop"],
        input=payload.encode(),
        env=env,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    (kept,) = (tmp_path / "xstate" / "volee" / "spool").glob("*.json")
    assert json.loads(kept.read_text())["event"] == "Stop"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


async def test_every_file_volee_writes_is_0600_and_every_folder_0700(rig: Rig) -> None:
    old = os.umask(0o022)
    try:
        folders = dirs()
        d = await Daemon.start(folders)
        try:
            await d.service.commit([registered("x")])
            await d.intake.hook({"event": "Stop", "payload": "not json", "key": "k-1"})
            for name in ("events.db", "events.db-wal", "events.db-shm"):
                assert _mode(folders.state / name) == 0o600, name
            for folder in (folders.state, folders.spool, folders.rejected, folders.runtime):
                assert _mode(folder) == 0o700, folder
            assert _mode(folders.rejected / "k-1.json") == 0o600
            files = d.agents.make_files_dir(agent_id())
            assert _mode(files) == 0o700
            assert _mode(files.parent) == 0o700
        finally:
            await d.close()
        rig.launch_fake()
        assert _mode(rig.record_path("ag_1").with_suffix(".log")) == 0o600
        assert _mode(rig.record_path("ag_1")) == 0o600
        assert _mode(rig.record_path("ag_1").parent) == 0o700
    finally:
        os.umask(old)


def test_the_mcp_relay_never_opens_a_session_on_a_planted_socket(planted: Planted) -> None:
    from volee_desktop.mcp import relay

    with pytest.raises(relay.Unreachable, match="not a private folder of yours"):
        relay.Relay(str(planted.path), "ag_x").connect()
    assert planted.accepted == 0


@pytest.mark.slow
async def test_an_agents_files_are_0600_in_0700_folders(fake_claude: Path) -> None:
    from volee_desktop.daemon.agents.runner import allowed_env
    from volee_desktop.ipc.aclient import AsyncClient

    old = os.umask(0o022)
    d = await Daemon.start(dirs())
    client = await AsyncClient.connect(d.dirs.socket)
    try:
        env = {**allowed_env(dict(os.environ)), "FAKE_HARNESS_HOME": str(fake_claude / "fh")}
        view = await client.call(
            "agents.spawn", {"cwd": str(fake_claude), "env": env, "prompt": None}, timeout=30
        )
        files = d.agents.files_of(view["id"])
        written = [p for p in files.rglob("*") if p.is_file()]
        assert written, "the claude harness writes its settings there"
        for path in written:
            assert _mode(path) == 0o600, path
        assert _mode(files) == 0o700
        assert _mode(files.parent) == 0o700
        log = d.agents.record_of(view["id"]).with_suffix(".log")
        assert _mode(log) == 0o600
    finally:
        os.umask(old)
        await client.close()
        await d.close()


_POST = """
import http.client, json, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
conn.request("POST", "/mcp/x", json.dumps(body), {"Content-Type": "application/json"})
reply = conn.getresponse()
print(reply.status, reply.read().decode())
"""


async def test_another_users_process_is_refused_by_the_mcp_endpoint(fake_claude: Path) -> None:
    uid = _nobody()
    # Not this venv's interpreter: it lives under root's home, which nobody cannot enter.
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 for another user to run")
    d = await Daemon.start(dirs())
    try:
        assert d.mcp_http is not None
        port = str(d.mcp_http.port)

        def as_nobody() -> str:
            done = subprocess.run(
                [python, "-I", "-S", "-c", _POST, port],
                user=uid,
                capture_output=True,
                text=True,
                timeout=60,
                cwd="/",
                check=True,
            )
            return done.stdout

        out = await asyncio.to_thread(as_nobody)
        assert out.startswith("403 ")
        assert f"a process of uid {uid}" in out
        assert d.mcp_http.status()["refused"] == 1
    finally:
        await d.close()

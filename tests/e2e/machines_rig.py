"""Another machine for the machines tests: a second Unix user with its own HOME, VOLEE_HOME and
daemon, behind a real OpenSSH server on 127.0.0.1 (its own port, host key and keys).

Needs root (``useradd``, and sshd switching to that user) and ``openssh-server``
(``scripts/dev`` installs it); the tests skip, saying so, otherwise.  The user runs the
system's ``python3`` with this checkout and the venv's packages on ``PYTHONPATH`` (the venv's
own interpreter may live in root's home, which that user cannot read).  Everything the user
runs is ended at teardown by its pid (``/proc``: every process of that user is the test's).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.machines import authorized_keys_line

SSHD = Path("/usr/sbin/sshd")
SYSTEM_PYTHON = Path("/usr/bin/python3")
REPO = Path(__file__).resolve().parents[2]


def skip_unless_possible() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the other machine is a second Unix user made with useradd")
    if not SSHD.exists() or shutil.which("ssh") is None:
        pytest.skip("needs openssh-server and the ssh client (scripts/dev installs them)")
    if not SYSTEM_PYTHON.exists() or shutil.which("useradd") is None:
        pytest.skip("needs /usr/bin/python3 and useradd for the other machine's user")
    version = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is {version}, not this Python: the venv's packages differ")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServerUser:
    """The other machine's person: a Unix user, its folders, its ``volee`` and daemon."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = f"vr{os.urandom(3).hex()}"
        self.home = root / "home"
        self.volee_home = self.home / "vh"
        subprocess.run(
            ["useradd", "-M", "-d", str(self.home), "-s", "/bin/sh", self.name],
            check=True,
            capture_output=True,
        )
        # Not locked (sshd refuses a locked account), yet no password can log in.
        subprocess.run(["usermod", "-p", "*", self.name], check=True, capture_output=True)
        entry = pwd.getpwnam(self.name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.home.mkdir(mode=0o700)
        (self.home / "project").mkdir()
        os.chown(self.home, self.uid, self.gid)
        os.chown(self.home / "project", self.uid, self.gid)
        site = sysconfig.get_paths()["purelib"]
        self.volee = root / "volee"  # its `volee`: the system python with this checkout
        self.volee.write_text(
            "#!/bin/sh\n"
            f"export PYTHONPATH={REPO}:{site}\n"
            f'exec {SYSTEM_PYTHON} -m volee_desktop.cli "$@"\n'
        )
        self.volee.chmod(0o755)
        self.env = {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "VOLEE_HOME": str(self.volee_home),
            "LANG": "C.UTF-8",
        }
        self.daemon: subprocess.Popen[bytes] | None = None

    def run(
        self, *args: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """``volee ARGS`` as that user, there."""
        done = subprocess.run(
            [str(self.volee), *args],
            env=self.env,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            pytest.fail(f"({self.name}) volee {' '.join(args)}: {done.stderr}\n{self.log()}")
        return done

    def call(self, method: str, **params: Any) -> Any:
        """Call a method of the daemon there as that user (what its agents' MCP tools ask,
        e.g. a coordinator's ``missions.spawn_worker``, without a real harness)."""
        code = (
            "import json, sys\n"
            "from volee_desktop.ipc.client import Client\n"
            "from volee_desktop.paths import dirs\n"
            "with Client.connect(dirs().socket) as c:\n"
            "    print(json.dumps(c.call(sys.argv[1], **json.loads(sys.argv[2]))))\n"
        )
        site = sysconfig.get_paths()["purelib"]
        done = subprocess.run(
            [str(SYSTEM_PYTHON), "-c", code, method, json.dumps(params)],
            env={**self.env, "PYTHONPATH": f"{REPO}:{site}"},
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"({self.name}) {method}: {done.stderr}\n{self.log()}")
        return json.loads(done.stdout)

    def git(self, cwd: Path, *args: str) -> str:
        """git as that user (its repositories are its own: root's git would call them dubious)."""
        done = subprocess.run(
            ["git", "-C", str(cwd), *args],
            env={**self.env, "GIT_CONFIG_NOSYSTEM": "1"},
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def start_daemon(self, extra_env: dict[str, str] | None = None) -> None:
        log = open(self.root / "remote-daemon.log", "ab")  # noqa: SIM115 - held by the child
        self.daemon = subprocess.Popen(
            [str(self.volee), "daemon", "run"],
            env={**self.env, **(extra_env or {})},
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 30
        while self.run("daemon", "status", check=False).returncode != 0:
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the other machine's daemon did not start:\n{self.log()}")
            time.sleep(0.1)

    def stop_daemon(self) -> None:
        if self.daemon is None:
            return
        self.daemon.send_signal(signal.SIGTERM)
        try:
            self.daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            self.daemon.wait()
        self.daemon = None

    def agents(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = json.loads(self.run("ls", "--json", "--no-refresh").stdout)
        return out

    def log(self) -> str:
        path = self.root / "remote-daemon.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def pids(self) -> list[int]:
        """Every process of this user (all started by the test)."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == self.uid:
                        found.append(int(entry.name))
                except OSError:
                    continue
        return found

    def remove(self) -> None:
        self.stop_daemon()
        for _ in range(3):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        subprocess.run(["userdel", self.name], check=False, capture_output=True)


class SshServer:
    """sshd on 127.0.0.1 for ``user`` only, with its own host key; ``ssh_dir`` holds an ``ssh``
    on PATH for the client side that knows the host as ``devbox``."""

    def __init__(self, root: Path, user: ServerUser) -> None:
        self.root = root
        self.user = user
        self.port = free_port()
        self.dir = root / "sshd"
        self.dir.mkdir()
        self.key = self.dir / "id_ed25519"
        self.restricted_key = self.dir / "restricted_ed25519"
        host_key = self.dir / "host_ed25519"
        for path in (self.key, self.restricted_key, host_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True
            )
        public = (self.dir / "id_ed25519.pub").read_text().strip()
        keys = self.dir / "authorized_keys"
        # The key the link uses: the bridge finds that user's daemon through VOLEE_HOME.
        # The recommended one (docs/machines.md): it can run nothing but the bridge.
        restricted = (self.dir / "restricted_ed25519.pub").read_text().strip()
        bridge = f"env VOLEE_HOME={user.volee_home} {user.volee}"
        keys.write_text(
            f'environment="VOLEE_HOME={user.volee_home}" {public}\n'
            f"{authorized_keys_line(bridge, restricted)}\n"
        )
        keys.chmod(0o644)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
        config = self.dir / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"PidFile {self.dir / 'sshd.pid'}\nAuthorizedKeysFile {keys}\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            f"PermitUserEnvironment yes\nAllowUsers {user.name}\nPermitRootLogin no\n"
            "LogLevel VERBOSE\n"
        )
        host_public = (self.dir / "host_ed25519.pub").read_text().split()
        known = self.dir / "known_hosts"
        known.write_text(f"[127.0.0.1]:{self.port} {host_public[0]} {host_public[1]}\n")
        client = self.dir / "ssh_config"
        client.write_text(
            f"Host devbox\n  HostName 127.0.0.1\n  Port {self.port}\n  User {user.name}\n"
            f"  IdentityFile {self.key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            f"Host devbox-restricted\n  HostName 127.0.0.1\n  Port {self.port}\n"
            f"  User {user.name}\n  IdentityFile {self.restricted_key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n"
            # A host whose key this side has never seen.
            f"Host devbox-unknown\n  HostName 127.0.0.1\n  Port {self.port}\n"
            f"  User {user.name}\n  IdentityFile {self.key}\n  IdentitiesOnly yes\n"
            "  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking ask\n"
        )
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        ssh = self.bin / "ssh"
        ssh.write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {client} "$@"\n')
        ssh.chmod(0o755)
        self.log = self.dir / "sshd.log"
        self.config = config
        self.start()

    def start(self) -> None:
        """Run sshd (again) and wait until it accepts."""
        log = open(self.log, "ab")  # noqa: SIM115 - held by the child
        self.proc = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(self.config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"sshd did not start: {self.log.read_text()}")
                time.sleep(0.05)

    def sessions(self) -> list[int]:
        """The sshd processes serving a connection (children of the listener)."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        try:
            return [int(pid) for pid in children.read_text().split()]
        except OSError:
            return []

    def cut(self) -> int:
        """Kill the sshd processes of every connection (the network pulled, as far as the
        client and the bridge can tell); how many."""
        doomed: list[int] = []
        todo = self.sessions()
        while todo:
            pid = todo.pop()
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            if comm.startswith("sshd"):
                doomed.append(pid)
                todo += [int(child) for child in children]
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(doomed)

    def close(self) -> None:
        for pid in self.sessions():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def make_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="vm", dir="/tmp"))
    root.chmod(0o755)  # the other user reads its `volee` and the key files' folder
    return root

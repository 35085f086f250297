"""A real volee (CLI, detached daemon, hosts) for the recovery end-to-end tests.

``Rig`` runs ``volee`` as a person would, kills everything the way a machine stopping
does (SIGSTOP then SIGKILL, so no program gets to run a SessionEnd hook and no host gets
to write an exit status), and can make the records say they come from an earlier boot.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.polling import wait_until
from volee_desktop.core.events import Event
from volee_desktop.pidlock import holder, is_held
from volee_desktop.store.codec import encode_event
from volee_desktop.store.log import EventLog
from volee_desktop.store.records import Record

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"


class Rig:
    """One VOLEE_HOME with its project folder and environment."""

    def __init__(self, env: dict[str, str] | None = None, config: str = "") -> None:
        self.root = Path(tempfile.mkdtemp(prefix="vr", dir="/tmp")).resolve()
        self.home = self.root / "v"
        self.project = self.root / "p"
        self.project.mkdir()
        (self.home / "config").mkdir(parents=True)
        if config:
            (self.home / "config" / "config.toml").write_text(config)
        base = dict(os.environ)
        base.update(
            VOLEE_HOME=str(self.home),
            VOLEE_CLAUDE_BIN=str(FAKE_CLAUDE),
            FAKE_HARNESS_HOME=str(self.root / "fh"),
        )
        base.update(env or {})
        self.env = base

    @property
    def hosts(self) -> Path:
        return self.home / "state" / "hosts"

    @property
    def lock(self) -> Path:
        return self.home / "state" / "daemon.lock"

    def volee(self, *args: str, check: bool = True, timeout: float = 30) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "volee_desktop.cli", *args],
            env=self.env,
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            pytest.fail(f"volee {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done.stdout

    def spawn(self, *words: str, name: str, harness: str = "claude") -> str:
        args = ["spawn", "--name", name, "--cwd", str(self.project), "--harness", harness]
        return self.volee(*args, "--", *words).strip()

    def agents(self) -> dict[str, dict[str, Any]]:
        items = json.loads(self.volee("ls", "--json", "--no-refresh"))
        return {a["name"]: a for a in items}

    def agent(self, name: str) -> dict[str, Any]:
        return self.agents()[name]

    def timeline(self, name: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(self.volee("timeline", name, "--json"))
        return items

    def wait_state(self, name: str, *states: str, timeout: float = 15.0) -> dict[str, Any]:
        return wait_until(
            lambda: (a := self.agent(name))["state"] in states and a, timeout, f"{name} in {states}"
        )

    def records(self) -> list[dict[str, Any]]:
        out = []
        for path in self.hosts.glob("ag_*.json"):
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return out

    def record(self, agent_id: str) -> dict[str, Any]:
        return json.loads((self.hosts / f"{agent_id}.json").read_text())

    def kill_daemon(self) -> None:
        """SIGKILL the daemon (only if it holds the lock: a stale pid may be anyone's now)."""
        if is_held(self.lock):
            pid = holder(self.lock)
            if pid:
                os.kill(pid, signal.SIGKILL)
                wait_until(lambda: not is_held(self.lock), 10, "the daemon gone")

    def kill_hosts(self) -> None:
        """Hosts and programs down at once, as a machine stopping leaves them (no exit)."""
        records = [r for r in self.records() if r.get("exit") is None]
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for r in records:
                _signal(r.get("program_pid"), sig, group=True)
                _signal(r["host_pid"], sig, group=False)

    def crash_machine(self, *, reboot: bool) -> None:
        """SIGKILL the daemon and every host; with ``reboot`` the records say an earlier boot."""
        self.kill_daemon()
        self.kill_hosts()
        if reboot:
            for path in self.hosts.glob("ag_*.json"):
                data = json.loads(path.read_text())
                if data.get("boot_time") is not None:
                    data["boot_time"] -= 3600.0
                if data.get("boot_id") is not None:
                    data["boot_id"] = "00000000-0000-4000-8000-000000000000"
                path.write_text(json.dumps(data))

    def append(self, *events: Event) -> None:
        """Write events to the log while no daemon runs (as another writer would have)."""
        assert not is_held(self.lock), "the daemon runs: commit through it instead"
        log = EventLog.open(self.home / "state" / "events.db")
        try:
            log.append_sync([Record(*encode_event(e)) for e in events])
        finally:
            log.close()

    def close(self) -> None:
        self.volee("daemon", "stop", check=False)
        self.kill_daemon()
        self.kill_hosts()
        shutil.rmtree(self.root, ignore_errors=True)


def _signal(pid: int | None, sig: signal.Signals, *, group: bool) -> None:
    if not pid:
        return
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass

"""Fixtures for host tests: a short temp folder, hosts running the fake harness, hook logs.

Every test that starts a host (through ``rig``, or asking for ``host_kind``) runs once with
each host: the Python host (``hosts/main.py``) and the native one (``hosts/native``, built
here when it is not).  ``VOLEE_TEST_HOSTS=python`` (or ``native``) runs only that one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.leftovers import end_host
from tests.polling import wait_until
from volee_desktop.hosts import native
from volee_desktop.hosts.launcher import HOST_ENV, HostClient, HostStream, launch_host
from volee_desktop.hosts.records import HostRecord, read_record

FAKE_HARNESS = Path(__file__).resolve().parents[1] / "fakes" / "fake_harness.py"
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "Stop",
    "SessionEnd",
)


@dataclass
class Rig:
    """A short folder with a hosts dir, a runtime dir, a hook log and the fake harness home."""

    root: Path
    launched: list[HostRecord] = field(default_factory=list)
    streams: list[HostStream] = field(default_factory=list)

    @property
    def hook_log(self) -> Path:
        return self.root / "hooks.jsonl"

    @property
    def harness_home(self) -> Path:
        return self.root / "fh"

    @property
    def project(self) -> Path:
        path = self.root / "proj"
        path.mkdir(exist_ok=True)
        return path

    def record_path(self, agent: str) -> Path:
        return self.root / "state" / "hosts" / f"{agent}.json"

    def socket_path(self, agent: str) -> Path:
        return self.root / "run" / f"{agent}.sock"

    def settings(self) -> Path:
        """A Claude-style settings file whose hooks append each payload to the hook log."""
        command = f"cat >> {self.hook_log}; echo >> {self.hook_log}"
        hooks = {e: [{"hooks": [{"type": "command", "command": command}]}] for e in HOOK_EVENTS}
        path = self.root / "settings.json"
        path.write_text(json.dumps({"hooks": hooks}))
        return path

    def env(self) -> dict[str, str]:
        return {**os.environ, "FAKE_HARNESS_HOME": str(self.harness_home)}

    def fake_argv(self, *args: str, hooks: bool = True) -> list[str]:
        extra = ["--settings", str(self.settings())] if hooks else ["--no-hooks"]
        return [sys.executable, str(FAKE_HARNESS), *extra, *args]

    def launch(
        self, argv: list[str], agent: str = "ag_1", linger: float = 0.3, **kw: Any
    ) -> HostRecord:
        record = launch_host(
            agent,
            argv,
            kw.pop("cwd", self.project),
            kw.pop("env", self.env()),
            self.record_path(agent),
            self.socket_path(agent),
            linger=linger,
            **kw,
        )
        self.launched.append(record)
        return record

    def launch_fake(self, *args: str, agent: str = "ag_1", **kw: Any) -> HostRecord:
        return self.launch(self.fake_argv(*args), agent=agent, **kw)

    def client(self, agent: str = "ag_1") -> HostClient:
        return HostClient(self.socket_path(agent))

    def stream(self, agent: str = "ag_1") -> HostStream:
        """An attached stream, closed when the test ends."""
        stream = self.client(agent).open_stream()
        self.streams.append(stream)
        return stream

    def hooks(self) -> list[dict[str, Any]]:
        if not self.hook_log.exists():
            return []
        lines = self.hook_log.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def wait_hook(self, event: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for hook in self.hooks():
                if hook["hook_event_name"] == event and all(
                    hook.get(k) == v for k, v in fields.items()
                ):
                    return hook
            return None

        found: dict[str, Any] = wait_until(find, timeout, f"hook {event} {fields}")
        return found

    def wait_exit(self, agent: str = "ag_1", timeout: float = 10.0) -> HostRecord:
        def ended() -> HostRecord | None:
            record = read_record(self.record_path(agent))
            return record if record is not None and record.exit is not None else None

        found: HostRecord = wait_until(ended, timeout, f"the exit of {agent} in its record")
        return found


HOST_KINDS = ("python", "native")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "host_kind" in metafunc.fixturenames:
        wanted = os.environ.get("VOLEE_TEST_HOSTS", ",".join(HOST_KINDS)).split(",")
        kinds = [k for k in HOST_KINDS if k in wanted]
        metafunc.parametrize("host_kind", kinds, indirect=True)


@pytest.fixture(scope="session")
def native_host() -> Path:
    """The native host's binary, built now if it is not (or is older than its source)."""
    found = native.binary()
    if found is None:
        if native.compiler() is None:
            pytest.skip("no C compiler to build the native host")
        found = native.build()
    return found


@pytest.fixture
def host_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which host launch_host starts in this test: "python" or "native" (VOLEE_HOST)."""
    kind: str = request.param
    if kind == "native":
        request.getfixturevalue("native_host")
    monkeypatch.setenv(HOST_ENV, kind)
    return kind


def host_argv(kind: str) -> list[str]:
    """The host's own command line, to run it directly (``--foreground`` in tests)."""
    if kind == "native":
        found = native.binary()
        assert found is not None
        return [str(found)]
    return [sys.executable, "-m", "volee_desktop.hosts.main"]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch, host_kind: str) -> Iterator[Rig]:
    """A rig in a short /tmp folder (socket paths are limited); kills its hosts afterwards."""
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    monkeypatch.setenv("VOLEE_HOME", str(root / "home"))
    the_rig = Rig(root)
    yield the_rig
    for stream in the_rig.streams:
        stream.close()
    for record in the_rig.launched:
        end_host(record.agent, record.program_pid, record.host_pid)
    shutil.rmtree(root, ignore_errors=True)

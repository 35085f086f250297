"""Project-wide test fixtures: every test runs under its own short VOLEE_HOME, and no agent
host a test started outlives it (hosts are detached on purpose, so nothing else ends them)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Variables that would make a test talk to a real daemon, harness or desktop of the developer.
_LEAKY = ("VOLEE_AGENT", "VOLEE_HARNESS", "VOLEE_CLAUDE_BIN", "VOLEE_CODEX_BIN", "VOLEE_PI_BIN")
_HOMES_SEEN: set[str] = set()


@pytest.fixture(autouse=True)
def _isolated_volee_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh, short VOLEE_HOME (Unix socket paths are limited to ~104 bytes)."""
    home = Path(tempfile.mkdtemp(prefix="vh", dir="/tmp"))
    monkeypatch.setenv("VOLEE_HOME", str(home))
    for name in _LEAKY:
        monkeypatch.delenv(name, raising=False)
    # Claude Code's folder (transcripts, sessions) for the harnesses a test starts without a
    # sandbox of its own: never the machine's ~/.claude. Sandboxed real harnesses drop it.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    yield home
    end_hosts(home)
    shutil.rmtree(home, ignore_errors=True)


FAKE_CLAUDE = Path(__file__).resolve().parent / "fakes" / "fake-claude"


@pytest.fixture
def fake_claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short scratch folder, with the fake Claude Code as the claude agents are launched with
    (its transcripts under ``<folder>/fh``)."""
    path = Path(tempfile.mkdtemp(prefix="vf", dir="/tmp")).resolve()
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(FAKE_CLAUDE))
    monkeypatch.setenv("FAKE_HARNESS_HOME", str(path / "fh"))
    monkeypatch.setenv("FAKE_PYTHON", sys.executable)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def volee_home() -> Path:
    """The VOLEE_HOME of this test."""
    return Path(os.environ["VOLEE_HOME"])


_ITEM_HOMES = pytest.StashKey[set[str]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # Remember the VOLEE_HOME the test really used (a conftest below may set its own).
    homes = item.stash.setdefault(_ITEM_HOMES, set())
    before = os.environ.get("VOLEE_HOME")
    yield
    after = os.environ.get("VOLEE_HOME")
    homes.update(h for h in (before, after) if h)
    _HOMES_SEEN.update(homes)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # This test's homes only (the session's end sweeps every home seen, once).
    for home in item.stash.get(_ITEM_HOMES, set()):
        end_hosts(Path(home))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for home in _HOMES_SEEN:
        end_hosts(Path(home))


def end_hosts(home: Path) -> int:
    """SIGKILL every host (and its program's process group) recorded under ``home``."""
    killed = 0
    for record_file in home.glob("**/state/hosts/ag_*.json") if home.is_dir() else ():
        try:
            record = json.loads(record_file.read_text())
        except (OSError, ValueError):
            continue
        agent = str(record.get("agent", ""))
        program = record.get("program_pid")
        host = record.get("host_pid")
        if isinstance(program, int) and _is_ours(program, None):
            try:
                os.killpg(program, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        if isinstance(host, int) and _is_ours(host, agent):
            try:
                os.kill(host, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def _is_ours(pid: int, agent: str | None) -> bool:
    """Whether ``pid`` still runs (and, for a host, is the host of ``agent``: no pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return agent is None or agent.encode() in cmdline

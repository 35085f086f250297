"""Project-wide test fixtures: every test runs under its own short VOLEE_HOME, and no agent
host a test started outlives it (hosts are detached on purpose, so nothing else ends them)."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import leftovers
from tests.leftovers import end_hosts

# Variables that would make a test talk to a real daemon, harness or desktop of the developer.
_LEAKY = ("VOLEE_AGENT", "VOLEE_HARNESS", "VOLEE_CLAUDE_BIN", "VOLEE_CODEX_BIN", "VOLEE_PI_BIN")
# Every VOLEE_HOME a test used, and the first test that used it (for the leak check).
_HOMES_SEEN: dict[str, str] = {}
# The leak check (tests/leftovers.py): this session's marker, when it started, and when each
# test ran (start, end, id), in the clock process start times are kept in.
_SESSION = uuid.uuid4().hex
_SESSION_START = leftovers.now_ticks()
_TESTS: list[tuple[int, int, str]] = []
os.environ[leftovers.MARKER] = _SESSION


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    began = leftovers.now_ticks()
    # The app's rule (volee_desktop/app/gcguard.py) in every test with Qt: no automatic
    # collection while it runs, one on this (the GUI) thread once its fixtures are gone.
    # Otherwise the collector frees its Qt objects in whichever thread allocates next (the
    # daemon's workers, xdist's receiver): ~QObject on the wrong thread leaves their timers
    # registered, and a later test's processEvents delivered one to freed memory.
    qt = "qapp" in getattr(item, "fixturenames", ())
    was = gc.isenabled()
    if qt:
        gc.disable()
    try:
        yield
    finally:
        if qt:
            gc.collect()
            if was:
                gc.enable()
    _TESTS.append((began, leftovers.now_ticks(), item.nodeid))


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
    # A test that ran `volee` in-process (cli.entry.main) had the dataclasses' methods kept in
    # its home (volee_desktop/dcache.py): the next test starts without it.
    from volee_desktop import dcache

    dcache.uninstall()
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
    for home in homes:
        _HOMES_SEEN.setdefault(home, item.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # This test's homes only (the session's end sweeps every home seen, once).
    for home in item.stash.get(_ITEM_HOMES, set()):
        end_hosts(Path(home))


# What the xdist workers' leak checks found (scripts/dev test runs pytest -n 2): a worker's
# exit status does not reach the run's, so each says it in its output and the controller fails.
_WORKERS_LEFT: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    said = getattr(node, "workeroutput", {}).get("leftovers")
    if said:
        _WORKERS_LEFT.append(str(said))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for home in _HOMES_SEEN:
        end_hosts(Path(home))
    # Whatever a test started must end with it: daemons (started directly or by the CLI's
    # auto-start), hosts, harnesses, MCP servers. A process of this session still alive
    # fails the run, naming the test that started it (then it is killed).
    left = leftovers.settle(_SESSION, _HOMES_SEEN, _TESTS, _SESSION_START)
    if left:
        leftovers.kill(left)
    reports = [f"  {item}" for item in left] + _WORKERS_LEFT
    if reports:
        report = "\n".join(reports)
        workeroutput = getattr(session.config, "workeroutput", None)
        if isinstance(workeroutput, dict):
            workeroutput["leftovers"] = report  # an xdist worker: the controller says it
        message = f"processes left running by tests (killed now):\n{report}"
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "leftover processes", red=True)
            reporter.write_line(message)
        else:
            print(message, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

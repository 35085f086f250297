"""Fixtures for the tray app's tests: offscreen Qt, a temp VOLEE_HOME, a qasync loop, the app."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Before any QApplication exists: without a display, draw offscreen.
# An offscreen platform given with options (a 4 K screen: test_clipping.py) is kept.
if (
    not os.environ.get("DISPLAY")
    and not os.environ.get("WAYLAND_DISPLAY")
    and not os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")
):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"

from tests.fakes.app_link import FakeDaemonLink, World


def end_qloop_timers(loop: Any) -> None:
    """Kill the Qt timers a closed qasync loop still holds, here on the GUI thread.

    qasync kills a handle's timer only when it comes due, a cancelled one too: a 60 s
    ``call_later`` (the memory trimmer's) outlived its test and its loop, and the loop's
    timer object, freed later on another thread, left it registered (gcguard.py). The
    object itself is left to the collection on the GUI thread after the test
    (tests/conftest.py).
    """
    from PySide6.QtWidgets import QApplication

    # A thread's call_soon_threadsafe posted before the close still arrives and adds a timer
    # (which the stopped timer object kills when it comes due): let those arrive first.
    QApplication.processEvents()
    timer = loop._timer
    for timer_id in list(timer._SimpleTimer__callbacks):
        timer.killTimer(timer_id)
    timer._SimpleTimer__callbacks.clear()


@pytest.fixture(autouse=True)
def volee_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    monkeypatch.setenv("VOLEE_HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def qloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop that runs whenever qtbot spins Qt (desktop-testing.md §4, way A)."""
    import qasync

    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    yield loop
    # Not loop.stop(): with no Qt loop running it calls QApplication.exit(), which leaves
    # Qt's quitNow flag set and makes every later wait return at once.
    pending = list(asyncio.all_tasks(loop))
    for task in pending:
        task.cancel()
    deadline = time.monotonic() + 5
    while any(not t.done() for t in pending) and time.monotonic() < deadline:
        qapp.processEvents()  # the cancellations run as Qt timer events
    qapp.aboutToQuit.disconnect(loop._after_run_forever)
    loop._QEventLoop__is_running = False
    asyncio.events._set_running_loop(None)
    loop.close()
    asyncio.set_event_loop(None)
    end_qloop_timers(loop)


@pytest.fixture
def link() -> FakeDaemonLink:
    return FakeDaemonLink()


@pytest.fixture
def world(link: FakeDaemonLink) -> World:
    return World(link)


class Recorder:
    """Collects errors and confirmations the app would show in dialogs."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []
        self.confirms: list[tuple[str, str]] = []
        self.confirm_answer = True
        self.terminals: list[str] = []
        self.terminal_argv: list[str] | None = None
        self.shown: list[Any] = []

    def error(self, title: str, message: str) -> None:
        self.errors.append((title, message))

    def confirm(self, title: str, message: str) -> bool:
        self.confirms.append((title, message))
        return self.confirm_answer

    def terminal(self, agent_id: str) -> list[str] | None:
        self.terminals.append(agent_id)
        return None if self.terminal_argv is None else [*self.terminal_argv, agent_id]


class RecordingSink:
    """A notification sink that records what would be shown."""

    def __init__(self) -> None:
        self.notices: list[Any] = []
        self.activators: list[Any] = []

    async def show(self, notice: Any, activate: Any) -> bool:
        self.notices.append(notice)
        self.activators.append(activate)
        return True


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def controller(
    qtbot: Any,
    qloop: asyncio.AbstractEventLoop,
    link: FakeDaemonLink,
    recorder: Recorder,
    sink: RecordingSink,
    volee_home: Path,
) -> Iterator[Any]:
    """The app's controller attached to the fake daemon, without a tray (offscreen)."""
    from tests.fakes.loginitem import FakeLoginItem
    from volee_desktop.app.controller import AppController, AppOptions

    login = FakeLoginItem()
    options = AppOptions(
        config_path=volee_home / "config" / "config.toml",
        terminal=recorder.terminal,
        login_item=lambda: login,
        sinks=[sink],
        confirm=recorder.confirm,
        show_error=recorder.error,
        use_tray=False,
    )
    ctl = AppController(options)
    ctl.login = login  # type: ignore[attr-defined]
    qtbot.addWidget(ctl.panel)
    task = qloop.create_task(ctl.attach(link))
    qtbot.waitUntil(task.done, timeout=5000)
    task.result()
    yield ctl
    ctl.tasks.cancel_all()
    ctl.close()


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[Any]:
    """An in-memory keyring for every UI test: Settings reads the GitHub token from it, and
    no test touches the real one."""
    import keyring
    from keyring.backends import fail

    from tests.fakes.fake_github import MemoryKeyring

    store = MemoryKeyring()
    keyring.set_keyring(store)
    yield store
    keyring.set_keyring(fail.Keyring())

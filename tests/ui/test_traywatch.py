"""A tray that comes up after the app: the watcher sees it, the window moves into the icon.

Offscreen (no tray ever): the tray's availability is a flag the test flips. The real thing,
trayer started seconds after the app, is in test_realx.py and tests/test_deb.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QObject

from tests.fakes.loginitem import FakeLoginItem
from volee_desktop.app.controller import AppController, AppOptions
from volee_desktop.app.traywatch import TrayWatcher


class Flag:
    def __init__(self) -> None:
        self.up = False
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.up


def test_the_watcher_asks_until_a_tray_is_there_then_tells_once_and_stops(qtbot: Any) -> None:
    flag = Flag()
    watcher = TrayWatcher(flag, interval_ms=10, watch_bus=False)
    seen: list[bool] = []
    watcher.appeared.connect(lambda: seen.append(True))
    watcher.start()
    qtbot.waitUntil(lambda: flag.asked >= 3, timeout=5000)
    assert seen == []
    assert watcher.watching
    flag.up = True
    qtbot.waitUntil(lambda: seen == [True], timeout=5000)
    assert not watcher.watching
    asked = flag.asked
    qtbot.wait(50)
    assert flag.asked == asked  # nothing asks any more once the icon is up
    assert seen == [True]


def _controller(tmp_path: Path, flag: Flag, watchers: list[TrayWatcher]) -> AppController:
    def make(parent: QObject) -> TrayWatcher:
        watcher = TrayWatcher(flag, interval_ms=10, parent=parent, watch_bus=False)
        watchers.append(watcher)
        return watcher

    options = AppOptions(
        config_path=tmp_path / "config.toml",
        login_item=lambda: FakeLoginItem(),
        sinks=[],
        tray_watcher=make,
    )
    return AppController(options)


def test_the_window_moves_into_the_tray_once_one_appears(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    flag = Flag()
    watchers: list[TrayWatcher] = []
    ctl = _controller(tmp_path, flag, watchers)  # offscreen: Qt sees no tray at start
    qtbot.addWidget(ctl.panel)
    try:
        assert not ctl.has_tray
        ctl.show()
        assert ctl.panel.isVisible()
        assert not ctl.panel.popup
        (watcher,) = watchers
        assert watcher.watching
        flag.up = True
        qtbot.waitUntil(lambda: ctl.has_tray, timeout=5000)
        assert ctl.panel.popup
        assert not ctl.panel.isVisible()
        assert not watcher.watching
    finally:
        ctl.close()


def test_closing_the_stand_in_window_quits_instead_of_leaving_an_invisible_process(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    ctl = _controller(tmp_path, Flag(), [])
    qtbot.addWidget(ctl.panel)
    try:
        ctl.show()
        with qtbot.waitSignal(ctl.quit_requested, timeout=5000):
            ctl.panel.close()
        assert ctl.tray_watcher is not None
        assert not ctl.tray_watcher.watching
    finally:
        ctl.close()


def test_closing_the_popup_of_a_tray_does_not_quit(qtbot: Any, qapp: Any, tmp_path: Path) -> None:
    flag = Flag()
    ctl = _controller(tmp_path, flag, [])
    qtbot.addWidget(ctl.panel)
    quits: list[bool] = []
    ctl.quit_requested.connect(lambda: quits.append(True))
    try:
        ctl.show()
        flag.up = True
        qtbot.waitUntil(lambda: ctl.has_tray, timeout=5000)
        ctl.panel.show()
        ctl.panel.close()
        qtbot.wait(20)
        assert quits == []
    finally:
        ctl.close()


OWN_WATCHER = """
import asyncio, sys
from dbus_fast.aio import MessageBus

async def main() -> None:
    bus = await MessageBus(bus_address=sys.argv[1]).connect()
    await bus.request_name("org.kde.StatusNotifierWatcher")
    print("owned", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


@pytest.mark.parametrize("qt_sees_it", [True, False])
def test_a_status_notifier_watcher_appearing_on_the_bus_asks_qt_at_once(
    qtbot: Any, qt_sees_it: bool
) -> None:
    # KDE, GNOME's AppIndicator extension, waybar: their tray is a StatusNotifierWatcher.
    import shutil
    import subprocess
    import sys

    from PySide6.QtDBus import QDBusConnection

    if shutil.which("dbus-daemon") is None:
        pytest.skip("needs dbus-daemon")
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    owner: subprocess.Popen[str] | None = None
    try:
        assert daemon.stdout is not None
        address = daemon.stdout.readline().strip()
        bus = QDBusConnection.connectToBus(address, "volee-traywatch-test")
        assert bus.isConnected()
        flag = Flag()
        # The poll is an hour away: only the bus can make the watcher ask.
        watcher = TrayWatcher(flag, interval_ms=3_600_000, bus=bus)
        watcher.start()
        flag.up = qt_sees_it
        owner = subprocess.Popen(
            [sys.executable, "-c", OWN_WATCHER, address], stdout=subprocess.PIPE, text=True
        )
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == "owned"
        # Qt sees it: into the tray. It does not (its D-Bus tray is chosen once per process):
        # the person is told to start volee again, and the window stays.
        signal = watcher.appeared if qt_sees_it else watcher.next_start
        with qtbot.waitSignal(signal, timeout=10_000):
            pass
        assert flag.asked == 1
        assert watcher.watching is not qt_sees_it
        watcher.stop()
        QDBusConnection.disconnectFromBus("volee-traywatch-test")
    finally:
        for child in (owner, daemon):
            if child is not None:
                child.kill()
                child.wait()
                if child.stdout is not None:
                    child.stdout.close()


def test_a_tray_qt_cannot_use_before_a_restart_is_said_in_the_window(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    watchers: list[TrayWatcher] = []
    ctl = _controller(tmp_path, Flag(), watchers)
    qtbot.addWidget(ctl.panel)
    try:
        ctl.show()
        watchers[0].next_start.emit()
        assert "start volee again" in ctl.panel.status.text()
        assert not ctl.panel.status.isHidden()
        assert not ctl.has_tray
    finally:
        ctl.close()

"""The app's first frame comes before what it does not need for it (issue 27).

A fresh ``volee app`` (the real ``run_app``, the real embedded daemon): the modules loaded
when its first window is painted (the list without a tray, Qt offscreen; the tray icon on
Xvfb + trayer) hold neither the embedded daemon nor the windows and dialogs opened later;
the daemon still comes up inside the app and answers the list after it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from . import desktop as dt

CODE = r"""
import asyncio, json, sys
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

import volee_desktop.app.main as app_main

app = QApplication(["volee"])
app_main.FIRST_FRAME_WAIT = 60.0  # a loaded machine: the order is checked, not the time
seen = {}


class Painted(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and "first" not in seen:
            if obj.isWidgetType() and obj.isWindow():
                seen["first"] = sorted(sys.modules)
                seen["window"] = obj.metaObject().className()
        return False


painted = Painted()
app.installEventFilter(painted)
link_up = app_main.AppSession._link_up


async def linked(self):
    try:
        await link_up(self)
        # Nothing ran between the link coming up and here: the list window, when the icon is
        # the frame, is still to be built; it is built at the loop's next turn.
        seen["list_window_at_link"] = "volee_desktop.app.panel" in sys.modules
        seen["listed"] = await self.link.call("agents.list", {}) is not None
        seen["embedded"] = self.embedded
        await asyncio.sleep(0.5)
        seen["list_window_after"] = self.controller.panel_built
    finally:
        self.quit.set()


app_main.AppSession._link_up = linked
status = app_main.run_app(["volee"])
print(json.dumps({"status": status, **seen}))
"""

#: Loaded only when needed: the daemon once the icon is up, the windows when first opened.
LATER = {
    "volee_desktop.daemon.main",
    "volee_desktop.app.agent_window",
    "volee_desktop.app.conversation",
    "volee_desktop.app.timeline",
    "volee_desktop.app.approval",
    "volee_desktop.app.new_agent",
    "volee_desktop.harness.choices",
    "volee_desktop.app.settings",
    "volee_desktop.app.about",
    "dbus_fast",
    "desktop_notifier",
    "pyte",
    "keyring",
}


def first_frame(env: dict[str, str]) -> tuple[str, set[str], dict[str, bool]]:
    """(the class of the first window painted, the modules loaded then, when its list window
    existed: ``list_window_at_link``, ``list_window_after``) of a fresh app."""
    out = subprocess.run(
        [sys.executable, "-c", CODE],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == 0
    # The daemon came up after the frame, inside the app, and answers the list.
    assert result["listed"] is True
    assert result["embedded"] is True
    first = set(result["first"])
    assert "volee_desktop.app.controller" in first
    built = {k: bool(result[k]) for k in ("list_window_at_link", "list_window_after")}
    return str(result["window"]), first, built


def test_the_list_window_is_painted_before_the_daemon_and_the_dialogs_load() -> None:
    """No tray (offscreen): the list is the first frame."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    _window, first, built = first_frame(env)
    assert not LATER & first, sorted(LATER & first)
    assert "volee_desktop.app.panel" in first  # the list is the frame here
    assert built["list_window_after"]


@pytest.mark.realx
def test_the_tray_icon_is_painted_before_the_daemon_and_the_dialogs_load() -> None:
    """Xvfb + trayer: the icon is the first frame, three fresh starts in a row (the daemon's
    import raced the icon's first paint before it waited for it)."""
    absent = dt.missing()
    if absent:
        pytest.skip(f"real-X tests need {', '.join(absent)} (apt: xvfb trayer dunst ...)")
    desk = dt.Desktop()
    try:
        for _ in range(3):
            home = Path(tempfile.mkdtemp(prefix="vf", dir="/tmp"))
            env = dict(desk.env, VOLEE_HOME=str(home))
            try:
                window, first, built = first_frame(env)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            assert window == "QSystemTrayIconSys"
            assert not LATER & first, sorted(LATER & first)
            # The list window is built once the daemon answers, not before the icon and the
            # daemon's start (issue 27: the start a person waits for), and before a click.
            assert "volee_desktop.app.panel" not in first
            assert not built["list_window_at_link"]
            assert built["list_window_after"]
    finally:
        desk.close()

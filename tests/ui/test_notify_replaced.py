"""A notification server replaced mid-session (issue 28): dunst is killed while volee runs and
xfce4-notifyd takes ``org.freedesktop.Notifications``; the next request's card goes to the new
server, read anew (``GetCapabilities``), and its Allow button answers (a real click)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from volee_desktop.core.states import AgentState

from . import desktop as xd
from . import xfce_desktop as xf
from .desktop import poll
from .test_realx import Driver
from .test_wayland import ARTIFACTS, LOADED, calls

pytestmark = [pytest.mark.realx, pytest.mark.slow]


def test_dunst_replaced_by_xfce4_notifyd_gets_the_next_card_and_its_allow_answers(
    volee_home: Path,
) -> None:
    absent = xd.missing() + xf.missing()
    if absent:
        pytest.skip(f"needs {', '.join(absent)}")
    d = xd.Desktop()
    try:
        app = xd.app_proc(d, volee_home)
        try:
            app.wait_line(r"connected to the volee daemon", LOADED)
            drive = Driver(volee_home)
            first = drive.world.agent("api-fixer", AgentState.WORKING)
            drive.world.ask(first, "Bash", {"command": "pytest -q"})
            drive.send()
            app.wait_line(r"notification server dunst .*actions", LOADED)
            dunst = next(c for c in d.children if c.args[0] == "dunst")
            dunst.kill()
            dunst.wait()
            d.spawn(["openbox"])
            d.spawn([xf.NOTIFYD])
            has = xf.XfceDesktop.has_name
            poll("xfce4-notifyd on the bus", lambda: has(d, "org.freedesktop.Notifications"))  # type: ignore[arg-type]
            other = drive.world.agent("docs-writer", AgentState.WORKING)
            drive.world.ask(other, "Bash", {"command": "make docs"})
            drive.send()
            app.wait_line(r"notification server Xfce Notify Daemon .*actions", LOADED)
            window = xf.XfceDesktop.window

            card = poll("xfce4-notifyd's card", lambda: window(d, "xfce4-notifyd"), LOADED)  # type: ignore[arg-type]
            assert isinstance(card, tuple)
            time.sleep(1)  # drawn (it fades in)
            d.screenshot(ARTIFACTS / "notify-replaced.png")
            request = drive.scratch.registry.agents[other].request
            assert request is not None
            x, y, w, h = card
            d.run("xdotool", "mousemove", str(x + w - 241), str(y + h - 31))
            time.sleep(0.5)  # GTK takes a press only on a button the pointer entered
            d.run("xdotool", "mousedown", "1")
            time.sleep(0.1)
            d.run("xdotool", "mouseup", "1")
            app.wait_line(rf"answered {other} \({request.id}\): allow", LOADED)
            assert {"agent": other, "request": request.id, "always": False} in poll(
                "the allow call", lambda: calls(drive, "agents.allow")
            )
        finally:
            app.kill()
    finally:
        d.close()

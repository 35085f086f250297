"""The real tray on a real X server: Xvfb + trayer (XEmbed) + dunst on a private D-Bus.

The app runs as a process with QT_QPA_PLATFORM=xcb and embeds the fake daemon;
the test drives the daemon over the real socket, clicks with xdotool, watches
Notify calls with dbus-monitor and invokes actions with dunstctl.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs
from volee_desktop.store.codec import event_to_dict

from . import desktop as dt

pytestmark = [pytest.mark.realx, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def desktop() -> Iterator[dt.Desktop]:
    absent = dt.missing()
    if absent:
        pytest.skip(f"real-X tests need {', '.join(absent)} (apt: xvfb trayer dunst ...)")
    d = dt.Desktop()
    try:
        yield d
    finally:
        d.close()


class Driver:
    """Pushes events to the app's embedded daemon, built with World on a scratch link."""

    def __init__(self, home: Path) -> None:
        self.socket = dirs({"VOLEE_HOME": str(home)}).socket
        self.scratch = FakeDaemonLink()
        self.world = World(self.scratch)
        self.world.t = time.time()  # notifications skip facts that are old news

    def send(self) -> None:
        events = [event_to_dict(e) for _, e in self.scratch.log]
        self.scratch.log.clear()
        with Client.connect(self.socket) as client:
            client.call("test.push", events=events)


@pytest.fixture
def fake_terminal(volee_home: Path) -> tuple[Path, Path]:
    record = volee_home / "terminal.txt"
    script = volee_home / "fake-terminal"
    script.write_text(f'#!/bin/sh\necho "$@" >> {record}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, record


def test_tray_icon_is_embedded_and_a_click_opens_the_list(
    desktop: dt.Desktop, volee_home: Path
) -> None:
    app = dt.app_proc(desktop, volee_home)
    try:
        app.wait_line(r"connected to the volee daemon")
        drive = Driver(volee_home)
        a = drive.world.agent("api-fixer", AgentState.WORKING)
        drive.world.agent("docs-writer", AgentState.WORKING)
        drive.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
        drive.send()
        icon = desktop.settled_tray_icon()
        assert isinstance(icon, tuple)
        x, y, w, h = icon
        assert w >= 16, icon
        assert h >= 16, icon
        # The icon is really drawn: its pixels are not the panel's flat tint.
        shot = desktop.screenshot(ARTIFACTS / "realx-tray.png")
        from PySide6.QtGui import QImage

        image = QImage(str(shot))
        colours = {image.pixel(x + i, y + j) for i in range(w) for j in range(h)}
        assert len(colours) > 8, "the tray icon area is blank"
        desktop.click(x + w // 2, y + h // 2)
        app.wait_line(r"agent list shown \(2 agents\)")
        dt.poll("the list window", lambda: desktop.visible("agents"))
        desktop.screenshot(ARTIFACTS / "realx-tray-list.png")
    finally:
        app.kill()


def test_real_notifications_once_with_an_action_that_opens_the_agent_and_none_for_a_stop(
    desktop: dt.Desktop, volee_home: Path, fake_terminal: tuple[Path, Path]
) -> None:
    script, record = fake_terminal
    app = dt.app_proc(desktop, volee_home, TERMINAL=str(script))
    desktop.run("dunstctl", "close-all")
    before = len(desktop.notifies())
    try:
        app.wait_line(r"connected to the volee daemon")
        drive = Driver(volee_home)
        w = drive.world
        fixer = w.agent("api-fixer", AgentState.WORKING)
        writer = w.agent("docs-writer", AgentState.WORKING)
        w.state(fixer, AgentState.NEEDS_INPUT, "permission for Bash")
        drive.send()
        dt.poll("a Notify for api-fixer", lambda: len(desktop.notifies()) > before)
        app.wait_line(
            r"notification: api-fixer asks to use Bash — Bash \(its input was not given\)"
        )

        # Invoking its default action (dunst's "Open") opens that agent: in the terminal.
        desktop.run("dunstctl", "action", "0")
        app.wait_line(rf"notification action Open on {fixer}")
        app.wait_line(rf"opened agent {fixer} in a terminal")
        # The shell creates the file before it writes the line: wait for the line itself.
        dt.poll(
            "the terminal to start",
            lambda: record.exists() and f"attach {fixer}" in record.read_text(),
        )

        # The person stops docs-writer; its program dies of the stop: no notification.
        w.link.push(ev.StopRequested(at=w.tick(), agent=writer))
        w.state(writer, AgentState.FAILED, "killed by SIGTERM")
        w.state(writer, AgentState.STOPPED, "stopped by you")
        # A marker that does notify, so that we know the stop had its chance.
        marker = w.agent("marker", AgentState.WORKING)
        w.state(marker, AgentState.LOST, "its process vanished")
        drive.send()
        app.wait_line(r"notification: marker was lost")
        dt.poll("the marker's Notify", lambda: len(desktop.notifies()) >= before + 2)
        calls = desktop.notifies()[before:]
        titles = [c[2] if len(c) > 2 else "" for c in calls]  # app, icon, summary, body
        assert titles == ["api-fixer asks to use Bash", "marker was lost"], calls
        assert not any("docs-writer" in " ".join(c) for c in calls)
        desktop.screenshot(ARTIFACTS / "realx-notification.png")
    finally:
        app.kill()


#: Waits of the late-tray test: generous, as a loaded machine starts Qt, trayer and the
#: daemon slowly (its 15 s waits ran out once in a full run; alone it takes 3 s).
LOADED = 60.0


def test_the_app_started_before_the_panel_moves_into_its_tray(volee_home: Path) -> None:
    # The login race: the autostart entry runs before the panel. The list shows as a window
    # meanwhile, and moves into the icon as soon as the panel's tray is there.
    absent = dt.missing()
    if absent:
        pytest.skip(f"real-X tests need {', '.join(absent)}")
    late = dt.Desktop(tray=False)
    try:
        app = dt.app_proc(late, volee_home)
        try:
            app.wait_line(r"no system tray here: showing the agent list as a window", LOADED)
            app.wait_line(r"no system tray yet: watching for one", LOADED)
            dt.poll("the list as a window", lambda: late.visible("Agents"), LOADED)
            late.screenshot(ARTIFACTS / "realx-no-tray-yet.png")
            late.start_trayer()
            app.wait_line(r"moved into the system tray", LOADED)
            x, y, w, h = late.settled_tray_icon(timeout=LOADED)
            dt.poll("the window gone", lambda: not late.visible("Agents"), LOADED)
            late.screenshot(ARTIFACTS / "realx-tray-came-late.png")
            late.click(x + w // 2, y + h // 2)
            app.wait_line(r"agent list shown", LOADED)
        finally:
            app.kill()
    finally:
        late.close()


def test_trayer_restarted_while_volee_runs_takes_the_icon_again(volee_home: Path) -> None:
    # The panel crashed and came back: the new owner of the tray selection gets volee's icon
    # (Qt docks again when a manager announces itself), and a click on it opens the list.
    absent = dt.missing()
    if absent:
        pytest.skip(f"real-X tests need {', '.join(absent)}")
    desktop = dt.Desktop()
    try:
        app = dt.app_proc(desktop, volee_home)
        try:
            app.wait_line(r"connected to the volee daemon", LOADED)
            desktop.settled_tray_icon(timeout=LOADED)
            desktop.stop_trayer()
            desktop.start_trayer()
            x, y, w, h = desktop.settled_tray_icon(timeout=LOADED)
            desktop.screenshot(ARTIFACTS / "realx-trayer-restarted.png")
            desktop.click(x + w // 2, y + h // 2)
            app.wait_line(r"agent list shown", LOADED)
            assert app.popen.poll() is None
        finally:
            app.kill()
    finally:
        desktop.close()


def test_display_is_private(desktop: dt.Desktop) -> None:
    assert desktop.display != os.environ.get("DISPLAY")


def test_allow_in_a_dunst_notification_answers_that_request_and_the_card_goes(
    desktop: dt.Desktop, volee_home: Path
) -> None:
    app = dt.app_proc(desktop, volee_home)
    desktop.run("dunstctl", "close-all")
    try:
        app.wait_line(r"connected to the volee daemon")
        drive = Driver(volee_home)
        w = drive.world
        fixer = w.agent("api-fixer", AgentState.WORKING, cwd="/home/me/src/shop-api")
        w.ask(fixer, "Bash", {"command": "rm -rf build/ && pytest -q"})
        drive.send()
        app.wait_line(
            r"notification: api-fixer asks to use Bash — Bash: rm -rf build/ && pytest -q"
            r" / in shop-api · waiting since"
        )
        dt.poll(
            "the card on screen",
            lambda: desktop.run("dunstctl", "count", "displayed").strip() == "1",
        )
        desktop.screenshot(ARTIFACTS / "realx-notification-request.png")
        request = drive.scratch.registry.agents[fixer].request
        assert request is not None
        desktop.choose("Allow")
        app.wait_line(rf"notification action allow on {fixer}")
        app.wait_line(rf"answered {fixer} \({request.id}\): allow")
        offered = desktop.menu_offered()
        for label in ("Allow", "Deny", "Open"):
            assert label in offered, offered

        def allowed() -> list[dict[str, object]]:
            with Client.connect(drive.socket) as client:
                calls = client.call("test.calls")
            return [c["params"] for c in calls if c["method"] == "agents.allow"]

        assert dt.poll("the allow call", allowed) == [
            {"agent": fixer, "request": request.id, "always": False}
        ]
        dt.poll(
            "the card to go",
            lambda: desktop.run("dunstctl", "count", "displayed").strip() == "0",
        )
    finally:
        app.kill()


def test_cards_go_when_their_reason_ends_answered_elsewhere_or_reviewed(
    desktop: dt.Desktop, volee_home: Path
) -> None:
    app = dt.app_proc(desktop, volee_home, TERMINAL="/bin/true")
    desktop.run("dunstctl", "close-all")

    def displayed() -> int:
        return int(desktop.run("dunstctl", "count", "displayed").strip() or 0)

    try:
        app.wait_line(r"connected to the volee daemon")
        drive = Driver(volee_home)
        w = drive.world
        fixer = w.agent("api-fixer", AgentState.WORKING)
        w.ask(fixer, "Bash", {"command": "make deploy"})
        drive.send()
        app.wait_line(r"notification: api-fixer asks to use Bash")
        dt.poll("its card", lambda: displayed() == 1)
        # Answered in the agent's own terminal: it works again, and the card goes.
        w.answered(fixer)
        drive.send()
        dt.poll("the card to go", lambda: displayed() == 0)

        # A mission's card: Review opens the dialog and the card goes.
        w.mission_awaiting("Fix the login bug", 1)
        drive.send()
        app.wait_line(r"notification: A mission waits for your approval")
        dt.poll("the mission's card", lambda: displayed() == 1)
        desktop.run("dunstctl", "action", "0")
        app.wait_line(r"approval dialog of .* shown")
        dt.poll("the mission's card to go", lambda: displayed() == 0)
    finally:
        app.kill()

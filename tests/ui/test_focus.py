"""Open on an agent in the person's own terminal: its tmux pane and X11 window come forward."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.fakes.app_link import World
from tests.fakes.focus import FakeRunner
from tests.polling import wait_until
from volee_desktop.app.focus import Focused, bring_forward, where
from volee_desktop.core import events as ev
from volee_desktop.core.model import Location
from volee_desktop.core.states import AgentState


def test_a_tmux_pane_is_selected_and_its_clients_window_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DISPLAY", ":99")
    runner = FakeRunner(
        {
            "tmux list-panes": "500 work:0.0\n700 work:2.1\n",
            "tmux list-clients": "900\n",
            "xdotool search --onlyvisible --pid 901": "4194307\n",
            "xdotool search": "",
        }
    )
    parents = {100: [100, 700, 600, 1], 900: [900, 901, 1]}
    found = bring_forward(100, runner, lambda p: parents.get(p, []))
    assert found == Focused("tmux+x11", "tmux pane work:2.1, X11 window 4194307")
    assert ["tmux", "select-window", "-t", "work:2.1"] in runner.commands
    assert ["tmux", "select-pane", "-t", "work:2.1"] in runner.commands
    assert ["xdotool", "windowactivate", "4194307"] in runner.commands


def test_without_tmux_the_terminal_emulators_window_is_activated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DISPLAY", ":99")
    runner = FakeRunner(
        {"tmux": None, "xdotool search --onlyvisible --pid 300": "77\n", "xdotool search": ""}
    )
    found = bring_forward(100, runner, lambda p: [100, 200, 300, 1])
    assert found.how == "x11"
    assert ["xdotool", "windowactivate", "77"] in runner.commands


def test_nothing_found_says_so_and_where_it_runs() -> None:
    runner = FakeRunner({"tmux": None, "xdotool": None})
    assert bring_forward(None, runner, lambda p: []).how is None
    assert bring_forward(100, runner, lambda p: []).text == "its process 100 is gone"
    found = bring_forward(100, runner, lambda p: [100, 1])
    assert found == Focused(None, "no tmux pane or X11 window of it was found")
    assert where(100, "/src/api", lambda p: "/dev/pts/3") == (
        "process 100, on /dev/pts/3, in /src/api"
    )


def test_open_on_an_agent_in_its_own_terminal_brings_it_forward_or_says_where(
    controller: Any, world: World, qtbot: Any, recorder: Any
) -> None:
    seen: list[int | None] = []

    def focus(pid: int | None) -> Focused:
        seen.append(pid)
        return Focused("tmux", "tmux pane work:1.0") if len(seen) == 1 else Focused(None, "none")

    controller.actions.focus = focus
    a = world.agent("mine", AgentState.NEEDS_INPUT, "permission for Bash", location=None)
    world.link.push(
        ev.LocationChanged(at=world.tick(), agent=a, location=Location.TERMINAL, pid=4242)
    )
    with qtbot.waitSignal(controller.opened) as opened:
        controller.actions.run("open", a)
    assert opened.args == [a, "forward"]
    assert seen == [4242]
    assert recorder.terminals == []  # no volee attach: it has no volee host
    with qtbot.waitSignal(controller.opened) as opened:
        controller.actions.run("open", a)
    assert opened.args == [a, "where"]
    title, message = recorder.errors[-1]
    assert title == "mine runs in your own terminal"
    assert "process 4242" in message
    assert controller.actions.windows == {}


# --- with the real tmux ------------------------------------------------------------------------


@pytest.fixture
def tmux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux")
    folder = tmp_path / "tmux"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("TMUX_TMPDIR", str(folder))  # its own server, never the person's
    monkeypatch.delenv("TMUX", raising=False)
    base = ["tmux", "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-s", "vt", "-x", "80", "-y", "24", "bash -c 'sleep 300; :'"],
        check=True,
    )
    subprocess.run([*base, "new-window", "-t", "vt", "bash -c 'sleep 301; :'"], check=True)
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], check=False)


def test_the_real_tmux_pane_of_an_agent_comes_forward(tmux: list[str]) -> None:
    def pane_pid(target: str) -> int:
        out = subprocess.run(
            [*tmux, "display-message", "-p", "-t", target, "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out.strip())

    def active() -> str:
        return subprocess.run(
            [*tmux, "display-message", "-p", "-t", "vt", "#{window_index}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    assert active() == "1"  # the new window is in front
    shell = psutil.Process(pane_pid("vt:0"))
    agent = wait_until(lambda: shell.children(), what="the agent under the pane's shell")[0]
    found = bring_forward(agent.pid)
    assert found.how is not None
    assert found.how.startswith("tmux"), found
    assert "vt:0.0" in found.text
    assert active() == "0"


# --- with a real X server ------------------------------------------------------------------------


@pytest.mark.realx
@pytest.mark.slow
def test_the_real_x11_window_of_an_agents_terminal_gets_the_focus() -> None:
    from . import desktop as dt

    absent = dt.missing()
    if absent:
        pytest.skip(f"needs {', '.join(absent)}")
    desk = dt.Desktop()
    terminal = None
    try:
        # A stand-in terminal emulator: an X window (Qt sets _NET_WM_PID) running a child.
        code = (
            "import subprocess,sys\n"
            "from PySide6.QtWidgets import QApplication, QLabel\n"
            "app = QApplication([]); w = QLabel('terminal'); w.setWindowTitle('fake-term');"
            " w.show()\n"
            "child = subprocess.Popen(['sleep', '300'])\n"
            "print(child.pid, flush=True)\n"
            "app.exec()\n"
        )
        terminal = subprocess.Popen(
            [sys.executable, "-c", code],
            env={**desk.env, "QT_QPA_PLATFORM": "xcb"},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert terminal.stdout is not None
        agent_pid = int(terminal.stdout.readline())
        dt.poll("its window", lambda: desk.visible("fake-term"))
        os.environ["DISPLAY"] = desk.display
        try:
            found = bring_forward(agent_pid)
        finally:
            os.environ.pop("DISPLAY", None)
        assert found.how == "x11", found
        window = found.text.rsplit(" ", 1)[-1]
        assert desk.run("xdotool", "getwindowfocus").strip() == window
    finally:
        if terminal is not None:
            for child in psutil.Process(terminal.pid).children(recursive=True):
                child.kill()
            terminal.kill()
            terminal.wait()
            if terminal.stdout is not None:
                terminal.stdout.close()
        desk.close()


def test_open_on_an_agent_in_the_background_says_where_it_runs(
    controller: Any, world: World, qtbot: Any, recorder: Any
) -> None:
    a = world.agent("bg", AgentState.WORKING, location=None)
    world.link.push(
        ev.LocationChanged(at=world.tick(), agent=a, location=Location.BACKGROUND, pid=4343)
    )
    with qtbot.waitSignal(controller.opened) as opened:
        controller.actions.run("open", a)
    assert opened.args == [a, "where"]
    assert recorder.errors[-1][0] == "bg runs in the background"
    assert "process 4343" in recorder.errors[-1][1]

"""Takes the all-day screenshots (issue 26) on a throwaway real-X desktop with openbox.

    .venv/bin/python tests/ui/screenshots_day.py [out-folder]

The list pinned ("Keep open", remembered in list.json: it opens at the start as a framed
window), a turn that ended on a denial in it, a multi-selection, and the agent window
with Claude Code's dialog and its options in view.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.app_link import FakeDaemonLink, World
from ui import desktop as dt
from ui.screenshots import CLAUDE_SCREEN, OUT, call, geometry, populate, send, window_of
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.paths import dirs


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    desk = dt.Desktop(1280, 800)
    if shutil.which("openbox"):
        desk.spawn(["openbox"])  # frames: a pinned list is a window of the desktop
    home = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    state = dirs({"VOLEE_HOME": str(home)}).state
    state.mkdir(parents=True, exist_ok=True)
    (state / "list.json").write_text(
        json.dumps({"pinned": True, "size": [620, 640], "pos": [620, 60]})
    )
    app = dt.app_proc(desk, home, TERMINAL="/bin/true")
    try:
        app.wait_line(r"connected to the volee daemon")
        socket = dirs({"VOLEE_HOME": str(home)}).socket
        link = FakeDaemonLink()
        w = World(link)
        populate(w)
        # A turn that ended on a denial: asked, denied through volee, the turn ended.
        w.t = time.time() - 180
        cleaner = w.agent("build-cleaner", AgentState.WORKING, cwd="/home/me/src/shop-web")
        w.ask(cleaner, "Bash", {"command": "rm -rf build", "description": "Clean the build"})
        request = link.registry.agents[cleaner].request
        assert request is not None
        w.link.push(
            ev.RequestAnswered(at=w.tick(), agent=cleaner, request=request.id, answer="deny")
        )
        w.state(cleaner, AgentState.WORKING)
        w.state(cleaner, AgentState.DONE, "")
        # One asking, with Claude Code's dialog on its screen.
        w.t = time.time() - 30
        fixer = w.agent("api-fixer", AgentState.WORKING, cwd="/home/me/src/shop-api", location=None)
        w.ask(
            fixer,
            "Bash",
            {"command": "rm -rf build/ && pytest -q", "description": "Clean and test"},
        )
        send(socket, link)
        call(socket, "test.screen", agent=fixer, lines=[*(["…"] * 60), *CLAUDE_SCREEN])
        time.sleep(1.0)
        desk.run("dunstctl", "close-all")
        wid = window_of(desk, "Agents — volee")
        time.sleep(1.0)
        shot = ("import", "-window", "root", "-crop", "660x720+600+20")
        desk.run(*shot, str(out / "list-pinned.png"))
        # A multi-selection: a click, a Shift-click, a Ctrl-click on the rows.
        x, y, _w, _h = geometry(desk, wid)
        desk.run("xdotool", "mousemove", str(x + 280), str(y + 220), "click", "1")
        desk.run("xdotool", "keydown", "shift", "mousemove", str(x + 280), str(y + 278))
        desk.run("xdotool", "click", "1", "keyup", "shift")
        desk.run("xdotool", "keydown", "ctrl", "mousemove", str(x + 280), str(y + 452))
        desk.run("xdotool", "click", "1", "keyup", "ctrl")
        time.sleep(0.8)
        desk.run(
            "import", "-window", "root", "-crop", "660x720+600+20", str(out / "list-multi.png")
        )
        desk.run("xdotool", "key", "--window", wid, "Escape")
        # The agent window over its dialog: Enter on the asking agent opens it (no terminal).
        desk.run("dunstctl", "close-all")
        desk.run("xdotool", "key", "--window", wid, "ctrl+n")
        desk.run("xdotool", "key", "--window", wid, "Return")
        try:
            app_window = window_of(desk, "api-fixer — volee")
        except Exception:
            app_window = None
        if app_window is not None:
            time.sleep(2.0)
            desk.run("import", "-window", app_window, str(out / "agent-window-dialog.png"))
        print(f"screenshots written to {out}")
    finally:
        app.kill()
        desk.close()


if __name__ == "__main__":
    main()

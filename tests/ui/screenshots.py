"""Takes the screenshots in docs/screenshots/ on a throwaway real-X desktop.

    .venv/bin/python tests/ui/screenshots.py [out-folder]

Xvfb + trayer + dunst; the real app embeds the fake daemon, which is fed a
realistic set of agents and a mission waiting for approval.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.app_link import FakeDaemonLink, World
from ui import desktop as dt
from volee_desktop.core import events as ev
from volee_desktop.core.model import Location
from volee_desktop.core.states import AgentState
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs
from volee_desktop.store.codec import event_to_dict

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def send(socket: Path, link: FakeDaemonLink) -> None:
    events = [event_to_dict(e) for _, e in link.log]
    link.log.clear()
    with Client.connect(socket) as client:
        client.call("test.push", events=events)


def populate(w: World) -> dict[str, str]:
    """A morning's worth of agents; returns name -> id."""
    ids: dict[str, str] = {}

    def agent(
        name: str,
        state: AgentState,
        detail: str,
        cwd: str,
        activity: str = "",
        ago: float = 60.0,
        **kw: object,
    ) -> str:
        w.t = time.time() - ago
        agent_id = w.agent(name, AgentState.WORKING, "", cwd=cwd, **kw)  # type: ignore[arg-type]
        if activity:
            w.activity(agent_id, activity)
        if state is not AgentState.WORKING or detail:
            w.state(agent_id, state, detail)
        ids[name] = agent_id
        return agent_id

    agent(
        "refactor-db",
        AgentState.FAILED,
        "API error 529: overloaded",
        "~/src/shop-api",
        "Edit: db/models.py",
        ago=1500,
    )
    agent(
        "docs-writer",
        AgentState.WORKING,
        "Write: docs/deploy.md",
        "~/src/shop-docs",
        "Write: docs/deploy.md",
        ago=540,
    )
    agent(
        "perf-probe",
        AgentState.WORKING,
        "Bash: pytest -q tests/perf",
        "~/src/shop-api",
        "Bash: pytest -q tests/perf",
        ago=95,
    )
    agent(
        "release-notes",
        AgentState.DONE,
        "finished its task",
        "~/src/shop-web",
        "Write: CHANGELOG.md",
        ago=2400,
    )
    night = agent(
        "nightly-migration",
        AgentState.WORKING,
        "",
        "~/src/shop-api",
        "Bash: alembic upgrade head",
        ago=7300,
        location=Location.HOST,
    )
    w.link.push(ev.InterruptionDetected(at=w.tick(1), agent=night, cause="machine-restarted"))
    w.link.push(
        ev.RecoveryDecided(
            at=w.tick(1),
            agent=night,
            outcome="stopped",
            rule=7,
            reason="its work is 2 h old (resume_max_age 1h)",
            action="resume",
        )
    )
    w.state(night, AgentState.STOPPED, "interrupted: the machine restarted")
    agent("scratch", AgentState.IDLE, "", "~/tmp/scratch", ago=5000)
    agent("old-spike", AgentState.LOST, "its process vanished", "~/src/spikes", ago=86000)
    return ids


def crop(desk: dt.Desktop, path: Path, w: int, h: int, x: int, y: int) -> None:
    desk.run("import", "-window", "root", "-crop", f"{w}x{h}+{x}+{y}", "+repage", str(path))


CLAUDE_SCREEN = [
    "╭───────────────────────────────────────────────────╮",
    "│ ✻ Welcome to Claude Code!                         │",
    "│   cwd: /home/me/src/shop-api                      │",
    "╰───────────────────────────────────────────────────╯",
    "",
    "> the API tests fail after the refactor; clean the build and run them",
    "",
    "● I'll clean the build directory and run the test suite.",
    "",
    "● Bash(rm -rf build/ && pytest -q)",
    "  ⎿  Running…",
    "",
    "╭──────────────────────────────────────────────────────────────────────────╮",
    "│ Bash command                                                             │",
    "│                                                                          │",
    "│   rm -rf build/ && pytest -q                                             │",
    "│   Clean the build and run the tests                                      │",
    "│                                                                          │",
    "│ Do you want to proceed?                                                  │",
    "│ ❯ 1. Yes                                                                 │",
    "│   2. Yes, and don't ask again for rm commands in /home/me/src/shop-api   │",
    "│   3. No, and tell Claude what to do differently (esc)                    │",
    "╰──────────────────────────────────────────────────────────────────────────╯",
]


def call(socket: Path, method: str, **params: object) -> object:
    with Client.connect(socket) as client:
        return client.call(method, **params)


def window_of(desk: dt.Desktop, title: str) -> str:
    dt.poll(title, lambda: desk.visible(title))
    return desk.run("xdotool", "search", "--onlyvisible", "--name", title).split()[0]


def geometry(desk: dt.Desktop, wid: str) -> tuple[int, int, int, int]:
    """(x, y, w, h) of a window on the screen."""
    out = desk.run("xdotool", "getwindowgeometry", "--shell", wid)
    values = dict(line.split("=", 1) for line in out.split() if "=" in line)
    return (int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"]))


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    desk = dt.Desktop(1280, 800)
    home = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    app = dt.app_proc(desk, home, TERMINAL="/bin/true")
    try:
        app.wait_line(r"connected to the volee daemon")
        socket = dirs({"VOLEE_HOME": str(home)}).socket
        link = FakeDaemonLink()
        w = World(link)
        populate(w)
        send(socket, link)
        time.sleep(1.0)  # let any start-up notifications land, then clear them
        desk.run("dunstctl", "close-all")

        # 1. A notification: an agent asks to run a command.
        w.t = time.time() - 200
        fixer = w.agent("api-fixer", AgentState.WORKING, cwd="/home/me/src/shop-api", location=None)
        w.link.push(ev.WorkspaceUpdated(at=w.tick(), agent=fixer, branch="fix/api-tests"))
        w.activity(fixer, "Bash: pytest -q tests/api")
        w.t = time.time() - 2
        w.ask(
            fixer,
            "Bash",
            {
                "command": "rm -rf build/ && pytest -q",
                "description": "Clean the build and run the tests",
            },
        )
        send(socket, link)
        call(socket, "test.screen", agent=fixer, lines=CLAUDE_SCREEN)
        app.wait_line(r"notification: api-fixer asks to use Bash")
        time.sleep(0.8)
        crop(desk, out / "notification.png", 420, 160, 860, 0)
        desk.run("dunstctl", "close-all")

        # Two more ask, and a mission waits for approval: the badge, the menu, the list.
        w.t = time.time() - 75
        schema = w.agent("schema-design", AgentState.WORKING, cwd="/home/me/src/shop-db")
        w.ask(
            schema,
            "AskUserQuestion",
            {
                "questions": [
                    {
                        "question": "Which database for the new service?",
                        "options": [{"label": "Postgres"}, {"label": "SQLite"}],
                    }
                ]
            },
        )
        w.t = time.time() - 40
        web = w.agent("web-lint", AgentState.WORKING, cwd="/home/me/src/shop-web")
        w.ask(
            web,
            "Edit",
            {
                "file_path": "/home/me/src/shop-web/src/app.tsx",
                "old_string": "a",
                "new_string": "b",
            },
        )
        w.t = time.time() - 300
        w.mission_awaiting("Fix the login redirect loop on Safari", 2)
        send(socket, link)
        time.sleep(1.0)
        desk.run("dunstctl", "close-all")

        # 2. The tray menu (right click), the first agent's submenu open.
        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2, button=3)
        time.sleep(0.8)
        menus = [
            geometry(desk, wid)
            for wid in desk.run("xdotool", "search", "--onlyvisible", "--class", "volee").split()
        ]
        mx, my, _mw, _mh = max(menus, key=lambda g: g[2] * g[3])  # the menu, not the icon
        # Its fourth row: the first agent that needs you; hovering opens its submenu.
        desk.run("xdotool", "mousemove", str(mx + 120), str(my + 76))
        time.sleep(1.0)
        crop(desk, out / "tray-menu.png", 1000, 300, 280, 0)
        desk.run("xdotool", "key", "Escape", "key", "Escape")
        time.sleep(0.5)

        # 3. The list (left click): the mission to approve on top, the selected agent's request.
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        time.sleep(0.8)
        crop(desk, out / "tray-list.png", 640, 600, 640, 0)
        desk.run("xdotool", "key", "Escape")
        time.sleep(0.5)

        # 4. The agent window, opened from its notification: its screen and its request.
        w.state(fixer, AgentState.WORKING)
        w.ask(
            fixer,
            "Bash",
            {
                "command": "rm -rf build/ && pytest -q",
                "description": "Clean the build and run the tests",
            },
        )
        send(socket, link)
        app.wait_line(r"notification: api-fixer asks to use Bash")
        time.sleep(0.5)
        desk.run("dunstctl", "action", "0")
        app.wait_line(r"opened agent .*: output view")
        wid = window_of(desk, "api-fixer — volee")
        time.sleep(1.5)
        desk.run("import", "-window", wid, str(out / "agent-window.png"))
        desk.run("xdotool", "windowunmap", wid)

        # 5. The mission's approval dialog, from the tray menu, with a worker's diff.
        desk.click(x + iw // 2, y + ih // 2, button=3)
        time.sleep(0.8)
        desk.run("xdotool", "mousemove", str(mx + 120), str(my + 32), "click", "1")
        app.wait_line(r"approval dialog of .* shown")
        wid = window_of(desk, "Review mission")
        time.sleep(0.8)
        # The first worker is selected: Alt+D ("Show the diff") reads its diff from git.
        desk.run("xdotool", "key", "--window", wid, "alt+d")
        time.sleep(1.0)
        desk.run("import", "-window", wid, str(out / "approval.png"))
        print(f"screenshots written to {out}")
    finally:
        app.kill()
        desk.close()


if __name__ == "__main__":
    main()

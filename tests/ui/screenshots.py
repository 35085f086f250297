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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ui import desktop as dt
from ui.fakes import FakeDaemonLink, World
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

        # 1. A notification: an agent starts to wait for a permission.
        w.t = time.time() - 200
        fixer = w.agent("api-fixer", AgentState.WORKING, cwd="~/src/shop-api")
        w.activity(fixer, "Bash: pytest -q tests/api")
        w.t = time.time() - 2
        w.state(fixer, AgentState.NEEDS_INPUT, "permission for Bash: rm -rf build/")
        send(socket, link)
        app.wait_line(r"notification: api-fixer")
        time.sleep(0.8)
        crop(desk, out / "notification.png", 420, 160, 860, 0)
        desk.run("dunstctl", "close-all")

        # 2. The tray and the list, opened by a click on the icon.
        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        time.sleep(0.8)
        crop(desk, out / "tray-list.png", 580, 580, 700, 0)
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list hidden")

        # 3. A mission waits for approval: its notification's action opens the dialog.
        w.t = time.time() - 120
        w.mission_awaiting("Fix the login redirect loop on Safari", 2)
        send(socket, link)
        app.wait_line(r"notification: A mission waits for your approval")
        time.sleep(0.5)
        desk.run("dunstctl", "action", "0")
        app.wait_line(r"approval dialog of .* shown")
        dt.poll("the dialog", lambda: desk.visible("Review mission"))
        time.sleep(0.8)
        wid = desk.run("xdotool", "search", "--onlyvisible", "--name", "Review mission").split()[0]
        desk.run("import", "-window", wid, str(out / "approval.png"))
        print(f"screenshots written to {out}")
    finally:
        app.kill()
        desk.close()


if __name__ == "__main__":
    main()

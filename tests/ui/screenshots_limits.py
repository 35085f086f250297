"""Screenshots of agents a usage limit stopped (docs/screenshots/limits-*.png, docs/limits.md).

    .venv/bin/python tests/ui/screenshots_limits.py [out-folder]

Xvfb + trayer + dunst, the real app embedding the fake daemon (as tests/ui/screenshots.py):
thirty agents, twenty-seven of them limited with one reset, three working (one retrying), and
the plan's meter as a claude.ai login's status line reports it.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.app_link import World
from ui import desktop as dt
from ui.screenshots import OUT, send, window_of
from volee_desktop.core import events as ev
from volee_desktop.core.model import LimitKind
from volee_desktop.core.states import AgentState
from volee_desktop.paths import dirs

PROJECTS = ("shop-api", "shop-web", "shop-docs", "infra")


def populate(w: World) -> None:
    now = time.time()
    reset = (int(now) // 60 + 133) * 60.0  # in about 2 h 13 min, on a minute
    for i in range(27):
        w.t = now - 400 + i
        a = w.agent(f"worker-{i:02d}", AgentState.WORKING, cwd=f"/home/me/src/{PROJECTS[i % 4]}")
        w.activity(a, "Bash: pytest -q tests/unit")
        w.state(a, AgentState.IDLE, "limited: 5-hour limit")
        w.link.push(
            ev.LimitHit(
                at=w.tick(), agent=a, kind=LimitKind.FIVE_HOUR, resets_at=reset, ended=True
            ),
            ev.PlanUsed(
                at=w.tick(), agent=a, five_hour=1.0, five_hour_resets_at=reset, seven_day=0.64
            ),
        )
    w.t = now - 20
    retrying = w.agent("migrate-orders", AgentState.WORKING, cwd="/home/me/src/shop-api")
    w.link.push(
        ev.LimitHit(
            at=w.tick(),
            agent=retrying,
            kind=LimitKind.FIVE_HOUR,
            resets_at=reset,
            attempt=4,
            attempts=10,
        )
    )
    w.state(retrying, AgentState.WORKING, "retrying: 5-hour limit, attempt 4/10")
    for name in ("docs-writer", "lint-fixer"):
        a = w.agent(name, AgentState.WORKING, cwd="/home/me/src/shop-web")
        w.activity(a, "Edit: src/app.tsx")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    desk = dt.Desktop(1280, 900)
    home = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    app = dt.app_proc(desk, home, TERMINAL="/bin/true")
    try:
        app.wait_line(r"connected to the volee daemon")
        socket = dirs({"VOLEE_HOME": str(home)}).socket
        from tests.fakes.app_link import FakeDaemonLink

        link = FakeDaemonLink()
        populate(World(link))
        send(socket, link)
        time.sleep(2.5)
        desk.run(
            "import",
            "-window",
            "root",
            "-crop",
            "520x160+760+0",
            str(out / "limits-notification.png"),
        )
        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        wid = window_of(desk, "Agents — volee")
        time.sleep(1.0)
        desk.run("import", "-window", wid, str(out / "limits-list.png"))
        print(f"screenshots written to {out}")
    finally:
        app.kill()
        desk.close()


if __name__ == "__main__":
    main()

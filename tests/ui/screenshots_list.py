"""Screenshots of the list with sixty agents across four projects (docs/screenshots/list-*.png).

    .venv/bin/python tests/ui/screenshots_list.py [out-folder]

Xvfb + trayer + dunst, the real app embedding the fake daemon (as tests/ui/screenshots.py);
the modes are chosen with the list's own keys (Ctrl+K compact, Ctrl+G grouping).
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
from volee_desktop.core.states import AgentState
from volee_desktop.paths import dirs

PROJECTS = ("shop-api", "shop-web", "shop-docs", "infra")
ACTIVITIES = (
    "Bash: pytest -q tests/unit",
    "Edit: src/checkout/cart.py",
    "Read: src/payments/stripe.py",
    "Bash: npm run lint -- --fix",
    "Grep: TODO\\(perf\\)",
    "Write: docs/runbook.md",
)


def populate(w: World) -> None:
    """Sixty agents: 2 asking, 1 crash loop, 46 bulk workers, a few done, idle or stopped."""
    now = time.time()

    def agent(name: str, project: str, ago: float, state: AgentState, detail: str = "") -> str:
        w.t = now - ago
        agent_id = w.agent(name, AgentState.WORKING, cwd=f"/home/me/src/{project}")
        if state is not AgentState.WORKING or detail:
            w.state(agent_id, state, detail)
        return agent_id

    for i in range(46):
        project = PROJECTS[i % 4]
        a = agent(f"bulk-worker-{i:02d}", project, 60 + 37 * i, AgentState.WORKING)
        w.t = now - 20 - i
        w.activity(a, ACTIVITIES[i % len(ACTIVITIES)])
        share = 0.08 + (i * 0.017) % 0.7
        w.link.push(
            ev.ContextUsed(at=w.tick(), agent=a, share=round(share, 2), cost_usd=0.05 + i * 0.03)
        )
    long = agent("migrate-orders", "shop-api", 3 * 3600, AgentState.WORKING)
    w.activity(long, "Bash: alembic upgrade head")
    w.link.push(ev.ContextUsed(at=w.tick(), agent=long, share=0.91, cost_usd=4.12))
    search = agent("search-reindex", "infra", 2 * 3600, AgentState.WORKING)
    w.activity(search, "Bash: ./scripts/reindex --all")
    w.link.push(ev.ContextUsed(at=w.tick(), agent=search, share=0.46, cost_usd=1.87))
    agent(
        "flaky-e2e",
        "shop-web",
        400,
        AgentState.FAILED,
        "crashed 3 times in a row (restart budget spent): exit status 1 — "
        "Error: connect ECONNREFUSED 127.0.0.1:5432 (reply to continue)",
    )
    for i, project in enumerate(PROJECTS):
        agent(f"done-{project}", project, 900 + 60 * i, AgentState.DONE, "Tests pass, pushed.")
    for i in range(4):
        agent(f"idle-{i}", PROJECTS[(i + 1) % 4], 5000 + i, AgentState.IDLE)
    stopped = agent("spike-graphql", "shop-api", 7000, AgentState.WORKING)
    w.link.push(ev.StopRequested(at=w.tick(), agent=stopped))
    w.link.push(
        ev.StateChanged(
            at=w.tick(), agent=stopped, state=AgentState.STOPPED, detail="stopped by you"
        )
    )
    asks = agent("api-fixer", "shop-api", 200, AgentState.WORKING)
    w.activity(asks, "Bash: pytest -q tests/api")
    w.t = now - 30
    w.ask(asks, "Bash", {"command": "rm -rf build/ && pytest -q"})
    web = agent("web-lint", "shop-web", 100, AgentState.WORKING)
    w.t = now - 10
    w.ask(web, "Edit", {"file_path": "/home/me/src/shop-web/src/app.tsx"})


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
        time.sleep(1.5)
        desk.run("dunstctl", "close-all")
        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        wid = window_of(desk, "Agents — volee")
        time.sleep(0.8)

        def shot(name: str, *keys: str) -> None:
            for key in keys:
                desk.run("xdotool", "key", "--window", wid, key)
                time.sleep(0.3)
            time.sleep(0.6)
            desk.run("import", "-window", wid, str(out / name))

        shot("list-full.png")  # today's three-line rows
        shot("list-compact.png", "ctrl+k")  # one line per agent
        shot("list-grouped.png", "ctrl+g", "ctrl+g")  # compact, grouped by project
        shot("list-by-state.png", "ctrl+k", "ctrl+g", "ctrl+g")  # full rows, by state
        # A filter says so, and shows beneath it what needs you or failed.
        desk.run("xdotool", "key", "--window", wid, "ctrl+g", "ctrl+k")
        desk.run("xdotool", "type", "--window", wid, "docs")
        shot("list-filtered.png")
        print(f"screenshots written to {out}")
    finally:
        app.kill()
        desk.close()


if __name__ == "__main__":
    main()

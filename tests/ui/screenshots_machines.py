"""Screenshots of other machines' agents in the list (docs/screenshots/machines-*.png,
docs/machines.md).

    .venv/bin/python tests/ui/screenshots_machines.py [out-folder]

Xvfb + trayer + dunst, the real app embedding the fake daemon (as tests/ui/screenshots.py):
two agents on this machine, three on ``devbox`` (one asking a permission) and two on
``gpu-box``, grouped by machine; then ``gpu-box`` drops off and its rows grey as
"gpu-box unreachable since HH:MM". The other machines come as the daemon's ``machines``
push (``test.machines``), the way its machines feed sends them.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.app_link import FakeDaemonLink, World, machine_entry
from ui import desktop as dt
from ui.screenshots import OUT, send, window_of
from volee_desktop.core.states import AgentState
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs


def machine(first_id: int) -> World:
    """Another machine's registry (its ids unlike this machine's, as ULIDs are)."""
    world = World(FakeDaemonLink())
    world.ids._n = itertools.count(first_id)
    world.t = time.time() - 900
    return world


def populate(here: World, devbox: World, gpu: World) -> None:
    here.t = time.time() - 600
    a = here.agent("docs-writer", cwd="/home/me/src/shop-docs")
    here.activity(a, "Edit: docs/checkout.md")
    b = here.agent("lint-fixer", cwd="/home/me/src/shop-web")
    here.state(b, AgentState.IDLE, "waiting for your next message")
    for name, activity in (("api-fixer", ""), ("migrate-orders", "Bash: alembic upgrade head")):
        a = devbox.agent(name, cwd="/srv/src/shop-api")
        if activity:
            devbox.activity(a, activity)
    asker = devbox.agent("load-test", cwd="/srv/src/shop-api")
    devbox.ask(asker, "Bash", {"command": "docker compose up -d postgres redis"})
    for name in ("train-ranker", "eval-ranker"):
        a = gpu.agent(name, cwd="/data/ranker")
        gpu.activity(a, "Bash: python train.py --epochs 12")


def push_machines(socket: Path, *entries: dict[str, Any]) -> None:
    with Client.connect(socket) as client:
        client.call("test.machines", machines=list(entries), removed=[])


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    desk = dt.Desktop(1280, 900)
    home = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    app = dt.app_proc(desk, home, TERMINAL="/bin/true")
    try:
        app.wait_line(r"connected to the volee daemon")
        socket = dirs({"VOLEE_HOME": str(home)}).socket
        here, devbox, gpu = World(FakeDaemonLink()), machine(1000), machine(2000)
        populate(here, devbox, gpu)
        send(socket, here.link)
        now = time.time()
        up = machine_entry("devbox", devbox.link.registry, since=now - 3600)
        push_machines(socket, up, machine_entry("gpu-box", gpu.link.registry, since=now - 3600))
        time.sleep(1.5)
        desk.run("dunstctl", "close-all")
        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        wid = window_of(desk, "Agents — volee")
        time.sleep(0.8)
        for _ in range(3):  # No groups → by state → by project → by machine
            desk.run("xdotool", "key", "--window", wid, "ctrl+g")
            time.sleep(0.3)
        time.sleep(0.6)
        desk.run("import", "-window", wid, str(out / "machines-list.png"))
        down = machine_entry("gpu-box", gpu.link.registry, reachable=False, since=now - 300)
        down["problem"] = "ssh: connect to host gpu-box port 22: Connection timed out"
        since = time.strftime("%H:%M", time.localtime(now - 300))
        down["unreachable"] = f"gpu-box is unreachable since {since} ({down['problem']})"
        push_machines(socket, up, down)
        time.sleep(1.2)
        desk.run("import", "-window", wid, str(out / "machines-unreachable.png"))
        print(f"screenshots written to {out}")
    finally:
        app.kill()
        desk.close()


if __name__ == "__main__":
    main()

"""The list with 3 machines x 20 agents (issue 24): time to open it, and to take the
``machines`` push that brings the other machines' agents.

    .venv/bin/python bench/machines_list.py [--per 20]

In-process and offscreen, as the list figures of docs/performance.md: this machine's 20
agents through ``FakeDaemonLink``, ``devbox``'s and ``gpu-box``'s 20 each as a feed's first
``machines`` push (whole, as ``daemon/machines/feed.py`` sends it) taken by the app's
``LiveRegistry``; then the list opened (show, lay out, paint) 5 times in each grouping (none,
by machine) and full/compact, median and first.  Not over ssh: what crosses the wire is
measured by bench/machines.py; this is the app's side of a list of three machines.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from opening import open_times  # noqa: E402  (bench/, the script's folder)

from tests.fakes.app_link import FakeDaemonLink, World, machine_entry  # noqa: E402
from volee_desktop.core.states import AgentState  # noqa: E402

STATES = (AgentState.WORKING, AgentState.NEEDS_INPUT, AgentState.IDLE, AgentState.DONE)


def fill(world: World, n: int, where: str) -> None:
    world.t = time.time() - 3600
    for i in range(n):
        state = STATES[i % 4]
        world.agent(f"{where}-{i:02d}", state, "Bash: pytest -q tests/", cwd=f"/src/p{i % 4}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per", type=int, default=20, help="agents per machine")
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.agent_model import AgentListModel
    from volee_desktop.app.list_rows import Grouping
    from volee_desktop.app.live import LiveRegistry
    from volee_desktop.app.panel import AgentPanel

    app = QApplication.instance() or QApplication([])
    link = FakeDaemonLink()
    here = World(link)
    live = LiveRegistry()
    model = AgentListModel()
    live.observe(model)
    link.listener = live
    fill(here, args.per, "here")
    others = []
    for name, first in (("devbox", 10_000), ("gpu-box", 20_000)):
        world = World(FakeDaemonLink())
        world.ids._n = itertools.count(first)  # other ids, as ULIDs are
        fill(world, args.per, name)
        others.append(machine_entry(name, world.link.registry, since=time.time() - 3600))
    t0 = time.perf_counter()
    live.on_machines({"machines": others, "removed": []})
    app.processEvents()
    took = (time.perf_counter() - t0) * 1000
    rows = model.rowCount()
    print(f"3 machines x {args.per} agents: {rows} rows; the first machines push taken in "
          f"{took:.1f} ms")  # fmt: skip
    panel = AgentPanel(model, popup=False, prefs_path=None)
    app.processEvents()
    for grouping in (Grouping.NONE, Grouping.MACHINE):
        for compact in (False, True):
            panel.set_grouping(grouping)
            panel.set_compact(compact)
            app.processEvents()
            times = open_times(app, panel)
            mode = "compact" if compact else "full"
            print(
                f"  open, {grouping.value}/{mode}: median {statistics.median(times):6.1f} ms, "
                f"first {times[0]:6.1f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Tray app figures: event -> list-model latency at 200 events/s, idle CPU and wake-ups, RSS.

    .venv/bin/python bench/ui.py [--idle-seconds 60] [--events 2000] [--rate 200]

1. Latency from an event leaving the daemon to the list model having applied it
   (row moved or repainted), p50/p99, at a steady 200 events/s over 500 agents:
   (a) in-process through FakeDaemonLink, (b) through the real IPC server and
   ``IpcDaemonLink`` (the fake daemon in the same loop).  The daemon's own hook
   intake is not part of it (it is built elsewhere).
2. The real app (``run_app``, offscreen, embedded fake daemon) as a process with
   10 live agents: CPU over ``--idle-seconds`` (target <= 0.2 % of one core), counting
   the children it reaped and its live descendants (bench/counting.py), and wake-ups
   per second (voluntary context switches).
3. Its RSS with 10 agents and with 500 (list open); targets 100 / 160 MiB; its children's
   RSS counted too (it starts none today).
4. The list for many agents (in-process, offscreen): time to open it (show, lay out, paint)
   with 60 and 500 agents across 4 projects, in each mode (target < 200 ms at 500), and
   time to apply a burst of 1,000 events with it open and grouped by project (until the
   rows are rebuilt and painted), and a page of scrolling and its paint at 500 agents.
   ``--list-only`` runs only these.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from counting import Fleet, tree_cpu  # noqa: E402  (bench/, the script's folder)
from opening import open_times  # noqa: E402  (bench/)
from ui import procs  # noqa: E402

from tests.fakes.app_link import FakeDaemonLink, World  # noqa: E402
from tests.fakes.fake_daemon import FakeDaemon  # noqa: E402
from volee_desktop.core import events as ev  # noqa: E402
from volee_desktop.core.states import AgentState  # noqa: E402
from volee_desktop.ipc.client import Client  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402
from volee_desktop.store.codec import event_to_dict  # noqa: E402

MiB = 1024 * 1024
STATES = (AgentState.WORKING, AgentState.NEEDS_INPUT, AgentState.IDLE, AgentState.DONE)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def build_agents(world: World, n: int) -> list[str]:
    return [
        world.agent(f"agent-{i:03d}", STATES[i % 4], "Bash: pytest", quiet=True) for i in range(n)
    ]


def latency(events: int, rate: float, over_ipc: bool) -> list[float]:
    """Milliseconds from an event's push to the model having it, for each event."""
    import qasync
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.controller import AppController, AppOptions

    app = QApplication.instance() or QApplication([])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    home = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    os.environ["VOLEE_HOME"] = str(home)

    class Sink:
        async def show(self, notice: Any, activate: Any) -> bool:
            return True

    ctl = AppController(
        AppOptions(
            config_path=home / "config.toml",
            sinks=[Sink()],
            use_tray=False,
            terminal=lambda _a: None,
        )
    )
    sent: dict[str, float] = {}
    got: list[float] = []

    def applied(agent_id: str) -> None:
        t = sent.pop(agent_id, None)
        if t is not None:
            got.append((time.perf_counter() - t) * 1000)

    ctl.model.agent_changed.connect(applied)
    scratch = FakeDaemonLink()
    world = World(scratch)
    ids = build_agents(world, 500)

    async def run() -> None:
        daemon = None
        if over_ipc:
            from volee_desktop.app.link import IpcDaemonLink

            daemon = FakeDaemon(dirs().socket, scratch.registry.fork())
            await daemon.start()
            link: Any = await IpcDaemonLink.connect(dirs().socket)
        else:
            link = scratch
        await ctl.attach(link)
        ctl.panel.show()
        interval = 1.0 / rate
        start = loop.time()
        for i in range(events):
            await asyncio.sleep(max(0.0, start + i * interval - loop.time()))
            agent = ids[(i * 7) % len(ids)]
            event = ev.StateChanged(
                at=world.tick(0.01), agent=agent, state=STATES[i % 4], detail=f"step {i}"
            )
            sent[agent] = time.perf_counter()
            if daemon is not None:
                await daemon.push(event)
            else:
                scratch.push(event)
        deadline = loop.time() + 5
        while sent and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if daemon is not None:
            await link.close()
            await daemon.close()

    with loop:
        loop.run_until_complete(run())
    ctl.close()
    asyncio.set_event_loop(None)
    return got


def list_figures() -> dict[str, float]:
    """Milliseconds to open the list (60 and 500 agents, each mode) and to apply a burst."""
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.agent_model import AgentListModel
    from volee_desktop.app.list_rows import Grouping
    from volee_desktop.app.live import LiveRegistry
    from volee_desktop.app.panel import AgentPanel

    app = QApplication.instance() or QApplication([])
    out: dict[str, float] = {}
    for n in (60, 500):
        link = FakeDaemonLink()
        world = World(link)
        world.t = time.time() - 3600
        live = LiveRegistry()
        model = AgentListModel()
        live.observe(model)
        link.listener = live
        ids = [
            world.agent(
                f"agent-{i:03d}", STATES[i % 4], "Bash: pytest -q tests/", cwd=f"/src/p{i % 4}"
            )
            for i in range(n)
        ]
        panel = AgentPanel(model, popup=False, prefs_path=None)
        app.processEvents()
        for grouping in (Grouping.NONE, Grouping.PROJECT):
            for compact in (False, True):
                panel.set_grouping(grouping)
                panel.set_compact(compact)
                app.processEvents()
                times = open_times(app, panel)
                key = f"open_{n}_{grouping.value}_{'compact' if compact else 'full'}_ms"
                out[key] = statistics.median(times)
                out[key.replace("open_", "first_")] = times[0]
                if n == 500:
                    # Scrolling: a page down, then its paint, 30 times.
                    panel.show_near(None)
                    app.processEvents()
                    bar = panel.view.verticalScrollBar()
                    bar.setValue(0)
                    frames, cpu = [], []
                    for _ in range(30):
                        t0, c0 = time.perf_counter(), time.process_time()
                        bar.setValue(bar.value() + bar.pageStep())
                        panel.view.viewport().repaint()
                        frames.append((time.perf_counter() - t0) * 1000)
                        cpu.append((time.process_time() - c0) * 1000)
                    out[key.replace("open_", "scroll_")] = pct(frames, 90)
                    out[key.replace("open_", "scrollcpu_")] = statistics.median(cpu)
                    panel.hide()
                    app.processEvents()
        if n == 500:
            panel.set_grouping(Grouping.PROJECT)
            panel.set_compact(False)
            panel.show_near(None)
            app.processEvents()
            painted: list[float] = []
            t0 = time.perf_counter()
            for i in range(1000):
                agent = ids[(i * 7) % n]
                if i % 2:
                    link.push(
                        ev.ActivityRecorded(at=world.tick(0.01), agent=agent, activity=f"Bash: {i}")
                    )
                else:
                    state = STATES[i % 4]
                    link.push(
                        ev.StateChanged(at=world.tick(0.01), agent=agent, state=state, detail="x")
                    )
            pushed = time.perf_counter()
            app.processEvents()  # the one rebuild, then the paint
            panel.view.viewport().repaint()
            painted.append(time.perf_counter())
            out["burst_1000_grouped_ms"] = (painted[0] - t0) * 1000
            out["burst_1000_apply_ms"] = (pushed - t0) * 1000
            panel.hide()
        panel.deleteLater()
        app.processEvents()
    return out


def push(socket: Path, events: list[ev.Event]) -> None:
    with Client.connect(socket) as client:
        for i in range(0, len(events), 200):
            client.call("test.push", events=[event_to_dict(e) for e in events[i : i + 200]])


def app_process(idle_seconds: float) -> dict[str, float]:
    import psutil
    from ui import desktop as dt

    home = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    desk = None
    if not dt.missing():
        desk = dt.Desktop()  # a real tray: the list stays hidden until clicked
        env = procs.child_env(
            home,
            **{k: desk.env[k] for k in ("DISPLAY", "QT_QPA_PLATFORM", "DBUS_SESSION_BUS_ADDRESS")},
        )
    else:
        env = procs.child_env(home, QT_QPA_PLATFORM="offscreen")
        env.pop("DISPLAY", None)
    out: dict[str, float] = {"real_tray": float(desk is not None)}
    app = procs.app("embed", env)
    try:
        app.wait_line(r"connected to the volee daemon", timeout=30)
        socket = dirs({"VOLEE_HOME": str(home)}).socket
        scratch = FakeDaemonLink()
        world = World(scratch)
        world.t = time.time()
        for i in range(10):
            world.agent(f"agent-{i:03d}", STATES[i % 4], "Bash: pytest")
        push(socket, [e for _, e in scratch.log])
        scratch.log.clear()
        proc = psutil.Process(app.popen.pid)
        time.sleep(2.0)  # let start-up work finish before measuring idle
        out["rss_10_mib"] = proc.memory_info().rss / MiB
        cpu0 = tree_cpu(proc.pid)  # the app, what it reaped, its live children
        ctx0 = proc.num_ctx_switches()
        t0 = time.monotonic()
        time.sleep(idle_seconds)
        dt = time.monotonic() - t0
        cpu1 = tree_cpu(proc.pid)
        ctx1 = proc.num_ctx_switches()
        used = cpu1 - cpu0
        out["idle_cpu_pct"] = 100 * used / dt
        out["cpu_resolution_pct"] = 100 * 0.01 / dt  # psutil counts CPU in clock ticks
        out["wakeups_per_s"] = (ctx1.voluntary - ctx0.voluntary) / dt
        out["idle_seconds"] = dt
        for i in range(10, 500):
            world.agent(f"agent-{i:03d}", STATES[i % 4], "Bash: pytest")
        push(socket, [e for _, e in scratch.log])
        time.sleep(2.0)  # let it apply and paint, then measure
        out["rss_500_mib"] = proc.memory_info().rss / MiB
        out["children_rss_mib"] = (
            sum(c.memory_info().rss for c in proc.children(recursive=True)) / MiB
        )
        if desk is not None:
            icon = desk.tray_icon()
            if icon is not None:
                x, y, w, h = icon
                desk.click(x + w // 2, y + h // 2)
                app.wait_line(r"agent list shown")
                time.sleep(2.0)
                out["rss_500_open_mib"] = proc.memory_info().rss / MiB
    finally:
        app.stop()
        app.kill()
        if desk is not None:
            desk.close()
    return out


def real_daemon_idle(idle_seconds: float) -> dict[str, float]:
    """The app with the real daemon embedded and 10 live generic agents (``sleep``)."""
    import json
    import signal

    import psutil
    from ui import desktop as dt

    home = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    desk = None if dt.missing() else dt.Desktop()
    if desk is not None:
        env = procs.child_env(
            home,
            **{k: desk.env[k] for k in ("DISPLAY", "QT_QPA_PLATFORM", "DBUS_SESSION_BUS_ADDRESS")},
        )
    else:
        env = procs.child_env(home, QT_QPA_PLATFORM="offscreen")
        env.pop("DISPLAY", None)
    app = procs.app("real", env)
    pids: list[int] = []
    out: dict[str, float] = {}
    try:
        app.wait_line(r"connected to the volee daemon", timeout=60)
        paths = dirs({"VOLEE_HOME": str(home)})
        ids = []
        with Client.connect(paths.socket) as client:
            for i in range(10):
                view = client.call(
                    "agents.spawn",
                    harness="generic",
                    name=f"sleeper-{i}",
                    argv=["sleep", "3600"],
                    cwd=str(home),
                )
                ids.append(view["id"])
        deadline = time.monotonic() + 30
        for agent_id in ids:
            record = paths.hosts / f"{agent_id}.json"
            while time.monotonic() < deadline:
                if record.exists() and json.loads(record.read_text()).get("program_pid"):
                    data = json.loads(record.read_text())
                    pids += [int(data["host_pid"]), int(data["program_pid"])]
                    break
                time.sleep(0.1)
        proc = psutil.Process(app.popen.pid)
        time.sleep(5.0)  # start-up work (discovery's first listing) is not idle
        # The app (its embedded daemon inside), what it reaped (discovery listings), its
        # live children, and the hosts (not its children: they outlive it).
        fleet = Fleet(paths.hosts, app=proc.pid)
        cpu0, ctx0, t0 = fleet.cpu(), proc.num_ctx_switches(), time.monotonic()
        time.sleep(idle_seconds)
        cpu1, ctx1, dt_ = fleet.cpu(), proc.num_ctx_switches(), time.monotonic() - t0
        used = sum(cpu1.values()) - sum(cpu0.values())
        out["idle_cpu_pct"] = 100 * used / dt_
        out["hosts_cpu_pct"] = 100 * (cpu1["hosts"] - cpu0["hosts"]) / dt_
        out["wakeups_per_s"] = (ctx1.voluntary - ctx0.voluntary) / dt_
        out["rss_mib"] = proc.memory_info().rss / MiB
        out["live"] = float(len(pids) // 2)
    finally:
        app.stop()
        app.kill()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if desk is not None:
            desk.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument(
        "--real-daemon", action="store_true", help="also: the real daemon embedded, 10 sleepers"
    )
    parser.add_argument("--list-only", action="store_true", help="only the list's figures")
    args = parser.parse_args()

    lists = list_figures()
    print("the list (in-process, offscreen; median of 5 openings):")
    for n in (60, 500):
        cells = "  ".join(
            f"{g}/{m} {lists[f'open_{n}_{g}_{m}_ms']:6.1f} ms"
            for g in ("none", "project")
            for m in ("full", "compact")
        )
        print(f"  open with {n:3d} agents: {cells}" + ("  (< 200 at 500)" if n == 500 else ""))
        first = max(v for k, v in lists.items() if k.startswith(f"first_{n}_"))
        print(f"    slowest first opening with {n} agents: {first:.1f} ms")
    cells = "  ".join(
        f"{g}/{m} {lists[f'scroll_500_{g}_{m}_ms']:5.1f} ms"
        for g in ("none", "project")
        for m in ("full", "compact")
    )
    print(f"  scrolling 500 agents, a page and its paint (p90): {cells}  (< 16 is 60 fps)")
    cells = "  ".join(
        f"{g}/{m} {lists[f'scrollcpu_500_{g}_{m}_ms']:5.1f} ms"
        for g in ("none", "project")
        for m in ("full", "compact")
    )
    print(f"    its CPU time (median; the machine is shared): {cells}")
    print(
        f"  burst of 1,000 events, 500 agents, list open and grouped by project: "
        f"{lists['burst_1000_grouped_ms']:.1f} ms to rebuilt and painted "
        f"({lists['burst_1000_apply_ms']:.1f} ms to apply them to the model)"
    )
    if args.list_only:
        return

    print(f"event -> list model, {args.events} events at {args.rate:g}/s over 500 agents")
    for name, over_ipc in (
        ("in-process FakeDaemonLink", False),
        ("real IPC + IpcDaemonLink", True),
    ):
        ms = latency(args.events, args.rate, over_ipc)
        print(
            f"  {name:28s} n={len(ms):5d}  p50={statistics.median(ms):6.2f} ms  "
            f"p99={pct(ms, 99):6.2f} ms  max={max(ms):6.2f} ms"
        )
    figures = app_process(args.idle_seconds)
    where = "Xvfb + trayer" if figures["real_tray"] else "offscreen, list shown as a window"
    print(f"app process ({where}; embedded fake daemon), idle {figures['idle_seconds']:.0f} s:")
    print(
        f"  idle CPU with 10 live agents: {figures['idle_cpu_pct']:.3f} % of one core (<= 0.2; "
        f"resolution {figures['cpu_resolution_pct']:.3f} %)"
    )
    print(f"  wake-ups (voluntary switches): {figures['wakeups_per_s']:.2f} /s")
    print(f"  RSS with  10 agents: {figures['rss_10_mib']:6.1f} MiB (<= 100)")
    shown = " (list open as a window)" if not figures["real_tray"] else ""
    print(f"  RSS with 500 agents{shown}: {figures['rss_500_mib']:6.1f} MiB (<= 160)")
    print(f"  children's RSS: {figures['children_rss_mib']:.1f} MiB")
    if "rss_500_open_mib" in figures:
        print(f"  RSS with 500 agents, list open: {figures['rss_500_open_mib']:6.1f} MiB")
    if args.real_daemon:
        real = real_daemon_idle(args.idle_seconds)
        print(f"app with the real daemon embedded, {real['live']:.0f} live generic agents:")
        print(
            f"  idle CPU (app + daemon + reaped + hosts): {real['idle_cpu_pct']:.3f} % of one "
            f"core (hosts {real['hosts_cpu_pct']:.3f} %)"
        )
        print(f"  wake-ups (voluntary switches): {real['wakeups_per_s']:.2f} /s")
        print(f"  RSS (app + daemon): {real['rss_mib']:6.1f} MiB")


if __name__ == "__main__":
    main()

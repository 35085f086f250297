"""Hook -> tray-model latency: hook requests at 200/s through the real daemon to the tray's list.

    .venv/bin/python bench/hook_to_tray.py [--events 2000] [--rate 200] [--agents 20]

The real daemon (in-process, on the tray's qasync loop, as `volee app` embeds it), 20 agents
with Claude Code sessions, and the tray's `AppController` subscribed over the real socket
(`IpcDaemonLink`).  A client sends `hook` requests exactly as the hook shim does once its
interpreter has started (a real PreToolUse payload, each with a unique command), at a steady
rate, without waiting for replies.  The figure is from sending the request to the list model
having applied the agent's new activity: intake, validation, durable group commit (fsync),
apply, the push over the socket, and the model update.  The shim's own process start (about
10 ms of CPU with -I -S, see bench/hooks_load.py) comes on top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "harness" / "samples"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--agents", type=int, default=20)
    args = parser.parse_args()

    import qasync
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.controller import AppController, AppOptions
    from volee_desktop.app.link import IpcDaemonLink
    from volee_desktop.core import events as ev
    from volee_desktop.core.ids import AGENT, new_id
    from volee_desktop.core.model import Harness, LaunchSettings
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.ipc.aclient import AsyncClient
    from volee_desktop.paths import dirs

    home = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    os.environ["VOLEE_HOME"] = str(home)
    app = QApplication.instance() or QApplication([])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    class Sink:
        async def show(self, notice: Any, activate: Any) -> bool:
            return True

    ctl = AppController(
        AppOptions(
            config_path=home / "config.toml",
            sinks=[Sink()],
            use_tray=False,
            terminal=lambda _a: None,
            login_item=None,
        )
    )
    sent: dict[str, deque[tuple[int, float]]] = {}
    got: list[float] = []

    def applied(agent_id: str) -> None:
        agent = ctl.live.registry.agents.get(agent_id)
        queue = sent.get(agent_id)
        if not queue or agent is None:
            return
        tail = agent.activity.rsplit(" ", 1)[-1]
        shown = int(tail) if tail.isdigit() else -1
        now = time.perf_counter()
        # Every request up to the one shown is in the model now (updates may coalesce).
        while queue and queue[0][0] <= shown:
            _n, t = queue.popleft()
            got.append((now - t) * 1000)

    ctl.model.agent_changed.connect(applied)
    pre = json.loads((SAMPLE / "claude-hook-PreToolUse.json").read_text())
    stats: dict[str, Any] = {}

    async def run() -> None:
        daemon = await Daemon.start(dirs())
        ids = [new_id(AGENT, 1_700_000_000_000 + i, os.urandom(10)) for i in range(args.agents)]
        for i, agent in enumerate(ids):
            await daemon.service.commit(
                [
                    ev.AgentRegistered(
                        at=time.time(),
                        agent=agent,
                        name=f"bench-{i}",
                        harness=Harness.CLAUDE,
                        launch=LaunchSettings(harness=Harness.CLAUDE, cwd=str(home)),
                        cwd=str(home),
                    ),
                    ev.SessionLinked(at=time.time(), agent=agent, session=f"s-{i}"),
                ]
            )
        link = await IpcDaemonLink.connect(dirs().socket)
        await ctl.attach(link)
        client = await AsyncClient.connect(dirs().socket)
        began = loop.time()
        pending = []
        for n in range(args.events):
            await asyncio.sleep(max(0.0, began + n / args.rate - loop.time()))
            i = n % args.agents
            agent = ids[i]
            token = f"bench {n}"
            payload = dict(pre, session_id=f"s-{i}", tool_input={"command": token})
            sent.setdefault(agent, deque()).append((n, time.perf_counter()))
            params = {
                "event": "PreToolUse",
                "payload": json.dumps(payload),
                "agent": agent,
                "harness": "claude",
                "key": f"b{n}",
                "received_at": time.time(),
            }
            pending.append(asyncio.ensure_future(client.call("hook", params)))
        stats["elapsed"] = loop.time() - began
        replies = await asyncio.gather(*pending)
        stats["accepted"] = sum(1 for r in replies if r.get("accepted"))
        deadline = loop.time() + 10
        while sum(len(q) for q in sent.values()) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        await client.close()
        await link.close()
        await daemon.close()

    try:
        with loop:
            loop.run_until_complete(run())
    finally:
        ctl.close()
        shutil.rmtree(home, ignore_errors=True)
    print(
        f"{args.events} hook requests at {args.rate:g}/s over {args.agents} agents "
        f"(sent in {stats['elapsed']:.1f} s); accepted {stats['accepted']}; "
        f"measured at the tray model: {len(got)}"
    )
    print(
        f"hook request -> tray model: p50 {statistics.median(got):.1f} ms, "
        f"p99 {pct(got, 0.99):.1f} ms, max {max(got):.1f} ms (target p99 <= 50 ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

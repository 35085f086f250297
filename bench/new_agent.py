"""New agent dialog figures: open -> shown (ms), and how long the daemon takes to say which
harnesses are installed (``agents.harnesses``: each binary's ``--version``, codex's ``--help``).

    .venv/bin/python bench/new_agent.py [--agents 500] [--runs 20]

1. Open -> shown: ``NewAgent.open()`` (the seen projects read from a registry of ``--agents``
   agents over 40 projects, the form built, shown) until its first paint is done, offscreen,
   in process; p50 and max over ``--runs`` openings (each closed before the next).  The
   harness list fills in when the daemon answers; that answer is step 2.
2. ``agents.harnesses`` against the real daemon (in process) with the pinned harness CLIs
   (``~/.cache/volee-harness``, VOLEE_*_BIN): the first answers, one call per harness as the
   dialog asks (each binary probed: when each harness is offered), then answers for all
   (cached by binary file).
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

from tests.fakes.app_link import FakeDaemonLink, World  # noqa: E402

HARNESS_HOME = Path.home() / ".cache" / "volee-harness"
PINNED = {
    "claude": "claude-2.1.332/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
    "codex": "codex-0.171.0/node_modules/.bin/codex",
    "pi": "pi-0.73.1/node_modules/.bin/pi",
}


def open_to_shown(agents: int, runs: int) -> list[float]:
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.new_agent_flow import NewAgent
    from volee_desktop.app.new_agent_templates import Templates
    from volee_desktop.app.tasks import Tasks

    app = QApplication.instance() or QApplication([])
    link = FakeDaemonLink()
    world = World(link)
    for n in range(agents):
        world.agent(f"a{n}", cwd=f"/home/me/project-{n % 40}", quiet=True)
    link.handlers["agents.harnesses"] = lambda _p: {"harnesses": []}

    class Painted(QObject):
        done = False

        def eventFilter(self, obj: Any, event: Any) -> bool:
            if event.type() == QEvent.Type.Paint:
                self.done = True
            return False

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        flow = NewAgent(
            registry=lambda: link.registry,
            link=lambda: link,  # type: ignore[arg-type,return-value]
            tasks=Tasks(),
            select=lambda _id: None,
            templates=Templates(Path(tmp) / "new_agent.json"),
            machines=lambda: [],
        )
        for _ in range(runs):
            painted = Painted()
            start = time.perf_counter()
            dialog = flow.open()
            dialog.installEventFilter(painted)
            while not painted.done:
                app.processEvents()
            times.append((time.perf_counter() - start) * 1000)
            dialog.removeEventFilter(painted)
            dialog.reject()
            app.processEvents()
            loop.run_until_complete(asyncio.sleep(0))
    loop.close()
    return times


async def harnesses_answer(rounds: int) -> tuple[dict[str, float], list[float]]:
    """The first answers, one call per harness as the dialog makes them (cold: each binary
    probed), ms from the start to each; then ``rounds`` answers for all (cached)."""
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.ipc.aclient import AsyncClient
    from volee_desktop.paths import dirs

    daemon = await Daemon.start(dirs())
    client = await AsyncClient.connect(daemon.dirs.socket)
    cold: dict[str, float] = {}
    times: list[float] = []
    try:
        start = time.perf_counter()

        async def one(harness: str) -> None:
            # As the dialog does: ask again while the daemon says it still probes.
            while True:
                got = await client.call("agents.harnesses", {"harness": harness}, timeout=60)
                if not got["harnesses"][0].get("probing"):
                    break
                await asyncio.sleep(0.5)
            cold[harness] = (time.perf_counter() - start) * 1000

        await asyncio.gather(*(one(h) for h in ("claude", "codex", "pi", "generic")))
        for _ in range(rounds):
            start = time.perf_counter()
            answer = await client.call("agents.harnesses", {}, timeout=60)
            times.append((time.perf_counter() - start) * 1000)
        for h in answer["harnesses"]:
            what = h["problem"] or f"{h['version']} {len(h['modes'])} modes"
            print(f"    {h['harness']:8} {what}")
    finally:
        await client.close()
        await daemon.close()
    return cold, times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=500)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="vb", dir="/tmp")
    os.environ["VOLEE_HOME"] = home
    for harness, rel in PINNED.items():
        if (HARNESS_HOME / rel).exists():
            os.environ.setdefault(f"VOLEE_{harness.upper()}_BIN", str(HARNESS_HOME / rel))

    shown = open_to_shown(args.agents, args.runs)
    print(f"New agent dialog open -> shown ({args.agents} agents, {args.runs} runs):")
    print(f"  first {shown[0]:.1f} ms, p50 {statistics.median(shown[1:]):.1f} ms,")
    print(f"  max of the rest {max(shown[1:]):.1f} ms")
    print("agents.harnesses against the real daemon (pinned CLIs):")
    cold, warm = asyncio.run(harnesses_answer(3))
    firsts = ", ".join(f"{h} {ms:.0f} ms" for h, ms in cold.items())
    print(f"  first answers (probed), one call each: {firsts}")
    print(f"  then all at once (cached): {', '.join(f'{ms:.0f}' for ms in warm)} ms")


if __name__ == "__main__":
    main()

"""The agent window's figures (issue 25): a long conversation, a large change, ten windows.

    .venv/bin/python bench/conversation.py [--entries 5000] [--files 2000] [--windows 10]

Offscreen, in process, on the app's qasync loop:

1. A ``--entries`` conversation (the real Claude Code 2.1.332 transcript's entries, repeated
   as bench/transcript.py does, parsed by volee's parser) opened in an agent window's
   Conversation tab.  Its pages come as ``agents.log`` sends them (1,000 entries a page, cut
   by the daemon's own ``_fit``), each JSON-encoded and decoded on the GUI thread as the IPC
   client does, one loop turn apart.  Printed: open -> first screen drawn (the browser's
   first paint with entries), open -> fully loaded, and the GUI thread's longest stall (the
   largest gap of a 5 ms QTimer heartbeat, minus its interval) while it loads.
2. A ``--files`` change: a real git branch changing that many files, ``agents.changes``
   (``daemon/missions/changes.py``, with the diff) timed, then the Changes tab given its
   result -> the summary and file list painted.
3. Memory (RSS and PSS, /proc/self/smaps_rollup) of the process with ``--windows`` agent
   windows open on their Conversation (1,000 entries each), against none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from transcript import _lines  # noqa: E402

from volee_desktop.core.model import Agent, Harness  # noqa: E402
from volee_desktop.daemon.missions.transcripts import DEFAULT_LIMIT, _fit  # noqa: E402
from volee_desktop.harness.transcripts import parse  # noqa: E402

HEARTBEAT_MS = 5


def entries_of(n: int) -> list[dict[str, Any]]:
    """``n`` entries as ``agents.log`` sends them."""
    parsed = parse(Harness.CLAUDE, "\n".join(_lines(n)) + "\n").entries[:n]
    return [e.to_json() for e in parsed]


def fetcher(entries: list[dict[str, Any]]) -> Any:
    """``agents.log`` pages from ``start``, each one loop turn later and through JSON."""

    async def fetch(start: int) -> dict[str, Any]:
        await asyncio.sleep(0)
        end = min(len(entries), start + DEFAULT_LIMIT)
        items, stop = _fit(entries[start:end])
        after = start + stop
        page = {"start": start, "entries": items, "notice": None}
        page["next"] = after if after < len(entries) else None
        return dict(json.loads(json.dumps(page)))

    return fetch


def memory() -> tuple[float, float]:
    """RSS and PSS of this process, MiB."""
    found: dict[str, float] = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss"):
            found[key] = int(value.split()[0]) / 1024
    return found["Rss"], found["Pss"]


class Heartbeat:
    """The largest gap between ticks of a 5 ms timer: how long the GUI thread was held."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self._tick)
        self.last = 0.0
        self.longest = 0.0

    def start(self) -> None:
        self.last, self.longest = time.perf_counter(), 0.0
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, now - self.last)
        self.last = now

    def stop(self) -> float:
        self.timer.stop()
        self._tick()
        return max(0.0, self.longest * 1000 - HEARTBEAT_MS)


def painted(widget: Any, ready: Any) -> Any:
    """An event filter recording when ``widget`` first paints once ``ready()`` holds."""
    from PySide6.QtCore import QEvent, QObject

    class Filter(QObject):
        at: float | None = None

        def eventFilter(self, obj: Any, event: Any) -> bool:
            if event.type() == QEvent.Type.Paint and self.at is None and ready():
                self.at = time.perf_counter()
            return False

    f = Filter()
    widget.installEventFilter(f)
    return f


def window(n: int) -> Any:
    from volee_desktop.app.agent_window import AgentWindow

    agent = Agent(id=f"ag_{n:026d}", name=f"agent-{n}", harness=Harness.CLAUDE, cwd="/tmp")
    w = AgentWindow(agent)
    w.resize(900, 700)
    w.tabs.setCurrentWidget(w.conversation)
    return w


async def until(check: Any, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise TimeoutError("waited too long")
        await asyncio.sleep(0.001)


async def open_conversation(entries: list[dict[str, Any]], tasks: Any) -> dict[str, float]:
    w = window(0)
    view = w.conversation
    view.fetch = fetcher(entries)
    view.spawn = tasks.spawn
    first = painted(view.browser.viewport(), lambda: bool(view.entries))
    beat = Heartbeat()
    beat.start()
    began = time.perf_counter()
    w.show()  # its window's show follows the Conversation tab: the view loads
    view.load()
    await until(lambda: len(view.entries) == len(entries) and not view._busy)
    loaded = time.perf_counter()
    await until(lambda: first.at is not None)
    stall = beat.stop()
    assert first.at is not None
    w.close()
    w.deleteLater()
    return {
        "first_ms": (first.at - began) * 1000,
        "loaded_ms": (loaded - began) * 1000,
        "stall_ms": stall,
    }


def big_change(root: Path, files: int) -> dict[str, Any]:
    from volee_desktop.daemon.missions.changes import changes

    repo = root / "repo"
    repo.mkdir()
    who = {"NAME": "b", "EMAIL": "b@example.com"}
    env = {
        **os.environ,
        **{f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in who.items()},
    }

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)

    git("init", "-q", "-b", "main")
    (repo / "README").write_text("x\n")
    git("add", ".")
    git("commit", "-qm", "init")
    git("checkout", "-qb", "wide")
    for i in range(files):
        sub = repo / f"pkg{i % 40}"
        sub.mkdir(exist_ok=True)
        (sub / f"m{i}.py").write_text("".join(f"line {k} of {i}\n" for k in range(12)))
    git("add", ".")
    git("commit", "-qm", "wide")
    began = time.perf_counter()
    result = changes(repo, "main", "wide", True)
    result["_daemon_ms"] = (time.perf_counter() - began) * 1000
    return result


async def show_change(result: dict[str, Any]) -> float:
    from volee_desktop.app.changes_view import ChangesView

    view = ChangesView("ag_1", "wide")
    view.resize(900, 700)
    view.show()
    await asyncio.sleep(0.05)
    first = painted(view.files.viewport(), lambda: view.files.topLevelItemCount() > 0)
    began = time.perf_counter()
    view.set_changes(result)
    await until(lambda: first.at is not None)
    assert first.at is not None
    view.close()
    return (first.at - began) * 1000


async def windows_memory(count: int, tasks: Any) -> tuple[tuple[float, float], tuple[float, float]]:
    import gc

    entries = entries_of(1000)
    gc.collect()
    before = memory()
    opened = []
    for n in range(count):
        w = window(n + 1)
        w.conversation.fetch = fetcher(entries)
        w.conversation.spawn = tasks.spawn
        w.show()
        w.conversation.load()
        opened.append(w)
    await until(lambda: all(len(w.conversation.entries) == 1000 for w in opened))
    await asyncio.sleep(0.2)
    gc.collect()
    after = memory()
    for w in opened:
        w.close()
    return before, after


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=5000)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--windows", type=int, default=10)
    args = ap.parse_args()

    import qasync
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.tasks import Tasks

    app = QApplication.instance() or QApplication([])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    tasks = Tasks()

    async def run() -> None:
        # Memory first: before the big conversation and change were ever made in this process.
        (rss0, pss0), (rss1, pss1) = await windows_memory(args.windows, tasks)
        entries = entries_of(args.entries)
        got = await open_conversation(entries, tasks)
        print(
            f"conversation of {len(entries)} entries: first screen {got['first_ms']:.0f} ms, "
            f"fully loaded {got['loaded_ms']:.0f} ms, longest GUI stall {got['stall_ms']:.0f} ms"
        )
        with tempfile.TemporaryDirectory() as tmp:
            result = big_change(Path(tmp), args.files)
        shown = await show_change(result)
        cut = "cut" if result.get("truncated") else "whole"
        print(
            f"change of {len(result['files'])} files: agents.changes "
            f"{result['_daemon_ms']:.0f} ms (diff {cut}), summary shown {shown:.0f} ms"
        )
        print(
            f"memory: no window RSS {rss0:.0f} MiB PSS {pss0:.0f} MiB; {args.windows} "
            f"conversation windows RSS {rss1:.0f} MiB PSS {pss1:.0f} MiB "
            f"(+{rss1 - rss0:.0f} / +{pss1 - pss0:.0f})"
        )

    with loop:
        loop.run_until_complete(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Answering the real Claude Code: hook -> notification shown, and Allow -> Claude Code has it.

    .venv/bin/python bench/answers.py [--rounds 12] [--think 0.5]

The real daemon (in-process, on the tray's qasync loop, as `volee app` embeds it), the tray's
`AppController` subscribed over the real socket with a notification sink that records when
it is asked to show a notification, and one real Claude Code (scripts/install-harnesses)
in `manual` mode against the offline fake Anthropic API (tests/fakes/fake_anthropic.py).
Each round is a new agent (the tray shows one notification per agent per 10 s) whose task is
"RUN: touch fN.txt": Claude Code asks to run it, the PermissionRequest
hook reaches the daemon, the tray shows the notification; then `agents.allow` (what the
notification's Allow calls) checks the dialog on the rendered screen and types Claude Code's
key.

Printed, p50 / p99 over the rounds:

- hook -> notification shown: from the hook shim reading the payload (the event's time,
  the shim's own clock) to the tray's sink being asked to show the notification naming
  the request;
- Allow -> Claude Code has it: from the allow call (``--think`` seconds after the
  notification, as a person reads it) to Claude Code's first output after the key (it
  redraws: the dialog goes); and to its PostToolUse hook (the command ran).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.harness_env import Sandbox, claude_env, find_harness  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def line(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: no measure"
    return (
        f"{name}: p50 {statistics.median(values):.0f} ms, p99 {pct(values, 0.99):.0f} ms, "
        f"max {max(values):.0f} ms (n={len(values)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument(
        "--think", type=float, default=0.5, help="seconds between the notification and Allow"
    )
    args = parser.parse_args()
    claude = find_harness("claude")
    if claude is None:
        print("the real Claude Code is not installed: run scripts/install-harnesses")
        return 1

    import qasync
    from PySide6.QtWidgets import QApplication

    from volee_desktop.app.controller import AppController, AppOptions
    from volee_desktop.app.link import IpcDaemonLink
    from volee_desktop.core.states import AgentState
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.ipc.aclient import AsyncClient
    from volee_desktop.paths import dirs

    root = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp")).resolve()
    sandbox = Sandbox.create(root)
    fake = FakeAnthropic(log_path=root / "anthropic.jsonl").start()
    env = claude_env(sandbox.home, fake.port, sandbox.project)
    os.environ["VOLEE_HOME"] = str(root / "vh")
    os.environ["VOLEE_CLAUDE_BIN"] = str(claude)
    app = QApplication.instance() or QApplication([])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    shown: dict[str, float] = {}  # request id -> when the tray was asked to show it

    class Sink:
        async def show(self, notice: Any, activate: Any) -> bool:
            if notice.request and notice.request not in shown:
                shown[notice.request] = time.time()
            return True

        async def withdraw(self, notice: Any) -> None:
            return None

    ctl = AppController(
        AppOptions(
            config_path=root / "config.toml",
            sinks=[Sink()],
            use_tray=False,
            terminal=lambda _a: None,
            login_item=None,
        )
    )
    import logging

    retyped: list[str] = []

    class Retyped(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "did not take the answer" in record.getMessage():
                retyped.append(record.getMessage())

    logging.getLogger("volee_desktop.daemon.agents.answers").addHandler(Retyped())
    logging.getLogger("volee_desktop.daemon.agents.answers").setLevel(logging.INFO)
    to_notice: list[float] = []
    to_output: list[float] = []
    to_hook: list[float] = []

    async def run() -> None:
        daemon = await Daemon.start(dirs())
        link = await IpcDaemonLink.connect(dirs().socket)
        await ctl.attach(link)
        client = await AsyncClient.connect(dirs().socket)
        screens = daemon.agents.screens
        outputs: list[float] = []
        screens.on_output.append(lambda _a: outputs.append(time.time()))

        async def until(check: Any, what: str, timeout: float = 30.0) -> Any:
            deadline = loop.time() + timeout
            while True:
                value = check()
                if value:
                    return value
                if loop.time() > deadline:
                    raise SystemExit(f"timed out waiting for {what}")
                await asyncio.sleep(0.005)

        for n in range(args.rounds):
            # A new agent each round: the tray shows one notification per agent per 10 s.
            view = await client.call(
                "agents.spawn",
                {
                    "prompt": f"RUN: touch f{n}.txt",
                    "cwd": str(sandbox.project),
                    "env": env,
                    "permission_mode": "manual",
                    "name": f"bench-{n}",
                },
                timeout=60,
            )
            agent_id = view["id"]

            def agent(a: str = agent_id) -> Any:
                return daemon.service.current().agents[a]

            request = await until(lambda: agent().request, f"request {n}", 60)
            await until(lambda r=request: r.id in shown, f"the notification of {n}")
            to_notice.append((shown[request.id] - request.at) * 1000)
            await until(
                lambda a=agent_id: "Do you want to proceed?" in screens.last_text(a), "the dialog"
            )
            # A person reads the notification before clicking (volee also types no sooner
            # than 0.3 s after it first saw the dialog: its keys would be lost).
            await asyncio.sleep(args.think)
            outputs.clear()
            before = agent().last_progress_at
            clicked = time.time()
            await client.call("agents.allow", {"agent": agent_id, "request": request.id})
            await until(lambda c=clicked: any(t > c for t in outputs), "Claude Code's redraw")
            to_output.append((min(t for t in outputs if t > clicked) - clicked) * 1000)
            await until(
                lambda b=before: agent().last_progress_at > b and agent().request is None,
                "the PostToolUse hook",
            )
            to_hook.append((agent().last_progress_at - clicked) * 1000)
            await until(lambda: agent().state is AgentState.DONE, "the turn's end")
            await client.call("agents.forget", {"agent": agent_id}, timeout=30)
        await client.close()
        await link.close()
        await daemon.close()

    try:
        with loop:
            loop.run_until_complete(run())
    finally:
        ctl.close()
        fake.close()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{args.rounds} permission requests of the real Claude Code, each allowed "
        f"{args.think:g} s after its notification:"
    )
    print(line("hook -> notification shown", to_notice))
    print(line("Allow -> Claude Code's redraw (the key received)", to_output))
    print(line("Allow -> PostToolUse hook (the command ran)", to_hook))
    print(f"answers typed again (the dialog not yet taking keys): {len(retyped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

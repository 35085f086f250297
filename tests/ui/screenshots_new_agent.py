"""Takes docs/screenshots/new-agent.png: the New agent dialog on a throwaway real-X desktop.

    .venv/bin/python tests/ui/screenshots_new_agent.py [out-folder]

Xvfb (tests/ui/desktop.py); the dialog is the app's, drawn by Qt's xcb platform, with the
harnesses the real daemon finds (the pinned CLIs in ~/.cache/volee-harness: their real
versions and modes) and projects that are real git repositories.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
HARNESS_HOME = Path.home() / ".cache" / "volee-harness"
PINNED = {
    "claude": "claude-2.1.332/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
    "codex": "codex-0.171.0/node_modules/.bin/codex",
    "pi": "pi-0.73.1/node_modules/.bin/pi",
}


async def real_harnesses() -> list[dict[str, Any]]:
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.ipc.aclient import AsyncClient
    from volee_desktop.paths import dirs

    daemon = await Daemon.start(dirs())
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        while True:  # as the dialog does: again while the daemon still probes one
            answer = await client.call("agents.harnesses", {}, timeout=60)
            if not any(h.get("probing") for h in answer["harnesses"]):
                break
            await asyncio.sleep(0.5)
    finally:
        await client.close()
        await daemon.close()
    return list(answer["harnesses"])


def inner(root: Path, ready: Path) -> None:
    from PySide6.QtWidgets import QApplication

    from tests.fakes.app_link import FakeDaemonLink, World
    from volee_desktop.app.new_agent import NewAgentDialog, Templates, seen_projects

    harnesses = asyncio.run(real_harnesses())
    link = FakeDaemonLink()
    world = World(link)
    for name in ("shop-docs", "infra", "shop-api"):
        folder = root / "src" / name
        folder.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
        world.agent(name, cwd=str(folder), quiet=True)
    app = QApplication([])
    templates = Templates(None)
    dialog = NewAgentDialog(seen_projects(link.registry), templates)
    dialog.set_harnesses(harnesses)
    dialog.worktree.setChecked(True)
    dialog.mode.setCurrentText("acceptEdits")
    dialog.task.setPlainText(
        "Make the checkout API tests pass.\nKeep the public API as it is; commit when green."
    )
    dialog.resize(620, dialog.sizeHint().height())
    dialog.move(40, 40)
    dialog.show()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    ready.write_text("ready")
    while ready.exists():
        app.processEvents()
        time.sleep(0.05)


def main() -> None:
    from ui import desktop as dt

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    desktop = dt.Desktop(width=760, height=640, tray=False)
    root = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    ready = root / "ready"
    env = dict(desktop.env, VOLEE_HOME=str(root / "home"))
    for harness, rel in PINNED.items():
        if (HARNESS_HOME / rel).exists():
            env[f"VOLEE_{harness.upper()}_BIN"] = str(HARNESS_HOME / rel)
    child = subprocess.Popen([sys.executable, __file__, "--inner", str(root), str(ready)], env=env)
    try:
        dt.poll("the dialog shown", ready.exists, 90)
        window = desktop.run("xdotool", "search", "--onlyvisible", "--name", "New agent").split()
        path = out / "new-agent.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        desktop.run("import", "-window", window[0], str(path))
        print(path)
    finally:
        ready.unlink(missing_ok=True)
        child.wait(timeout=20)
        desktop.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
        inner(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()

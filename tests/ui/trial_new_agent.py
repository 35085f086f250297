"""New agent… tried as a person would, on a throwaway real-X desktop (Xvfb + trayer + dunst).

    .venv/bin/python tests/ui/trial_new_agent.py [out-folder]

The real app with the real daemon embedded.  A right-click on the tray icon, Down Down
Return (New agent…), then only keys: the folder typed, the generic harness chosen by its
first letter, a new worktree, a name, the command as the task, Tab to Start and Space.  Prints
the agents the daemon then lists and what the command found (its branch), and keeps
``new-agent-real.png`` (the dialog filled in) and ``new-agent-after.png`` (the list, the new
agent selected) in the out-folder.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.gitrepos import make_repo

from ui import desktop as dt
from ui import procs
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="vt", dir="/tmp"))
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else root
    repo = make_repo(root, "shop", remote=False)
    desktop = dt.Desktop()
    env = dict(desktop.env, VOLEE_HOME=str(root / "home"), PYTHONUNBUFFERED="1", VOLEE_LOG="INFO")
    app = procs.app("real", env)
    socket = dirs(env).socket
    try:
        app.wait_line(r"connected to the volee daemon", timeout=60)
        x, y, w, h = desktop.settled_tray_icon()
        desktop.click(x + w // 2, y + h // 2, 3)
        time.sleep(1.0)  # the menu is up (a Qt menu has no title to wait on)
        desktop.run("xdotool", "key", "Down", "Down", "Return")
        dt.poll("the dialog", lambda: desktop.visible("New agent"), 20)
        with Client.connect(socket) as client:  # the daemon probed the binaries
            while any(h.get("probing") for h in client.call("agents.harnesses")["harnesses"]):
                time.sleep(0.5)
        time.sleep(0.5)  # the dialog's own answer, drawn
        desktop.run("xdotool", "type", "--delay", "20", str(repo))
        desktop.run("xdotool", "key", "Tab", "Tab")
        desktop.run("xdotool", "type", "a")  # "a command (generic)"
        desktop.run("xdotool", "key", "Tab", "space", "Tab", "Tab")
        desktop.run("xdotool", "type", "--delay", "20", "trial")
        desktop.run("xdotool", "key", "Tab")
        command = "sh -c 'git branch --show-current > b.txt; sleep 30'"
        desktop.run("xdotool", "type", "--delay", "20", command)
        time.sleep(0.3)
        desktop.screenshot(out / "new-agent-real.png")
        desktop.run("xdotool", "key", "Tab", "space")
        found = repo / ".claude" / "worktrees" / "trial" / "b.txt"
        dt.poll("the command's file", lambda: found.exists() and found.read_text(), 20)
        time.sleep(0.5)
        desktop.screenshot(out / "new-agent-after.png")
        with Client.connect(socket) as client:
            agents = client.call("agents.list")
        keys = ("name", "harness", "state", "worktree", "branch")
        print(json.dumps([{k: a.get(k) for k in keys} for a in agents], indent=1))
        print("the command found its branch:", found.read_text().strip())
    finally:
        with Client.connect(socket) as client:
            for agent in client.call("agents.list"):
                if agent["state"] in ("working", "launching"):
                    client.call("agents.stop", agent=agent["id"])
        app.kill()
        desktop.close()
        print(out)


if __name__ == "__main__":
    main()

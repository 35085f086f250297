"""A person's trial of the list with sixty agents across four projects, by hand.

    .venv/bin/python tests/ui/trial_list.py [out-folder]   # default: test-artifacts/trial-list

On a throwaway desktop (Xvfb, trayer, dunst) the real tray app embeds the real daemon.
Four REAL Claude Code 2.1.332 agents (the fake model API) start, one of them asking to run
a command, with the person's own status line in their settings; 56 cheap generic agents
(``sleep``) start beside them, one crashing, across the same four projects.  It opens the
list from the tray icon, checks that the agent that needs you is the one selected, takes
the compact and grouped screenshots, reads each Claude Code agent's context share in
``volee ls --json``, sends one of them a long message and checks that its share grows
while the person's own status line still shows in its screen.  Needs
``scripts/install-harnesses`` and the real-X tools.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env, find_harness
from ui import desktop as dt
from ui import procs
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs

OUT = Path(__file__).resolve().parents[2] / "test-artifacts" / "trial-list"
VOLEE = Path(sys.executable).parent / "volee"
PROJECTS = ("shop-api", "shop-web", "shop-docs", "infra")
OWN_LINE = "my-own-line ok"
CLAUDES = (  # name, project, permission mode, prompt
    ("api-fixer", "shop-api", "manual", "RUN: touch made-by-api-fixer.txt"),
    ("docs-writer", "shop-docs", "bypassPermissions", "RUN: echo drafted > draft.md"),
    ("web-lint", "shop-web", "bypassPermissions", "RUN: echo linted > lint.txt"),
    ("infra-plan", "infra", "bypassPermissions", "RUN: echo planned > plan.txt"),
)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    claude = find_harness("claude")
    if claude is None or dt.missing():
        print("needs scripts/install-harnesses and the real-X tools", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp")).resolve()
    sandbox = Sandbox.create(root)
    model = FakeAnthropic(log_path=root / "anthropic.jsonl").start()
    projects: dict[str, Path] = {}
    env: dict[str, str] = {}
    for name in PROJECTS:
        folder = root / name
        folder.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
        projects[name] = folder
        env = claude_env(sandbox.home, model.port, folder)  # trusts each folder
    # The person's own status line.
    settings = sandbox.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    command = f"printf '{OWN_LINE}'"
    settings.write_text(json.dumps({"statusLine": {"type": "command", "command": command}}))
    home = root / "vh"
    env.update({"VOLEE_CLAUDE_BIN": str(claude), "VOLEE_HOME": str(home), "TERMINAL": ""})
    desk = dt.Desktop(1280, 900)
    app_env = {**desk.env, **env, "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"}
    app = procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "real"], app_env)
    cli_env = {**desk.env, **env}
    socket = dirs({"VOLEE_HOME": str(home)}).socket
    spawned: list[str] = []

    def volee(*args: str) -> str:
        done = subprocess.run(
            [str(VOLEE), *args], env=cli_env, capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            raise RuntimeError(f"volee {' '.join(args)}: {done.stderr}")
        return done.stdout

    def agents() -> dict[str, dict[str, object]]:
        return {a["name"]: a for a in json.loads(volee("ls", "--json", "--no-refresh"))}

    try:
        app.wait_line(r"connected to the volee daemon", timeout=30)
        began = time.monotonic()
        for name, project, mode, prompt in CLAUDES:
            spawned.append(
                volee(
                    "spawn",
                    "--cwd",
                    str(projects[project]),
                    "--name",
                    name,
                    "--permission-mode",
                    mode,
                    "--",
                    prompt,
                ).strip()
            )
        with Client.connect(socket, timeout=30) as client:
            for i in range(56):
                argv = ["sh", "-c", "echo boom >&2; exit 3"] if i == 0 else ["sleep", "3600"]
                view = client.call(
                    "agents.spawn",
                    harness="generic",
                    name="flaky-job" if i == 0 else f"bulk-{i:02d}",
                    argv=argv,
                    cwd=str(projects[PROJECTS[i % 4]]),
                )
                spawned.append(str(view["id"]))
        print(f"60 agents spawned in {time.monotonic() - began:.1f} s")
        dt.poll(
            "api-fixer asking",
            lambda: agents().get("api-fixer", {}).get("state") == "needs-input",
            90,
        )
        dt.poll(
            "a context share for every Claude Code agent",
            lambda: all(agents()[n].get("context") is not None for n, *_ in CLAUDES),
            90,
        )
        desk.run("dunstctl", "close-all")
        listed = agents()
        states: dict[str, int] = {}
        for a in listed.values():
            states[str(a["state"])] = states.get(str(a["state"]), 0) + 1
        print("states:", states)
        for name, *_ in CLAUDES:
            a = listed[name]
            print(f"  {name}: {a['state']}, context {a['context']}, cost {a['cost_usd']}")

        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        wid = desk.run("xdotool", "search", "--onlyvisible", "--name", "Agents — volee").split()[0]
        time.sleep(1.0)
        desk.run("import", "-window", wid, str(out / "1-list-opened.png"))
        desk.run("xdotool", "key", "--window", wid, "ctrl+k")
        time.sleep(0.8)
        desk.run("import", "-window", wid, str(out / "2-compact.png"))
        desk.run("xdotool", "key", "--window", wid, "ctrl+g", "ctrl+g")
        time.sleep(0.8)
        desk.run("import", "-window", wid, str(out / "3-compact-by-project.png"))

        # The conversation grows: its share moves, in ls and in the list.
        before = float(listed["docs-writer"]["context"])  # type: ignore[arg-type]
        filler = " ".join(f"note{i}" for i in range(6000))
        volee("send", "docs-writer", f"RUN: echo {filler} > notes.txt")
        dt.poll(
            "docs-writer's share growing",
            lambda: float(agents()["docs-writer"].get("context") or 0) > before,  # type: ignore[arg-type]
            60,
        )
        after = agents()["docs-writer"]["context"]
        print(f"docs-writer's context share: {before} -> {after}")
        desk.run("dunstctl", "close-all")
        desk.run("xdotool", "key", "--window", wid, "ctrl+k")  # full rows
        desk.run("xdotool", "type", "--window", wid, "docs-writer")
        time.sleep(1.0)
        desk.run("import", "-window", wid, str(out / "4-after-the-long-message.png"))
        screen = volee("output", "docs-writer")
        print("own status line shown:", OWN_LINE in screen)
        print(f"screenshots in {out}")
    finally:
        try:
            with Client.connect(socket, timeout=10) as client:
                for agent_id in spawned:
                    try:
                        client.call("agents.stop", agent=agent_id)
                    except Exception as exc:  # already ended (the crashing one)
                        print("stop", agent_id, exc)
        except Exception as exc:
            print("could not stop the agents:", exc)
        time.sleep(2.0)
        hosts = dirs({"VOLEE_HOME": str(home)}).hosts
        for record in hosts.glob("*.json") if hosts.is_dir() else []:
            try:
                data = json.loads(record.read_text())
            except ValueError:
                continue
            for key in ("program_pid", "host_pid"):
                pid = data.get(key)
                if isinstance(pid, int):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        app.kill()  # the daemon runs inside it
        desk.close()
        model.close()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

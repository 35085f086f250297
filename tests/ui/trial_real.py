"""A person's trial of answering agents, by hand: six REAL Claude Code agents, three asking.

    .venv/bin/python tests/ui/trial_real.py [out-folder]   # 5-agent-window.png: the README's
    # docs/screenshots/agent-window-real.png

On a throwaway desktop (Xvfb, trayer, dunst) the real tray app embeds the real daemon; six
Claude Code 2.1.332 agents (the fake model API) start in four projects, three of them in
``manual`` mode asking to run a command.  It then answers as a person would: Allow in the
first one's notification (dunst's context menu), Allow with Ctrl+Y in the list for the
second, and, after reading the third one's screen in its window, Deny from the tray menu;
it checks that exactly the allowed commands ran.  Screenshots of each step go to the out
folder (default: test-artifacts/trial).  Needs ``scripts/install-harnesses`` (the pinned
Claude Code) and the real-X tools.
"""

from __future__ import annotations

import json
import shutil
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

OUT = Path(__file__).resolve().parents[2] / "test-artifacts" / "trial"
VOLEE = Path(sys.executable).parent / "volee"
ASKING = (  # name, project, command (manual mode: Claude Code asks first)
    ("api-fixer", "shop-api", "touch made-by-api-fixer.txt"),
    ("web-lint", "shop-web", "touch made-by-web-lint.txt"),
    ("db-migrate", "shop-db", "touch made-by-db-migrate.txt"),
)
BUSY = "RUN: python3 -c 'import time; time.sleep(45)'"  # (Claude Code blocks a bare sleep)
WORKING = (  # name, project (bypassPermissions: they run without asking)
    ("docs-writer", "docs"),
    ("perf-probe", "shop-api"),
    ("release-notes", "shop-web"),
)


def geometry(desk: dt.Desktop, wid: str) -> tuple[int, int, int, int]:
    out = desk.run("xdotool", "getwindowgeometry", "--shell", wid)
    values = dict(line.split("=", 1) for line in out.split() if "=" in line)
    return (int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"]))


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
    projects = {}
    env: dict[str, str] = {}
    for name in {p for _n, p, _c in ASKING} | {p for _n, p in WORKING}:
        folder = root / name
        folder.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
        projects[name] = folder
        env = claude_env(sandbox.home, model.port, folder)  # trusts each folder
    home = root / "vh"
    env.update({"VOLEE_CLAUDE_BIN": str(claude), "VOLEE_HOME": str(home), "TERMINAL": ""})
    desk = dt.Desktop(1280, 800)
    app_env = {**desk.env, **env, "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"}
    app = procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "real"], app_env)
    cli_env = {**desk.env, **env}

    def volee(*args: str) -> str:
        done = subprocess.run(
            [str(VOLEE), *args], env=cli_env, capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            raise RuntimeError(f"volee {' '.join(args)}: {done.stderr}")
        return done.stdout

    def agents() -> dict[str, dict[str, object]]:
        return {a["name"]: a for a in json.loads(volee("ls", "--json", "--no-refresh"))}

    def shot(name: str) -> None:
        desk.screenshot(out / name)
        print("screenshot", out / name)

    try:
        app.wait_line(r"connected to the volee daemon", timeout=30)
        desk.run("dunstctl", "close-all")
        began = time.monotonic()
        for name, project, command in ASKING:
            volee("spawn", "--cwd", str(projects[project]), "--name", name,
                  "--permission-mode", "manual", "--", f"RUN: {command}")  # fmt: skip
        for name, project in WORKING:
            volee("spawn", "--cwd", str(projects[project]), "--name", name,
                  "--permission-mode", "bypassPermissions", "--", BUSY)  # fmt: skip
        wanted = [f"notification: {n} asks to use Bash — Bash: {c}" for n, _p, c in ASKING]
        dt.poll(
            "the three notifications",
            lambda: (app.output() or True) and all(any(w in x for x in app.lines) for w in wanted),
            90,
        )
        print(f"three notifications {time.monotonic() - began:.1f} s after the spawns")
        time.sleep(1.0)
        shot("1-three-notifications.png")
        print(
            "list:",
            {n: (a["state"], (a.get("request") or {}).get("summary")) for n, a in agents().items()},
        )

        # 1. Allow in api-fixer's notification (dunst's context menu, the line naming it).
        desk.choose("(nothing: only to see what dunst offers)")
        offered = desk.menu_offered()
        print("dunst offered:\n" + offered)
        line = next(x for x in offered.splitlines() if "Allow" in x and "api-fixer" in x)
        time.sleep(1.0)
        for _attempt in range(3):
            try:
                desk.choose(line)
                break
            except AssertionError as exc:  # dunst may ignore a context call made too soon
                print("again:", exc)
        app.wait_line(r"notification action allow on", timeout=20)
        dt.poll(
            "api-fixer's command",
            lambda: (projects["shop-api"] / "made-by-api-fixer.txt").exists(),
            40,
        )
        others = [(projects[p] / c.split()[-1]).exists() for n, p, c in ASKING if n != "api-fixer"]
        assert others == [False, False], "an Allow ran another agent's command"
        print("api-fixer: allowed from its notification; its file exists, no other")
        time.sleep(1.0)
        shot("2-after-allow.png")

        # 2. The tray menu, then the list: Ctrl+Y allows the selected (most urgent) one.
        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2, button=3)
        time.sleep(1.0)
        shot("3-tray-menu.png")
        desk.run("xdotool", "key", "Escape")
        time.sleep(0.5)
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        time.sleep(1.0)
        shot("4-list.png")
        first = next(iter(a for a in agents().values() if a["state"] == "needs-input"))
        print("the list's first agent that needs you:", first["name"])
        desk.run("xdotool", "key", "ctrl+y")
        target = projects[str(next(p for n, p, _c in ASKING if n == first["name"]))]
        made = next(c for n, _p, c in ASKING if n == first["name"]).split()[-1]
        dt.poll(f"{first['name']}'s command", lambda: (target / made).exists(), 40)
        print(f"{first['name']}: allowed with Ctrl+Y in the list; {made} exists")

        # 3. The last one's agent window (Open in the list), then Deny in the tray menu.
        remaining = next(n for n, _p, _c in ASKING if n not in ("api-fixer", first["name"]))
        last = agents()[remaining]
        desk.run("xdotool", "key", "Escape")  # the list hides
        time.sleep(0.5)
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        time.sleep(0.5)
        desk.run("xdotool", "key", "Return")  # Open: no terminal emulator here, so its window
        app.wait_line(rf"opened agent {last['id']}: output view", timeout=10)
        wid = desk.run(
            "xdotool", "search", "--onlyvisible", "--name", f"{last['name']} — volee"
        ).split()[0]
        time.sleep(2.0)
        desk.run("import", "-window", wid, str(out / "5-agent-window.png"))
        print("screenshot", out / "5-agent-window.png")
        print("volee output:\n" + volee("output", str(last["name"])))
        desk.run("xdotool", "windowunmap", wid)

        # Deny it from the tray menu, by keyboard: its entry, its submenu, Allow, Deny.
        def menu_open() -> bool:
            shown = desk.run("xdotool", "search", "--onlyvisible", "--class", "volee").split()
            return any(geometry(desk, w)[3] > 100 for w in shown)

        for _attempt in range(3):  # a right click while a window was going may be lost
            desk.click(x + iw // 2, y + ih // 2, button=3)
            time.sleep(1.0)
            if menu_open():
                break
        for key in ("Down", "Right", "Down"):
            desk.run("xdotool", "key", key)
            time.sleep(0.4)
        shot("6-tray-menu-deny.png")
        desk.run("xdotool", "key", "Return")
        app.wait_line(rf"answered {last['id']} \(rq_\w+\): deny", timeout=20)
        print(f"{last['name']}: denied from the tray menu")
        denied_file = next(c for n, _p, c in ASKING if n == last["name"]).split()[-1]
        dt.poll(
            f"{last['name']} to carry on",
            lambda: agents()[str(last["name"])]["state"] != "needs-input",
            40,
        )
        time.sleep(3.0)
        print("its timeline:\n" + volee("timeline", str(last["name"]))[-600:])
        ran = sorted(p.name for f in projects.values() for p in f.glob("*.txt"))
        print("files the agents made:", ran)
        assert denied_file not in ran, ran
        shot("7-end.png")
        print("states:", {n: a["state"] for n, a in agents().items()})
        return 0
    finally:
        for name in [n for n, _p, _c in ASKING] + [n for n, _p in WORKING]:
            try:
                volee("stop", name)
            except Exception as exc:
                print(f"stop {name}:", exc)
        app.kill()  # the daemon runs inside it
        desk.close()
        model.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

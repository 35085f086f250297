"""The user trial of issue 26: the list and the agent window as a person uses them all day.

    .venv/bin/python tests/ui/trial_day.py [out-folder] [--hold]
    # default out-folder: test-artifacts/trial-day; --hold keeps the desktop up at the end
    # (its DISPLAY and the CLI's environment are written to <out>/rig.env) until killed

On a throwaway desktop (Xvfb, openbox, trayer, dunst) the real tray app embeds the real
daemon.  Six REAL Claude Code agents (the fake model API) start in four projects: three ask
to run a command (permission mode ``default``), one of them in a new worktree, two end their
turn ("done"), and one mission worker asks too; a mission (claude coordinator) is created,
and 40 generic agents (``sleep 3600``) run beside them.  The script then goes through the
issue's nine points as a person would, by keyboard and mouse, and screenshots each step into
the out folder; what it reads (``volee ls``, ``git status``, the CLI's stderr) is printed.
Not a test: it is the trial's record (docs/trials/issue-26.md), to run again.  Needs
``scripts/install-harnesses`` and the real-X tools.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env, find_harness
from ui import desktop as dt
from ui import procs

OUT = Path(__file__).resolve().parents[2] / "test-artifacts" / "trial-day"
VOLEE = Path(sys.executable).parent / "volee"
PROJECTS = ("shop-api", "shop-web", "shop-db", "docs")
ASKING = (  # name, project, command, worktree?
    ("api-fixer", "shop-api", "touch made-by-api-fixer.txt", True),
    ("web-lint", "shop-web", "touch made-by-web-lint.txt", False),
    ("db-migrate", "shop-db", "touch made-by-db-migrate.txt", False),
)
DONE = (  # name, project, task (the fake model answers in words; the turn ends)
    ("readme-summary", "docs", "summarize the README for a newcomer, in five lines"),
    ("changelog", "shop-web", "say what changed since the last release"),
)
GENERIC = 40
LONG = "RUN: python3 -c 'print(1)' && touch deploy-checked-with-a-long-file-name.txt"


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the clean-up below runs
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    hold = "--hold" in sys.argv
    out = Path(args[0]) if args else OUT
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
        git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@e"]
        subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
        (folder / "README.md").write_text(f"# {name}\n")
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
        projects[name] = folder
        env = claude_env(sandbox.home, model.port, folder)  # trusts each folder
    home = root / "vh"
    env.update({"VOLEE_CLAUDE_BIN": str(claude), "VOLEE_HOME": str(home), "TERMINAL": ""})
    desk = dt.Desktop(1280, 800)
    desk.spawn(["openbox"])
    app_env = {**desk.env, **env, "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"}
    app = procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "real"], app_env)
    cli_env = {**desk.env, **env}
    (out / "rig.env").write_text(
        "".join(f"export {k}={shlex.quote(v)}\n" for k, v in cli_env.items() if k.isidentifier())
    )
    notes: list[str] = []

    def note(text: str) -> None:
        print("NOTE:", text)
        notes.append(text)

    def volee(*argv: str, check: bool = True) -> str:
        done = subprocess.run(
            [str(VOLEE), *argv], env=cli_env, capture_output=True, text=True, timeout=90
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"volee {' '.join(argv)}: {done.stderr}")
        return done.stdout + (f"[stderr] {done.stderr}" if done.stderr else "")

    def agents() -> dict[str, dict[str, object]]:
        return {a["name"]: a for a in json.loads(volee("ls", "--json", "--no-refresh"))}

    def shot(name: str) -> None:
        time.sleep(0.8)
        desk.screenshot(out / name)
        print("screenshot", out / name)

    def key(*keys: str) -> None:
        for k in keys:
            desk.run("xdotool", "key", k)
            time.sleep(0.3)

    def typed(text: str) -> None:
        desk.run("xdotool", "type", "--delay", "40", text)

    def step(title: str, body: Callable[[], None]) -> None:
        print(f"\n== {title}")
        try:
            body()
        except Exception as exc:  # the trial goes on: one step's failure is a finding
            note(f"{title}: {type(exc).__name__}: {exc}")

    def icon() -> tuple[int, int]:
        found = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(found, tuple)
        x, y, w, h = found
        return x + w // 2, y + h // 2

    def list_window() -> str | None:
        try:
            found = desk.run("xdotool", "search", "--onlyvisible", "--name", "Agents — volee")
        except subprocess.CalledProcessError:
            return None
        return found.split()[0] if found.split() else None

    def window(title: str) -> str | None:
        try:
            found = desk.run("xdotool", "search", "--onlyvisible", "--name", title)
        except subprocess.CalledProcessError:
            return None
        return found.split()[0] if found.split() else None

    def geometry(wid: str) -> tuple[int, int, int, int]:
        text = desk.run("xdotool", "getwindowgeometry", "--shell", wid)
        values = dict(line.split("=", 1) for line in text.split() if "=" in line)
        return (int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"]))

    try:
        app.wait_line(r"connected to the volee daemon", timeout=30)
        desk.run("dunstctl", "close-all")
        for name, project, command, worktree in ASKING:
            volee("spawn", "--cwd", str(projects[project]), "--name", name,
                  *(["--worktree"] if worktree else []),
                  "--permission-mode", "default", "--", f"RUN: {command}")  # fmt: skip
        for name, project, task in DONE:
            volee("spawn", "--cwd", str(projects[project]), "--name", name, "--", task)
        create = ["mission", "create", "--goal", "Write a newcomer's guide to the shop",
                  "--kind", "analysis", "--repo", str(projects["docs"]),
                  "--name", "guide-lead", "--permission-mode", "default", "--json"]  # fmt: skip
        mission = json.loads(volee(*create))
        print("mission:", mission)
        mission_id = str(mission.get("mission") or mission.get("id") or "")
        volee("spawn", "--cwd", str(projects["docs"]), "--name", "guide-writer",
              "--role", "worker", "--mission", mission_id, "--permission-mode", "default",
              "--", "RUN: touch made-by-guide-writer.txt")  # fmt: skip
        for i in range(GENERIC):
            project = PROJECTS[i % len(PROJECTS)]
            volee("spawn", "--harness", "generic", "--cwd", str(projects[project]),
                  "--name", f"job-{i:02d}", "--", "sleep", "3600")  # fmt: skip
        asking = [a[0] for a in ASKING] + ["guide-writer"]
        dt.poll(
            "four agents asking",
            lambda: sum(agents()[n]["state"] == "needs-input" for n in asking) == 4,
            120,
        )
        dt.poll(
            "the done ones",
            lambda: all(agents()[n]["state"] not in ("launching", "working") for n, *_ in DONE),
            60,
        )
        time.sleep(2)
        for name, a in agents().items():
            if not name.startswith("job-"):
                print(f"  {name}: {a['state']} {(a.get('request') or {}).get('summary')}")
        shot("01-notifications.png")
        calls = desk.notifies()
        for call in calls[-6:]:
            print("  notify:", call)
        if not any("guide" in " ".join(c) and "mission" in " ".join(c).lower() for c in calls):
            note("the mission worker's notification does not name its mission")

        x, y = icon()

        def tray_menu() -> None:
            desk.click(x, y, button=3)
            shot("02-tray-menu.png")
            key("Escape")

        step("the tray menu", tray_menu)

        def open_list() -> None:
            desk.run("dunstctl", "close-all")  # read, as a person would close them
            desk.click(x, y)
            app.wait_line(r"agent list shown", timeout=10)
            shot("03-list.png")
            wid = list_window()
            print("list window:", wid, wid and geometry(wid))

        step("the list from the icon", open_list)

        def filter_working() -> None:
            typed("working")
            shot("04-filter-working.png")
            key("Escape")

        step("filter 'working'", filter_working)

        def grouped() -> None:
            key("ctrl+g")
            shot("05-grouped.png")
            key("ctrl+g", "ctrl+g")  # back to none (by state, by project, none)

        step("grouping", grouped)

        def select_many() -> None:
            typed("RUN")  # the three asking (and the worker): their requests hold no "RUN"?
            time.sleep(0.5)
            key("Escape")
            typed("touch")
            time.sleep(0.5)
            key("Down", "ctrl+a")
            shot("06-multi-select.png")
            key("ctrl+y")
            shot("07-allow-many-confirm.png")

        step("select several and allow", select_many)

        def confirm_many() -> None:
            key("Return")
            time.sleep(4)
            made = sorted(p.name for f in projects.values() for p in f.rglob("made-by-*.txt"))
            print("files made:", made)
            shot("08-after-allow-many.png")
            key("Escape", "Escape")

        step("confirm allow-many", confirm_many)

        def clicking_away() -> None:
            if list_window() is None:
                desk.click(x, y)
                app.wait_line(r"agent list shown", timeout=10)
            time.sleep(1)
            desk.click(40, 700)  # the desktop (left of the list, which opens beside the cards)
            time.sleep(1)
            print("unpinned list visible after a click on the desktop:", list_window())

        step("a click elsewhere, unpinned", clicking_away)

        def pin() -> None:
            if list_window() is None:
                desk.click(x, y)
                app.wait_line(r"agent list shown", timeout=10)
                time.sleep(1)
            wid = list_window()
            assert wid is not None
            lx, ly, lw, _lh = geometry(wid)
            desk.click(lx + lw - 48, ly + 18)  # Keep open, the top bar's last button
            time.sleep(1)
            prefs = next(home.rglob("list.json"), None)
            print("list.json:", prefs and prefs.read_text().replace("\n", " "))
            desk.click(40, 700)
            time.sleep(1)
            print("pinned list visible after a click on the desktop:", list_window())

        step("pin the list", pin)

        def ask_again() -> None:
            desk.run("dunstctl", "close-all")
            volee("spawn", "--cwd", str(projects["shop-api"]), "--name", "rm-build",
                  "--permission-mode", "default", "--", "RUN: rm -rf build")  # fmt: skip
            volee("spawn", "--cwd", str(projects["shop-web"]), "--name", "cache-wipe",
                  "--permission-mode", "default", "--", "RUN: rm -rf .cache")  # fmt: skip
            volee("spawn", "--cwd", str(projects["shop-web"]), "--name", "deploy-check",
                  "--permission-mode", "default", "--",
                  LONG)  # fmt: skip
            names = ("rm-build", "cache-wipe", "deploy-check")
            dt.poll(
                "three more asking",
                lambda: all(agents()[n]["state"] == "needs-input" for n in names),
                120,
            )
            time.sleep(1)
            desk.run("dunstctl", "close-all")
            shot("09-pinned-list-asking.png")

        step("three more ask", ask_again)

        def deny_in_list() -> None:
            wid = list_window()
            assert wid is not None
            lx, ly, _lw, _lh = geometry(wid)
            desk.click(lx + 200, ly + 150)  # a row: the list has the focus
            typed("cache-wipe")
            time.sleep(0.5)
            key("ctrl+d")  # the filter's first match is the selected agent
            dt.poll("cache-wipe denied", lambda: agents()["cache-wipe"]["state"] != "needs-input")
            time.sleep(5)
            key("Escape")  # pinned: clears the filter only
            a = agents()["cache-wipe"]
            print("cache-wipe:", a["state"], a.get("outcome"), a.get("denied"))
            shot("10-denied-in-list.png")

        step("deny in the list (Ctrl+D, no reason)", deny_in_list)

        def agent_window() -> None:
            wid = list_window()
            assert wid is not None
            lx, ly, _lw, _lh = geometry(wid)
            desk.click(lx + 200, ly + 150)
            typed("rm-build")
            time.sleep(0.5)
            key("Return")
            found = dt.poll("rm-build's window", lambda: window("rm-build — volee"), 10)
            assert isinstance(found, str)
            time.sleep(2)
            desk.run("import", "-window", found, str(out / "11-agent-window-dialog.png"))
            print("screenshot", out / "11-agent-window-dialog.png")
            typed("not the build folder, it holds the release")
            key("ctrl+d")  # in the reason box: Deny with that reason
            dt.poll("rm-build denied", lambda: agents()["rm-build"]["state"] != "needs-input")
            time.sleep(5)
            desk.run("import", "-window", found, str(out / "12-agent-window-after-deny.png"))
            print("screenshot", out / "12-agent-window-after-deny.png")
            a = agents()["rm-build"]
            print("rm-build:", a["state"], a.get("outcome"), a.get("denied"), a.get("detail"))
            print("its timeline:\n" + volee("timeline", "rm-build")[-700:])
            desk.run("xdotool", "windowclose", found)
            time.sleep(1)
            print("the list after its window closed:", list_window())
            key("Escape")

        step("the agent window: read, deny with a reason", agent_window)

        def about_and_settings() -> None:
            for ups, name in ((2, "13-about.png"), (3, "14-settings.png")):
                desk.click(x, y, button=3)
                time.sleep(1)
                key(*["Up"] * ups, "Return")
                time.sleep(1.5)
                shot(name)
                key("Escape")
                time.sleep(0.5)

        step("About and Settings from the tray menu", about_and_settings)
        desk.run("dunstctl", "close-all")
        shot("15-end.png")
        print("\nstates:", {n: a["state"] for n, a in agents().items() if not n.startswith("job")})
        print("git status of shop-api:\n" + subprocess.run(
            ["git", "-C", str(projects["shop-api"]), "status", "--short"],
            capture_output=True, text=True).stdout)  # fmt: skip
        print("volee --version:", volee("--version", check=False))
        (out / "notes.txt").write_text("\n".join(notes) + "\n")
        if hold:
            print(f"holding: source {out / 'rig.env'}; kill {os.getpid()} ends", flush=True)
            while True:
                time.sleep(5)
        return 0
    finally:
        app.output()
        (out / "app.log").write_text("\n".join(app.lines) + "\n")
        try:
            for name in agents():
                volee("stop", name, check=False)
        except Exception as exc:
            print("stop:", exc)
        app.kill()  # the daemon runs inside it
        print("after the app: volee ls ->", volee("ls", "--no-refresh", check=False)[-300:])
        print("volee daemon stop ->", volee("daemon", "stop", check=False))
        desk.close()
        model.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""A new user's trial on the desktops people use (issue 28): three REAL Claude Code agents,
two of them asking for a permission, answered as a person of that desktop would.

    .venv/bin/python tests/ui/trial_desktops.py xfce|sway [out-folder]

``xfce``: Xvfb + openbox + xfce4-panel (an X11 StatusNotifierItem host) + xfce4-notifyd
(the rig ``xfce_desktop.py``); ``sway``: headless sway + waybar's tray + mako, volee on
Wayland (``wayland_desktop.py``). The real tray app embeds the real daemon; three Claude Code
agents (the pinned one, against the fake model API) start in three projects: two in
``manual`` mode ask to run ``touch made-by-<name>.txt``, one works without asking. Then:

- the first card's Allow: on xfce a real click (xdotool) on xfce4-notifyd's Allow button;
  on sway ``makoctl invoke allow``, what a mako key binding runs (the newest card);
- the other one from the list: a real click on xfce4-panel's icon / waybar's ``Activate``
  opens it, the keyboard selects its row (its name typed in the filter, Down) and Ctrl+Y
  allows it (on sway the keys come from ``wtype``, a virtual keyboard);
- the working one's window opened from the list (its name, Down, Return).

It checks that exactly the two allowed files were made and that the third agent ended its
turn, and prints the timings (spawn → notification, Allow → file, click → list). Screenshots of
each step go to the out folder (default: test-artifacts/trial-<desktop>/). Needs
``scripts/install-harnesses`` (the pinned Claude Code) and the rig's tools (scripts/dev).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env, find_harness
from ui import procs
from ui import wayland_desktop as wd
from ui import xfce_desktop as xd
from ui.desktop import poll
from ui.test_wayland import TRAY, colours

ROOT = Path(__file__).resolve().parents[2]
VOLEE = Path(sys.executable).parent / "volee"
ASKING = (  # name, project, command (manual mode: Claude Code asks first)
    ("api-fixer", "shop-api", "touch made-by-api-fixer.txt"),
    ("web-lint", "shop-web", "touch made-by-web-lint.txt"),
)
WORKER = ("docs-writer", "docs")  # bypassPermissions: it runs its command without asking
BUSY = "RUN: python3 -c 'import time; time.sleep(20)'"  # (Claude Code blocks a bare sleep)
WAIT = 60.0  # the machine is shared: an upper bound for each step


class Xfce:
    """The person's hands on Xvfb + xfce4-panel + xfce4-notifyd: real clicks and keys."""

    name = "xfce"

    def __init__(self) -> None:
        self.d = xd.XfceDesktop()
        self.env = self.d.env
        self.icon: tuple[int, int] | None = None

    @staticmethod
    def missing() -> list[str]:
        return xd.missing()

    def versions(self) -> dict[str, str]:
        return {
            "xfce4-panel": first_line(self.d.run("xfce4-panel", "--version", check=False)),
            "openbox": first_line(self.d.run("openbox", "--version", check=False)),
            "xfce4-notifyd": deb_version("xfce4-notifyd"),
            "Xvfb": deb_version("xvfb"),
        }

    def screenshot(self, path: Path) -> None:
        self.d.screenshot(path)

    def tray_up(self, out: Path) -> None:
        found = poll(
            "the icon in xfce4-panel",
            lambda: self.d.new_in_bar(self.d.screenshot(out / "1-tray.png")),
            WAIT,
        )
        assert isinstance(found, tuple)
        x, y, w, h = found
        self.icon = (x + w // 2, y + h // 2)

    def cards(self) -> int:
        return len(self.d.cards())

    def allow_first_card(self) -> str:
        card = self.d.cards()[0]  # the top one
        self.d.press_on_card(card, "allow")
        return f"a real press on the Allow button of the top card {card}"

    def open_list(self) -> None:
        assert self.icon is not None
        self.d.click(*self.icon)

    def key(self, name: str) -> None:
        self.d.run("xdotool", "key", name)

    def type(self, text: str) -> None:
        self.d.run("xdotool", "type", "--delay", "80", text)

    def window(self, title: str) -> tuple[int, int, int, int] | None:
        return self.d.window(f"{title} — volee")

    def close(self) -> None:
        self.d.close()


class Sway:
    """The person's hands on headless sway + waybar + mako: what their bindings and clicks
    send (no pointer on headless sway), keys from a virtual keyboard."""

    name = "sway"

    def __init__(self) -> None:
        self.d = wd.WaylandDesktop()
        self.d.plug_keyboard()
        self.env = self.d.env

    @staticmethod
    def missing() -> list[str]:
        return wd.missing() + ([wd.KEYS] if shutil.which(wd.KEYS) is None else [])

    def versions(self) -> dict[str, str]:
        return {
            "sway": first_line(self.d.run("sway", "--version", check=False)),
            "waybar": first_line(self.d.run("waybar", "--version", check=False)),
            "mako": deb_version("mako-notifier"),
            "grim": deb_version("grim"),
            "wtype": deb_version("wtype"),
        }

    def screenshot(self, path: Path) -> None:
        self.d.screenshot(path)

    def tray_up(self, out: Path) -> None:
        self.d.item()
        shot = out / "1-tray.png"
        poll("the icon in waybar's tray", lambda: colours(self.d.screenshot(shot), *TRAY) > 8, WAIT)

    def cards(self) -> int:
        return len(self.d.cards())

    def allow_first_card(self) -> str:
        top = self.d.cards()[0]
        self.d.run("makoctl", "invoke", "allow")  # what a binding runs: the newest card
        return f"makoctl invoke allow (the newest card, #{top['id']}: {top['summary']!r})"

    def open_list(self) -> None:
        self.d.activate(wd.WIDTH - 20, 14)  # what waybar sends on a left click on the icon

    def key(self, name: str) -> None:
        self.d.key(name)

    def type(self, text: str) -> None:
        self.d.type(text)

    def window(self, title: str) -> tuple[int, int, int, int] | None:
        found = self.d.window(title)
        if found is None:
            return None
        rect = found["rect"]
        return (rect["x"], rect["y"], rect["width"], rect["height"])

    def close(self) -> None:
        self.d.close()


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "?"


def deb_version(package: str) -> str:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True
    )
    return done.stdout.strip() or "?"


def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which not in ("xfce", "sway"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    kind = Xfce if which == "xfce" else Sway
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "test-artifacts" / f"trial-{which}"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    claude = find_harness("claude")
    absent = kind.missing()
    if claude is None or absent:
        print(f"needs scripts/install-harnesses and {absent}", file=sys.stderr)
        return 2
    # This tree's volee, for the CLI and the daemon's hosts too (an editable install elsewhere).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp")).resolve()
    sandbox = Sandbox.create(root)
    model = FakeAnthropic(log_path=root / "anthropic.jsonl").start()
    projects: dict[str, Path] = {}
    env: dict[str, str] = {}
    for project in [p for _n, p, _c in ASKING] + [WORKER[1]]:
        folder = root / project
        folder.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
        projects[project] = folder
        env = claude_env(sandbox.home, model.port, folder)  # trusts each folder
    home = root / "vh"
    env.update({"VOLEE_CLAUDE_BIN": str(claude), "VOLEE_HOME": str(home), "TERMINAL": ""})
    desk = kind()
    # Claude Code's environment, and what the desktop sets (its display, bus, runtime folder).
    app_env = {**env, **{k: v for k, v in desk.env.items() if os.environ.get(k) != v}}
    app_env.update(PYTHONUNBUFFERED="1", VOLEE_LOG="INFO")
    app = procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "real"], app_env)
    timings: dict[str, float] = {}
    notes: list[str] = []

    def note(text: str) -> None:
        print(text, flush=True)
        notes.append(text)

    def volee(*args: str) -> str:
        done = subprocess.run(
            [str(VOLEE), *args], env=app_env, capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            raise RuntimeError(f"volee {' '.join(args)}: {done.stderr}")
        return done.stdout

    def agents() -> dict[str, dict[str, object]]:
        return {a["name"]: a for a in json.loads(volee("ls", "--json", "--no-refresh"))}

    def shot(name: str) -> None:
        time.sleep(1.0)  # drawn (cards fade in, windows map)
        desk.screenshot(out / name)
        note(f"screenshot {out / name}")

    def seen(pattern: str) -> bool:
        app.output()
        return any(re.search(pattern, line) for line in app.lines)

    def logged(pattern: str) -> float:
        """When the app logged its first line matching ``pattern`` (time.time()'s clock)."""
        app.output()
        line = next(x for x in app.lines if re.search(pattern, x))
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()

    def timed(what: str, check: Callable[[], object], since: float) -> float:
        poll(what, check, WAIT)
        took = round(time.monotonic() - since, 1)
        timings[what] = took
        note(f"{what}: {took} s")
        return took

    try:
        app.wait_line(r"connected to the volee daemon", WAIT)
        note(f"versions: {desk.versions()}")
        said = subprocess.run([str(claude), "--version"], capture_output=True, text=True)
        note(f"claude: {first_line(said.stdout)}")
        desk.tray_up(out)
        note(f"screenshot {out / '1-tray.png'} (the icon drawn)")
        note("volee: " + next((x for x in app.lines if "StatusNotifier" in x), "(no SNI line)"))

        began, spawned = time.monotonic(), time.time()
        for name, project, command in ASKING:
            volee("spawn", "--cwd", str(projects[project]), "--name", name,
                  "--permission-mode", "manual", "--", f"RUN: {command}")  # fmt: skip
        volee("spawn", "--cwd", str(projects[WORKER[1]]), "--name", WORKER[0],
              "--permission-mode", "bypassPermissions", "--", BUSY)  # fmt: skip
        timings["three spawns (CLI)"] = round(time.monotonic() - began, 1)
        for name, _project, command in ASKING:
            wanted = re.escape(f"notification: {name} asks to use Bash — Bash: {command}")
            poll(f"{name}'s notification", lambda w=wanted: seen(w), WAIT)  # type: ignore[misc]
            key = f"spawn → {name}'s notification (logged)"
            timings[key] = round(logged(wanted) - spawned, 1)
            note(f"{key}: {timings[key]} s")
        timed("spawn → two cards on screen", lambda: desk.cards() >= 2, began)
        note("server: " + next((x for x in app.lines if "notification server" in x), "?"))
        shot("2-two-cards.png")
        for name, agent in agents().items():
            request = agent.get("request") or {}
            assert isinstance(request, dict)
            note(f"ls: {name} {agent['state']} {request.get('summary')!r}")

        # 1. The top card's Allow.
        ids = {str(a["id"]): n for n, a in agents().items()}
        pressed = time.monotonic()
        note("first: " + desk.allow_first_card())
        answered = app.wait_line(r"answered (ag_\w+) \(rq_\w+\): allow", WAIT)
        first = ids[answered.group(1)]
        note(f"the card's Allow answered {first}")
        target = dict((n, (p, c)) for n, p, c in ASKING)
        project, command = target[first]
        made = command.split()[-1]
        timed(f"card Allow → {made}", lambda: (projects[project] / made).exists(), pressed)
        second = next(n for n, _p, _c in ASKING if n != first)
        assert not (projects[target[second][0]] / target[second][1].split()[-1]).exists(), (
            "the card's Allow ran the other agent's command"
        )
        shot("3-after-card-allow.png")

        # 2. The list: its icon, then the keyboard.
        clicked = time.monotonic()
        desk.open_list()
        app.wait_line(r"agent list shown", WAIT)
        timed("icon → the list shown", lambda: desk.window("Agents"), clicked)
        note(f"the list at {desk.window('Agents')}")
        shot("4-list.png")
        desk.type(second)  # typing in the rows goes on in the filter box
        desk.key("Down")  # from the filter box: the first agent in view
        shot("5-list-selected.png")
        keyed = time.monotonic()
        desk.key("ctrl+y")
        project, command = target[second]
        made = command.split()[-1]
        timed(f"Ctrl+Y → {made}", lambda: (projects[project] / made).exists(), keyed)
        shot("6-after-ctrl-y.png")

        # 3. The working one's window, from the list.
        desk.key("Escape")  # clears the filter
        time.sleep(0.5)
        if desk.window("Agents") is None:  # (the Escape closed it: open it again)
            desk.open_list()
            app.wait_line(r"agent list shown", WAIT)
            time.sleep(0.5)
        desk.type(WORKER[0])
        desk.key("Down")
        desk.key("Return")
        worker = agents()[WORKER[0]]
        app.wait_line(rf"opened agent {worker['id']}: output view", WAIT)
        poll("the agent window", lambda: desk.window(WORKER[0]), WAIT)
        note(f"{WORKER[0]}'s window at {desk.window(WORKER[0])}")
        shot("7-agent-window.png")
        screen = volee("output", WORKER[0])
        note(f"volee output {WORKER[0]} ({len(screen.splitlines())} lines):\n{screen}")
        timed(
            f"spawn → {WORKER[0]} ended its turn",
            lambda: agents()[WORKER[0]]["state"] in ("done", "idle"),
            began,
        )
        time.sleep(2.0)
        shot("8-end.png")

        made_files = sorted(
            str(p.relative_to(root))
            for folder in projects.values()
            for p in folder.rglob("*")
            if ".git" not in p.parts
        )
        note(f"files in the projects: {made_files}")
        expected = sorted(f"{p}/{c.split()[-1]}" for _n, p, c in ASKING)
        assert made_files == expected, made_files
        states = {n: a["state"] for n, a in agents().items()}
        note(f"states: {states}")
        note("timings: " + json.dumps(timings))
        (out / "trial.txt").write_text("\n".join(notes) + "\n")
        return 0
    except BaseException:
        print("app output:\n" + app.output(), file=sys.stderr)
        raise
    finally:
        (out / "trial.txt").write_text("\n".join(notes) + "\n")
        for name in [n for n, _p, _c in ASKING] + [WORKER[0]]:
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

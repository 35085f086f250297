"""Issue 24's done-when trial, as a new user would: a laptop with two agents of its own adds
``devbox`` over ssh, where three REAL Claude Code agents run, one asking.

    .venv/bin/python tests/ui/trial_machines.py [out-folder]   # as root (a second Unix user)

"devbox" is a second Unix user with its own HOME, VOLEE_HOME and daemon behind a real
OpenSSH server on 127.0.0.1 (``tests/e2e/machines_rig.py``); its agents are Claude Code
2.1.332 against the fake model API.  The laptop is the real tray app embedding the real
daemon on Xvfb + trayer + dunst, with two Claude Code agents of its own.  Steps: ``volee
machine add devbox --ssh devbox``; spawn three agents there (``--machine devbox``), one in
manual mode asking to run a command; the notification names the machine; the list shows five
agents with their machines; Allow (Ctrl+Y in the list) runs the command there; the ssh client
is killed with sshd held down (the network pulled): devbox's agents grey, then sshd is back and
they return, the same agents, nothing lost; then a mission is created on devbox, its real
Claude Code worker commits there, and the person approves it in the app's approval dialog on
the laptop: merged there (``trial_machines_mission.py``).  Screenshots to the out folder (default
test-artifacts/trial-machines).  Needs scripts/install-harnesses and the real-X tools.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.machines_rig import ServerUser, SshServer, make_root
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env, find_harness
from ui import desktop as dt
from ui import procs
from ui.trial_machines_mission import Rig, mission_on_devbox

OUT = Path(__file__).resolve().parents[2] / "test-artifacts" / "trial-machines"
VOLEE = Path(sys.executable).parent / "volee"
BUSY = "RUN: python3 -c 'import time; time.sleep(120)'"  # (Claude Code blocks a bare sleep)
CLAUDE_KEYS = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_TELEMETRY",
    "DISABLE_AUTOUPDATER",
    "DISABLE_ERROR_REPORTING",
    "IS_SANDBOX",
    "CLAUDE_CODE_TMPDIR",
)


def chown_tree(path: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(path):
        os.chown(folder, uid, gid)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    claude = find_harness("claude")
    if claude is None or dt.missing() or os.geteuid() != 0:
        print("needs root, scripts/install-harnesses and the real-X tools", file=sys.stderr)
        return 2
    root = make_root()
    model = FakeAnthropic(log_path=root / "anthropic.jsonl").start()
    there = ServerUser(root)
    sshd: SshServer | None = None
    desk: dt.Desktop | None = None
    app: procs.Proc | None = None
    try:
        # devbox: Claude Code readable by that user (a hard link of the cached binary).
        remote_claude = root / "claude"
        os.link(claude, remote_claude)
        remote_projects = {n: there.home / n for n in ("shop-api", "ranker", "pricing")}
        remote_env: dict[str, str] = {}
        for folder in remote_projects.values():
            folder.mkdir()
            if folder.name != "pricing":  # the mission's: made by devbox's user (its step)
                subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
            remote_env = claude_env(there.home, model.port, folder)
        chown_tree(there.home, there.uid, there.gid)
        there.start_daemon(
            {"VOLEE_CLAUDE_BIN": str(remote_claude), "TERM": "xterm-256color"}
            | {k: remote_env[k] for k in CLAUDE_KEYS}
        )
        sshd = SshServer(root, there)

        # The laptop: its own Claude Code agents, the tray app with the real daemon.
        local = root / "laptop"
        sandbox = Sandbox.create(local)
        local_projects = {n: local / n for n in ("shop-web", "docs")}
        env: dict[str, str] = {}
        for folder in local_projects.values():
            folder.mkdir()
            subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
            env = claude_env(sandbox.home, model.port, folder)
        env.update(
            {
                "VOLEE_CLAUDE_BIN": str(claude),
                "VOLEE_HOME": str(local / "vh"),
                "TERMINAL": "",
                "PATH": f"{sshd.bin}:{os.environ['PATH']}",
            }
        )
        desk = dt.Desktop(1280, 800)
        app_env = {**desk.env, **env, "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"}
        app = procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "real"], app_env)
        cli_env = {**desk.env, **env}

        def volee(*args: str, quiet: bool = False) -> str:
            done = subprocess.run(
                [str(VOLEE), *args], env=cli_env, capture_output=True, text=True, timeout=90
            )
            if done.returncode != 0:
                raise RuntimeError(f"volee {' '.join(args)}: {done.stderr}")
            if not quiet:
                print(f"$ volee {' '.join(args)}\n{done.stdout.rstrip()}")
            return done.stdout

        def agents() -> dict[str, dict[str, object]]:
            done = subprocess.run(
                [str(VOLEE), "ls", "--json", "--no-refresh"],
                env=cli_env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            return {a["name"]: a for a in json.loads(done.stdout)}

        def shot(name: str) -> None:
            assert desk is not None
            desk.screenshot(out / name)
            print("screenshot", out / name)

        app.wait_line(r"connected to the volee daemon", timeout=30)
        desk.run("dunstctl", "close-all")
        for name, project in (("web-lint", "shop-web"), ("docs-writer", "docs")):
            volee("spawn", "--cwd", str(local_projects[project]), "--name", name,
                  "--permission-mode", "bypassPermissions", "--", BUSY)  # fmt: skip

        volee("machine", "add", "devbox", "--ssh", "devbox", "--volee", str(there.volee))
        volee("machine", "ls")
        for name, project in (("api-fixer", "shop-api"), ("train-ranker", "ranker")):
            volee("spawn", "--machine", "devbox", "--cwd", str(remote_projects[project]),
                  "--name", name, "--permission-mode", "bypassPermissions", "--", BUSY)  # fmt: skip
        volee("spawn", "--machine", "devbox", "--cwd", str(remote_projects["shop-api"]),
              "--name", "migrate", "--permission-mode", "manual", "--",
              "RUN: touch made-on-devbox.txt")  # fmt: skip
        began = time.monotonic()
        dt.poll(
            "devbox's notification",
            lambda: (
                (app.output() or True)
                and any("notification: devbox: migrate" in x for x in app.lines)
            ),
            120,
        )
        print(f"the notification {time.monotonic() - began:.1f} s after the spawn")
        print([x for x in app.lines if "notification:" in x])
        time.sleep(1.5)
        shot("1-notification.png")
        seen = agents()
        print("ls:", {n: (a["machine"], a["state"], a["reachable"]) for n, a in seen.items()})
        volee("ls")

        icon = dt.poll("the tray icon", desk.tray_icon)
        assert isinstance(icon, tuple)
        x, y, iw, ih = icon
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown")
        time.sleep(1.5)
        shot("2-list.png")

        # Allow from here: Ctrl+Y in the list takes the first that needs you (devbox's).
        first = next(n for n, a in agents().items() if a["state"] == "needs-input")
        print("the list's first agent that needs you:", first)
        desk.run("xdotool", "key", "ctrl+y")
        made = remote_projects["shop-api"] / "made-on-devbox.txt"
        dt.poll("the command on devbox", made.exists, 60)
        print(f"allowed from the laptop: {made} exists, owner uid {made.stat().st_uid}")
        time.sleep(1.5)
        shot("3-after-allow.png")

        # The network pulled: sshd down, the ssh client killed.
        before = {n: a["id"] for n, a in agents().items() if a["machine"] == "devbox"}
        ssh_pids = [
            int(p)
            for p in subprocess.run(
                ["pgrep", "-x", "ssh"], capture_output=True, text=True
            ).stdout.split()
            if f"-F {sshd.dir}"
            in Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            or b"devbox" in Path(f"/proc/{p}/cmdline").read_bytes()
        ]
        print("ssh client(s):", ssh_pids)
        sshd.close()
        for pid in ssh_pids:
            os.kill(pid, signal.SIGKILL)
        dt.poll(
            "devbox's agents greyed",
            lambda: all(not a["reachable"] for a in agents().values() if a["machine"] == "devbox"),
            60,
        )
        volee("ls")
        volee("machine", "ls")
        time.sleep(2.0)
        shot("4-unreachable.png")
        try:
            volee("send", "devbox:api-fixer", "hello")
        except RuntimeError as exc:
            print("while unreachable:", exc)
        sshd.start()
        volee("machine", "ls")  # tries the unreachable ones at once
        dt.poll(
            "devbox back",
            lambda: all(a["reachable"] for a in agents().values() if a["machine"] == "devbox"),
            90,
        )
        after = {n: a["id"] for n, a in agents().items() if a["machine"] == "devbox"}
        print("devbox's agents before:", before, "\nafter:", after, "\nsame:", before == after)
        volee("ls")
        volee("timeline", "devbox:migrate")
        time.sleep(2.0)
        shot("5-back.png")

        # A mission on devbox, approved from the laptop's app (trial_machines_mission.py).
        print("\n== a mission on devbox")
        times = mission_on_devbox(Rig(desk, app, there, remote_projects["pricing"], out, volee))
        print("mission timings (s after its creation):", times)
        return 0
    finally:
        for ref in (
            "web-lint",
            "docs-writer",
            "devbox:api-fixer",
            "devbox:train-ranker",
            "devbox:migrate",
            "devbox:pricing-lead",
            "devbox:round-prices",
        ):
            subprocess.run(
                [str(VOLEE), "stop", ref],
                env={
                    **os.environ,
                    "VOLEE_HOME": str(root / "laptop" / "vh"),
                    "PATH": f"{root / 'sshd' / 'bin'}:{os.environ['PATH']}",
                },
                capture_output=True,
                timeout=60,
                check=False,
            )
        if app is not None:
            app.output()
            (out / "app.log").write_text("\n".join(app.lines) + "\n")
            app.kill()
        if desk is not None:
            desk.close()
        if sshd is not None:
            sshd.close()
        there.remove()
        model.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""The done-when trial of issue 29: thirty agents hit the plan's limit at once (docs/limits.md).

    .venv/bin/python bench/limits_trial.py [--real 5] [--total 30] [--shot FILE.png] [--keep]

A real daemon (``volee daemon run``) and the real tray app (``volee app``) on Xvfb + trayer +
dunst (tests/ui/desktop.py), in a throwaway VOLEE_HOME. ``--real`` agents are the real, pinned
Claude Code against the fake Anthropic server answering 429 with a subscription's unified
headers (``usage_limit(reset)``); the others are the fake claude of tests/fakes (same harness,
same hooks) made to meet the same limit (``FAKE_HARNESS_LIMIT``: the retry line Claude Code
draws, then ``StopFailure`` ``rate_limit``). The reset is shortened to the next minute
boundary 60-120 s away; the limit lifts then. It prints what it saw: how many were limited and
with which reset, the notifications dunst got, when each was continued (the stagger), whether
each finished its turn, and each one's timeline lines about the limit. It takes a screenshot of
the list while they wait (``--shot``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
from fleet import agents, cli  # noqa: E402

from tests.fakes.fake_anthropic import FakeAnthropic, usage_limit  # noqa: E402
from tests.fakes.harness_env import Sandbox, claude_env, find_harness  # noqa: E402
from tests.ui import desktop as dt  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402

FAKE_CLAUDE = ROOT / "tests" / "fakes" / "fake-claude"
CONFIG = '[limits]\nresume = true\nmargin = 5\nstagger = 2\nunknown_wait = "90s"\n'


def wait_for(what: str, check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def clock(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%H:%M:%S")


def claude_clock(at: float) -> str:
    """The reset as Claude Code shows it in its retry line: "1:38am"."""
    text = datetime.fromtimestamp(at).strftime("%I:%M%p").lower()
    return text[1:] if text.startswith("0") else text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", type=int, default=5, help="real Claude Code agents")
    parser.add_argument("--total", type=int, default=30, help="agents in all")
    parser.add_argument("--shot", type=Path, default=None, help="screenshot of the list")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway folder")
    parser.add_argument(
        "--none-stopped",
        action="store_true",
        help="the person stops none of them (the done-when: all carry on)",
    )
    args = parser.parse_args()
    claude = find_harness("claude")
    if claude is None and args.real:
        raise SystemExit("the pinned Claude Code is not installed (scripts/install-harnesses)")
    if dt.missing():
        raise SystemExit(f"the trial needs {', '.join(dt.missing())}")

    root = Path(tempfile.mkdtemp(prefix="vlt", dir="/tmp"))
    sandbox = Sandbox.create(root)
    real_project = sandbox.project  # the folder Claude Code was told to trust
    fake_project = root / "fakes"
    fake_project.mkdir()
    fake = FakeAnthropic(log_path=root / "anthropic.jsonl").start()
    env = claude_env(sandbox.home, fake.port, sandbox.project)
    # One harness, two programs: the real Claude Code in real/, the fake one in fake/.
    wrapper = root / "claude"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$PWD" in {fake_project}*) exec {FAKE_CLAUDE} "$@";; esac\n'
        f'exec {claude} "$@"\n'
    )
    wrapper.chmod(0o755)
    limit_file = root / "limit"
    plan_file = root / "plan"
    env.update(
        VOLEE_CLAUDE_BIN=str(wrapper),
        VOLEE_HOME=str(root / "vh"),
        CLAUDE_CODE_MAX_RETRIES="4",
        FAKE_HARNESS_LIMIT=str(limit_file),
        FAKE_HARNESS_HOME=str(root / "fake-transcripts"),
        FAKE_PYTHON=sys.executable,
        FAKE_HARNESS_LIMIT_RETRY="3",
        FAKE_HARNESS_PLAN=str(plan_file),  # the real one retried for 9 s (4 attempts)
    )
    (root / "fake-transcripts").mkdir()
    config = root / "vh" / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(CONFIG)
    desk = dt.Desktop()
    env_app = dict(env)
    for key in ("DISPLAY", "QT_QPA_PLATFORM", "DBUS_SESSION_BUS_ADDRESS"):
        env_app[key] = desk.env[key]
    env_app["VOLEE_LOG"] = "INFO"
    procs: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str], e: dict[str, str], log: str) -> None:
        with open(root / log, "ab") as out:
            procs.append(
                subprocess.Popen(
                    argv,
                    env=e,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            )

    try:
        socket = dirs(env).socket
        start([sys.executable, "-m", "volee_desktop.cli", "daemon", "run"], env, "daemon.log")
        wait_for("the daemon", socket.exists, 30)
        start([sys.executable, "-m", "volee_desktop.cli", "app"], env_app, "app.log")
        app_log = root / "app.log"
        wait_for("the app", lambda: "connected to the volee daemon" in app_log.read_text(), 60)
        desk.run("dunstctl", "close-all")
        before = len(desk.notifies())

        now = time.time()
        reset = (int(now) // 60 + 2) * 60.0
        reset = reset if reset - now >= 100 else reset + 60
        fake.refuse(usage_limit(reset))
        limit_file.write_text(claude_clock(reset))
        # The fake ones report the plan's use as a claude.ai login's status line does (the
        # real Claude Code, on an API key, reports none): the meter.
        plan_file.write_text(f"100,41,{reset:.0f}")
        print(f"trial: {args.real} real Claude Code + {args.total - args.real} fake claude")
        print(f"the plan's limit stands; it resets at {clock(reset)} (in {reset - now:.0f} s)")
        names = [f"real-{i}" for i in range(args.real)]
        names += [f"fake-{i:02d}" for i in range(args.total - args.real)]
        stopped_by_person = "fake-00" if args.total > args.real and not args.none_stopped else None
        t0 = time.time()
        for name in names:
            cwd = real_project if name.startswith("real") else fake_project
            cli(env, "spawn", "--cwd", str(cwd), "--name", name, "--", f"task of {name}")
        print(f"spawned {len(names)} in {time.time() - t0:.1f} s")

        def limited() -> list[dict[str, Any]]:
            return [a for a in agents(env) if a["limit"] and a["limit"]["ended"]]

        wait_for(
            "every agent limited", lambda: len(limited()) == len(names) or None, reset - now - 20
        )
        waiting = limited()
        t1 = time.time()
        resets = sorted({a["limit"]["resets_at"] or 0.0 for a in waiting})
        unknown = [a["name"] for a in waiting if a["limit"]["resets_at"] is None]
        print(f"limited: {len(waiting)} of {len(names)} after {t1 - t0:.1f} s")
        print(f"  their reset: {[clock(r) if r else None for r in resets]}; details:")
        if unknown:
            print(f"  with no reset time (their retry line not read): {unknown}")
        for detail in sorted({a["detail"] for a in waiting}):
            print(f"    {detail!r}")
        header = agents(env)
        plans = [a["plan_use"] for a in header if a.get("plan_use")]
        print(f"  the plan's use reported by {len(plans)} agent(s): {plans[:1]}")
        for line in cli(env, "ls").splitlines()[:4]:
            print("  ls:", line)
        time.sleep(12)  # the notification's throttle: one update every 10 s
        calls = desk.notifies()[before:]
        shown = desk.run("dunstctl", "count", "displayed").strip()
        print(f"notifications: {len(calls)} Notify call(s), dunst displays {shown}:")
        for call in calls:
            print(f"    {call[2:4]}")

        if args.shot is not None:
            args.shot.parent.mkdir(parents=True, exist_ok=True)
            note = args.shot.with_name(args.shot.stem + "-notification.png")
            desk.screenshot(note)
            print(f"screenshot: {note}")
            icon = desk.settled_tray_icon()
            x, y, w, h = icon
            desk.click(x + w // 2, y + h // 2)
            wait_for("the list", lambda: desk.visible("agents") or desk.visible("Agents"), 30)
            time.sleep(2)
            desk.screenshot(args.shot)
            print(f"screenshot: {args.shot}")

        if stopped_by_person:
            cli(env, "stop", stopped_by_person)
            print(f"stopped by the person: {stopped_by_person}")

        wait_for("the reset", lambda: time.time() >= reset, reset - time.time() + 5)
        fake.lift()
        limit_file.unlink()
        print(f"the limit lifted at {clock(time.time())}")
        carry_on = [n for n in names if n != stopped_by_person]

        def finished() -> list[dict[str, Any]]:
            return [a for a in agents(env) if a["name"] in carry_on and a["state"] == "done"]

        wait_for(
            "every agent to finish its turn",
            lambda: len(finished()) == len(carry_on) or None,
            60 + 3 * len(names),
        )
        print(f"finished their turn: {len(finished())} of {len(carry_on)}")
        shown = desk.run("dunstctl", "count", "displayed").strip()
        print(f"dunst displays {shown} notification(s) now")

        continued: list[tuple[float, str]] = []
        reasons: dict[str, list[str]] = {}
        for name in names:
            timeline = json.loads(cli(env, "timeline", name, "--json"))
            for e in timeline:
                if e.get("type") == "limit-continued":
                    continued.append((e["at"], name))
            text = cli(env, "timeline", name)
            reasons[name] = [line.strip() for line in text.splitlines() if "limit" in line]
        continued.sort()
        gaps = [b - a for (a, _), (b, _) in itertools.pairwise(continued)]
        per = {n: sum(1 for _, m in continued if m == n) for n in names}
        print(
            f"continued by volee: {len(continued)} (each at most once: "
            f"{max(per.values(), default=0) <= 1}); the first {continued[0][0] - reset:.1f} s "
            f"after the reset, the last {continued[-1][0] - reset:.1f} s after it"
            if continued
            else "continued by volee: none"
        )
        if gaps:
            print(f"  gaps between two continues: min {min(gaps):.1f} s, max {max(gaps):.1f} s")
        if stopped_by_person:
            print(
                f"  {stopped_by_person} (stopped by the person) continued: {per[stopped_by_person]}"
            )
        for name in (names[0], names[-1]) + ((stopped_by_person,) if stopped_by_person else ()):
            print(f"timeline of {name} (lines about the limit):")
            for line in reasons[name]:
                print(f"    {line}")
        why = sum(1 for n in carry_on if any("continued by volee" in r for r in reasons[n]))
        print(f"timelines that say why it carried on: {why} of {len(carry_on)}")
        asked = [json.dumps(r) for r in fake.requests()]
        label = sum(1 for r in asked if "[volee] your plan" in r)
        print(f"requests of the real Claude Code with volee's labelled prompt: {label}")
        return 0
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
        # The agents' hosts outlive the daemon by design (agents survive its restarts): end
        # them, and the agents in them, the trial's own processes (their command lines name
        # its throwaway folder).
        ours = [
            p
            for p in psutil.process_iter(["cmdline"])
            if p.pid != os.getpid() and str(root) in " ".join(p.info["cmdline"] or ())
        ]
        for p in ours:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(ours, timeout=10)
        desk.close()
        fake.close()
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

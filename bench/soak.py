"""A day in an hour: sixty agents with churn, the daemon killed twice, nothing lost (issue 22).

    .venv/bin/python bench/soak.py [--minutes 60] [--agents 60] [--claude 5] [--no-app]
                                   [--tracemalloc DIR]

A real daemon (``volee daemon run``) in a throwaway VOLEE_HOME, the real Claude Code (the
pinned one) for ``--claude`` agents against the fake Anthropic server, generic agents
(``sleep``) for the rest, and the tray app on Xvfb + trayer + dunst as the daemon's client
(a client only: it never runs the daemon inside itself while the restarted one starts).
``--tracemalloc DIR``: the daemon's and the app's tracemalloc snapshots, RSS and glibc's
arena every minute into DIR (``bench/memtrace``; ``compare.py DIR`` says what grew).
Then, for ``--minutes``, every ``--tick`` seconds:

- each Claude Code agent that asks is allowed (``volee allow NAME --request ID``: its
  notification shows, then is withdrawn), and each that rests is sent a new task that asks
  again (``RUN: touch …``);
- one generic agent is stopped, resumed, or forgotten and replaced by a new one;
- every ten ticks the list is opened or closed (a click on the tray icon);
- at one third and two thirds the daemon is killed (SIGKILL) and started again.

Every ``--sample`` seconds: RSS and PSS of the app, the daemon and the hosts (every child
counted, ``bench/counting.py``), the open fds of the app and the daemon, the log's size and
its last sequence number.  At the end: memory growth per hour after the warm-up (the daemon's
per run between kills, the app's over the whole), fds first and last, the log's size and
events per agent-hour, CPU at rest after the churn against at rest before it (same run),
every acknowledged spawn, forget and answer checked in the log, and no process of the run
left behind after it closes.

Targets (issue 22): growth <= 5 MiB per hour after warm-up; fds flat; CPU at rest after the
churn back to the figure before it; nothing acknowledged lost; nothing left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
from counting import Fleet, idle_cpu  # noqa: E402
from fleet import Rig, agents, wait_for  # noqa: E402

from tests.fakes.harness_env import find_harness  # noqa: E402
from volee_desktop import memtrim  # noqa: E402

GONE = ("stopped", "lost", "failed")


@dataclass
class Sample:
    at: float
    rss: dict[str, float]
    pss: dict[str, float]
    fds: dict[str, int]
    log_bytes: int
    seq: int
    run: int  # which daemon run (0, 1, 2: after each kill)
    hosts: int  # how many hosts


@dataclass
class Acks:
    """What volee acknowledged: checked against the log at the end."""

    spawned: set[str] = field(default_factory=set)
    forgotten: set[str] = field(default_factory=set)
    answers: list[tuple[str, str]] = field(default_factory=list)  # (agent name, request id)
    errors: list[str] = field(default_factory=list)


class Soak:
    def __init__(self, args: argparse.Namespace, claude: Path | None) -> None:
        self.args = args
        self.rig = Rig(claude)
        self.acks = Acks()
        self.samples: list[Sample] = []
        self.run = 0
        self.next_generic = 0
        self.next_task = 0
        self.rand = random.Random(22)
        self.list_open = False
        self.clicks = 0
        self.kills = 0
        #: Acknowledged answers found in the log but past what a timeline reply holds.
        self.beyond_timeline = 0
        self.began = time.monotonic()

    # -- the commands, acknowledged or not --------------------------------------------------

    def volee(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "volee_desktop.cli", *args],
            env=self.rig.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str) -> bool:
        try:
            done = self.volee(*args)
        except subprocess.TimeoutExpired:
            self.acks.errors.append(f"{self.when()} volee {' '.join(args)}: timed out")
            return False
        if done.returncode != 0:
            # A refusal is not a loss (the agent moved on meanwhile): counted, not fatal.
            self.acks.errors.append(
                f"{self.when()} volee {' '.join(args)}: {done.stderr.strip()[:160]}"
            )
        return done.returncode == 0

    def when(self) -> str:
        """Seconds since the churn began, for what the report lists."""
        return f"[{time.monotonic() - self.began:6.1f} s]"

    def spawn_generic(self) -> None:
        name = f"g{self.next_generic}"
        self.next_generic += 1
        project = str(self.rig.sandbox.project)
        if self.ok("spawn", "--harness", "generic", "--cwd", project, "--name", name, "--",
                   "sleep", "7200"):  # fmt: skip
            self.acks.spawned.add(name)

    def spawn_claude(self, i: int) -> None:
        name = f"c{i}"
        project = str(self.rig.sandbox.project)
        if self.ok("spawn", "--cwd", project, "--name", name, "--permission-mode", "default",
                   "--", self.task()):  # fmt: skip
            self.acks.spawned.add(name)

    def task(self) -> str:
        self.next_task += 1
        return f"RUN: touch soak-{self.next_task}.txt"

    # -- the churn --------------------------------------------------------------------------

    def tick(self, listed: list[dict[str, Any]]) -> None:
        for agent in listed:
            if agent["harness"] != "claude" or agent["state"] in GONE:
                continue
            request = agent.get("request")
            if agent["state"] == "needs-input" and request:
                if self.ok("allow", agent["name"], "--request", request["id"]):
                    self.acks.answers.append((agent["name"], request["id"]))
            elif agent["state"] in ("done", "idle"):
                self.ok("send", agent["name"], self.task())
        generic = [a for a in listed if a["harness"] == "generic"]
        if not generic:
            return
        agent = self.rand.choice(generic)
        if agent["state"] in GONE:
            if self.rand.random() < 0.5:
                self.ok("resume", agent["name"])
            elif self.ok("forget", agent["name"]):
                self.acks.forgotten.add(agent["name"])
                self.spawn_generic()
        else:
            self.ok("stop", agent["name"])

    def toggle_list(self) -> None:
        desk = self.rig.desk
        if desk is None:
            return
        icon = desk.tray_icon()
        if icon is None:
            self.acks.errors.append("the tray icon was not found to open the list")
            return
        x, y, w, h = icon
        desk.click(x + w // 2, y + h // 2)
        self.list_open = not self.list_open
        self.clicks += 1

    def kill_daemon(self) -> None:
        assert self.rig.daemon is not None
        os.kill(self.rig.daemon.pid, signal.SIGKILL)
        self.rig.daemon.wait()
        self.rig.start_daemon()
        self.run += 1
        self.kills += 1
        print(f"{self.when()} the daemon was killed and started again", flush=True)

    # -- the figures ------------------------------------------------------------------------

    def fleet(self) -> Fleet:
        assert self.rig.daemon is not None
        return Fleet(
            self.rig.dirs.hosts,
            daemon=self.rig.daemon.pid,
            app=self.rig.app.pid if self.rig.app is not None else None,
        )

    def sample(self) -> Sample:
        fleet = self.fleet()
        mem = fleet.memory()
        fds: dict[str, int] = {}
        for part, pid in (("daemon", fleet.daemon), ("app", fleet.app)):
            if pid:
                try:
                    fds[part] = psutil.Process(pid).num_fds()
                except psutil.Error:
                    fds[part] = -1
        log_bytes = sum(p.stat().st_size for p in self.rig.dirs.state.glob("*.db*") if p.is_file())
        status = self.rig.status() or {}
        return Sample(
            at=time.monotonic(),
            rss={k: v[0] for k, v in mem.items()},
            pss={k: v[1] for k, v in mem.items()},
            fds=fds,
            log_bytes=log_bytes,
            seq=int(status.get("seq") or 0),
            run=self.run,
            hosts=int(mem.get("hosts", (0, 0, 0, 0))[3]),
        )

    def start(self) -> None:
        self.rig.start_daemon()
        # A client only: else, when the restarted daemon is slower to start than the app's
        # EMBED_AFTER (3 s, under load), the app runs the daemon inside itself, the bench's
        # daemon exits "already running", and the app's figures are the daemon's too.
        if not self.args.no_app and not self.rig.start_app(embed=False):
            print("no desktop here (Xvfb, trayer, dunst): the app is left out")
        for i in range(self.args.claude if self.rig.env.get("VOLEE_CLAUDE_BIN") else 0):
            self.spawn_claude(i)
        for _ in range(self.args.agents - self.args.claude):
            self.spawn_generic()
        wanted = len(self.acks.spawned)

        def settled() -> bool:
            listed = agents(self.rig.env)
            live = [a for a in listed if a["state"] not in GONE]
            claude = [a for a in listed if a["harness"] == "claude"]
            return len(live) == wanted and all(
                a["state"] in ("needs-input", "done", "idle") for a in claude
            )

        wait_for("the agents to settle", settled, 120 + 3 * wanted)

    def churn(self) -> None:
        seconds = self.args.minutes * 60
        began = self.began = time.monotonic()
        kills = self.args.kills
        kills_at = [began + seconds * (k + 1) / (kills + 1) for k in range(kills)]
        next_sample = began
        ticks = 0
        while (now := time.monotonic()) < began + seconds:
            if kills_at and now >= kills_at[0]:
                kills_at.pop(0)
                self.kill_daemon()
            if now >= next_sample:
                self.samples.append(self.sample())
                next_sample = now + self.args.sample
            try:
                self.tick(agents(self.rig.env))
            except SystemExit as e:  # `volee ls` failed (the daemon restarting): next tick
                self.acks.errors.append(str(e)[:160])
            ticks += 1
            if ticks % 10 == 0:
                self.toggle_list()
            time.sleep(self.args.tick)
        if self.list_open:
            self.toggle_list()
        self.samples.append(self.sample())

    # -- the checks -------------------------------------------------------------------------

    def lost(self) -> list[str]:
        listed = {a["name"]: a for a in agents(self.rig.env)}
        problems = [
            f"spawned {n}, not listed"
            for n in sorted(self.acks.spawned - self.acks.forgotten)
            if n not in listed
        ]
        problems += [
            f"forgot {n}, still listed" for n in sorted(self.acks.forgotten) if n in listed
        ]
        by_agent: dict[str, set[str]] = {}
        for name, request in self.acks.answers:
            by_agent.setdefault(name, set()).add(request)
        for name, requests in sorted(by_agent.items()):
            done = self.volee("timeline", name, "--json")
            if done.returncode != 0:
                problems.append(f"timeline {name}: {done.stderr.strip()[:120]}")
                continue
            items = json.loads(done.stdout)
            answered = {e.get("request") for e in items if e.get("type") == "request-answered"}
            missing = requests - answered
            if missing and items and items[0].get("type") == "timeline-truncated":
                # A long-lived agent's timeline is cut to one reply (its oldest events left
                # out, said by the marker): those answers are looked for in the log itself.
                found = self.answered_in_log(missing)
                self.beyond_timeline += len(found)
                missing -= found
            problems += [
                f"{name}: answer to {r} acknowledged, not in the log" for r in sorted(missing)
            ]
        return problems

    def answered_in_log(self, requests: set[str]) -> set[str]:
        """Which of ``requests`` have a ``request-answered`` event in the log's file."""
        db = self.rig.dirs.events_db
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return {
                r
                for r in requests
                if conn.execute(
                    "SELECT 1 FROM events WHERE type = 'request-answered' "
                    "AND instr(payload, ?) > 0 LIMIT 1",
                    (json.dumps(r).encode(),),
                ).fetchone()
            }

    def left_behind(self) -> list[str]:
        mark = str(self.rig.root)
        found = []
        for proc in psutil.process_iter(["pid", "cmdline", "environ"]):
            try:
                cmdline = " ".join(proc.info["cmdline"] or [])
                environ = proc.info["environ"] or {}
            except psutil.Error:
                continue
            if proc.pid == os.getpid():
                continue
            if mark in cmdline or environ.get("VOLEE_HOME", "").startswith(mark):
                found.append(f"{proc.pid} {cmdline[:100]}")
        return found


def slope(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of (seconds, MiB) points, in MiB per hour."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    den = sum((p[0] - mx) ** 2 for p in points)
    return 3600 * sum((p[0] - mx) * (p[1] - my) for p in points) / den if den else None


def growth_per_hour(samples: list[Sample], part: str, warmup: float) -> float | None:
    """The largest slope, in MiB per hour, of ``part``'s RSS after the warm-up: over each
    daemon run for the daemon (its memory starts again at each kill), over the whole for the
    app, and per host for the hosts (their number changes with the churn)."""
    if not samples:
        return None
    t0 = samples[0].at
    runs = sorted({s.run for s in samples}) if part == "daemon" else [None]
    found = []
    for run in runs:
        mine = [s for s in samples if part in s.rss and run in (None, s.run)]
        if not mine:
            continue
        # Each daemon run warms up again after its start.
        began = mine[0].at if run is not None else t0
        points = [
            (s.at - t0, s.rss[part] / ((s.hosts or 1) if part == "hosts" else 1))
            for s in mine
            if s.at - began >= warmup
        ]
        grown = slope(points)
        if grown is not None:
            found.append(grown)
    return max(found) if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--agents", type=int, default=60)
    parser.add_argument("--claude", type=int, default=5)
    parser.add_argument("--tick", type=float, default=3.0)
    parser.add_argument("--sample", type=float, default=30.0)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--no-app", action="store_true")
    parser.add_argument("--kills", type=int, default=2, help="daemon SIGKILLs, evenly spread")
    parser.add_argument(
        "--tracemalloc",
        metavar="DIR",
        help="tracemalloc snapshots of the daemon and the app into DIR (bench/memtrace)",
    )
    args = parser.parse_args()
    claude = find_harness("claude") if args.claude else None
    if claude is None:
        print("the pinned Claude Code is not installed (scripts/install-harnesses): generic only")
    soak = Soak(args, claude)
    if args.tracemalloc:
        Path(args.tracemalloc).mkdir(parents=True, exist_ok=True)
        soak.rig.env["VOLEE_TRACEMALLOC"] = str(Path(args.tracemalloc).resolve())
        soak.rig.env["PYTHONPATH"] = str(ROOT / "bench" / "memtrace")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        soak.start()
        time.sleep(10)
        before = idle_cpu(soak.fleet(), args.idle_seconds)
        soak.churn()
        # What the churn started ends, and the daemon's collection and trim a minute after its
        # last event (volee_desktop/memtrim.py) run before "at rest" is measured.
        time.sleep(memtrim.AFTER + 10)
        after = idle_cpu(soak.fleet(), args.idle_seconds)
        lost = soak.lost()
    finally:
        samples = soak.samples
        soak.rig.close()  # stops the app and the daemon, kills every host and program
    time.sleep(2)
    leftovers = soak.left_behind()
    report(args, soak, samples, before, after, lost, leftovers)
    return 1 if lost or leftovers else 0


def report(
    args: argparse.Namespace,
    soak: Soak,
    samples: list[Sample],
    before: dict[str, float],
    after: dict[str, float],
    lost: list[str],
    leftovers: list[str],
) -> None:
    minutes = (samples[-1].at - samples[0].at) / 60 if len(samples) > 1 else 0.0
    print(f"\n== soak: {args.agents} agents ({args.claude} Claude Code), {minutes:.1f} min ==")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"acknowledged: {len(soak.acks.spawned)} spawns, {len(soak.acks.forgotten)} forgets, "
        f"{len(soak.acks.answers)} answers; daemon killed {soak.kills}x; list toggled "
        f"{soak.clicks}x; refused or failed commands: {len(soak.acks.errors)}"
    )
    for err in soak.acks.errors[:12]:
        print(f"  {err}")
    warmup = max(60.0, 0.1 * args.minutes * 60)
    print(f"RSS / PSS MiB (first -> last), growth per hour after {warmup:.0f} s (hosts: per host):")
    for part in ("app", "daemon", "hosts"):
        have = [s for s in samples if part in s.rss]
        if not have:
            continue
        grown = growth_per_hour(samples, part, warmup)
        grow = "n/a (too short)" if grown is None else f"{grown:+.1f} MiB/h (target <= 5)"
        print(
            f"  {part:7s} {have[0].rss[part]:7.1f} / {have[0].pss[part]:6.1f} -> "
            f"{have[-1].rss[part]:7.1f} / {have[-1].pss[part]:6.1f}   {grow}"
        )
    for part in ("app", "daemon"):
        fds = [s.fds[part] for s in samples if part in s.fds]
        if fds:
            print(f"  fds {part:7s} first {fds[0]}, max {max(fds)}, last {fds[-1]}")
    if samples:
        last = samples[-1]
        agent_hours = args.agents * minutes / 60
        rate = last.seq / agent_hours if agent_hours else 0.0
        print(
            f"log: {last.log_bytes / 1024 / 1024:.1f} MiB, {last.seq} events, "
            f"{rate:.0f} events per agent-hour"
        )
    print("CPU at rest, % of one core (before the churn -> after it):")
    for part in sorted(set(before) | set(after)):
        print(f"  {part:7s} {before.get(part, 0.0):7.3f} -> {after.get(part, 0.0):7.3f}")
    total_b, total_a = sum(before.values()), sum(after.values())
    ratio = f"{total_a / total_b:.2f}x" if total_b else "n/a"
    print(f"  total   {total_b:7.3f} -> {total_a:7.3f} ({ratio})")
    print(
        f"lost: {len(lost)}"
        + (
            f" ({soak.beyond_timeline} answers found in the log past the timeline's one reply)"
            if soak.beyond_timeline
            else ""
        )
        + "".join(f"\n  {p}" for p in lost)
    )
    print(f"left behind after close: {len(leftovers)}" + "".join(f"\n  {p}" for p in leftovers))


if __name__ == "__main__":
    raise SystemExit(main())

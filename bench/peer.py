"""volee's tray app against ccmanager with the same agents, in one run (issue 27, item 4).

    .venv/bin/python bench/peer.py [--agents 5] [--more 10] [--idle-seconds 60]
        [--ccmanager DIR]   # an npm prefix holding ccmanager@4.2.3 and @oven/bun-linux-x64

Both sides run at the same time, on the same fake Anthropic server, the same HOME, one git
repository with a worktree per agent and side:

- ccmanager 4.2.3 under Bun (it needs Bun's terminal API), in a tmux PTY of 120 x 40: for
  each worktree its menu's quick key starts Claude Code there, the bench types ``say hello``,
  then Ctrl+E returns to the menu;
- volee: the tray app (``volee app`` on Xvfb + trayer, the daemon embedded in it), and
  ``volee spawn --cwd <worktree> -- 'say hello'`` for each agent.

Once every agent answered and things settled: memory (RSS and PSS summed over every process;
PSS counts a shared page once across them) of each manager with all its children, the agents'
own Claude Code processes left out (printed apart), then the CPU over ``--idle-seconds`` of
each manager and of its agents (children reaped counted, ``bench/counting.py``), ratios
volee / ccmanager from this run, with the load average.  Then ``--more`` generic agents
(``sleep``) are added to volee and its memory again: the cost of each 10 more.
Targets (issue 27): app RSS <= 1.0x ccmanager's, each 10 more agents <= +30 MB, the agents'
idle CPU <= 1.1x.  Without ccmanager installed, only volee is measured (``--no-peer``
forces that: the bench's own path, for its tiny test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
from counting import Fleet, host_records, memory, own_and_reaped, tree  # noqa: E402
from fleet import Rig, agents, cli, wait_for  # noqa: E402

from tests.fakes.harness_env import claude_env, find_harness  # noqa: E402

MB = 1_000_000
MiB = 1024 * 1024
VERSION = "4.2.3"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def is_agent(proc: psutil.Process) -> bool:
    """A Claude Code process (the agent itself, not its manager)."""
    try:
        argv = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return bool(argv) and Path(argv[0]).name in ("claude", "claude.exe")


def split_tree(pid: int) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """(the manager's processes, the agents' process trees) under ``pid``."""
    agents_ = [p for p in tree(pid) if is_agent(p)]
    roots = [p.pid for p in agents_]
    mine = tree(pid, exclude=roots)
    theirs = [q for a in roots for q in tree(a)]
    return mine, theirs


def cpu_of(procs: list[psutil.Process]) -> float:
    return sum(own_and_reaped(p) for p in procs)


def mb(procs: list[psutil.Process]) -> tuple[float, float, int]:
    rss, pss, _uss = memory(procs)
    return rss * MiB / MB, pss * MiB / MB, len(procs)


def worktrees(repo: Path, names: list[str]) -> list[Path]:
    git = ["git", "-C", str(repo)]
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run(
        [
            *git,
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "0",
        ],
        check=True,
    )
    out = []
    for name in names:
        path = repo.parent / name
        subprocess.run([*git, "worktree", "add", "-q", str(path), "-b", name], check=True)
        out.append(path)
    return out


class CCManager:
    """ccmanager in a tmux PTY of its own (a private tmux server)."""

    def __init__(self, prefix: Path, rig: Rig, claude: Path, trees: list[Path]) -> None:
        self.bun = prefix / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun"
        self.cli = prefix / "node_modules" / "ccmanager" / "dist" / "cli.js"
        self.sock = str(rig.root / "tmux.sock")
        bindir = rig.root / "bin"
        bindir.mkdir(exist_ok=True)
        (bindir / "claude").symlink_to(claude)
        # A HOME of its own (Claude Code's config, sessions): volee's discovery would take
        # ccmanager's sessions for sessions outside volee and list them (a person runs one
        # manager or the other).
        home = rig.root / "h2"
        for path in trees:
            self.env = claude_env(home, rig.fake.port, path)
        self.env["PATH"] = f"{bindir}:{self.env.get('PATH', '/usr/bin:/bin')}"
        self.env.pop("TMUX", None)
        self.pid = 0
        self.last = ""

    @staticmethod
    def installed(prefix: Path) -> bool:
        bun = prefix / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun"
        return bun.is_file() and (prefix / "node_modules" / "ccmanager" / "dist").is_dir()

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.sock, *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "cc")

    def start(self, repo: Path, last: str) -> None:
        """Run it in ``repo`` until its menu lists the worktree ``last``."""
        command = f"cd {repo} && exec {self.bun} {self.cli}"
        self.tmux("new-session", "-d", "-s", "cc", "-x", "120", "-y", "40", command)
        self.last = last
        wait_for("ccmanager's menu", lambda: f" {last} " in self.screen(), 60)
        self.pid = int(self.tmux("display-message", "-p", "-t", "cc", "#{pane_pid}").strip())

    def session(self, key: str, count: int) -> None:
        """Start a session from the menu's quick key, ask it, return to the menu."""
        menu = self.screen()
        self.tmux("send-keys", "-t", "cc", key)
        try:
            wait_for(
                f"Claude Code in session {key}",
                lambda: (
                    len([p for p in tree(self.pid) if is_agent(p)]) >= count
                    and "Select a worktree" not in self.screen()
                ),
                60,
            )
        except SystemExit:
            procs = [" ".join(p.cmdline()[:2]) for p in tree(self.pid)]
            raise SystemExit(f"no session {key}: {procs}\n{menu}\n{self.screen()}") from None
        # Its prompt drawn (Claude Code's footer), else after 30 s anyway.
        deadline = time.monotonic() + 30
        while "shortcuts" not in self.screen() and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1)
        self.tmux("send-keys", "-t", "cc", "-l", "say hello")
        time.sleep(0.5)
        self.tmux("send-keys", "-t", "cc", "Enter")
        time.sleep(3)
        self.tmux("send-keys", "-t", "cc", "C-e")
        wait_for("ccmanager's menu again", lambda: f" {self.last} " in self.screen(), 30)

    def close(self) -> None:
        if self.pid:
            for proc in tree(self.pid):
                try:
                    proc.kill()
                except psutil.NoSuchProcess:
                    pass
        self.tmux("kill-server")


def volee_side(rig: Rig, trees: list[Path]) -> Fleet:
    if not rig.start_app():
        raise SystemExit("the tray app needs Xvfb, trayer, dbus and xdotool (scripts/dev)")
    assert rig.app is not None
    for i, path in enumerate(trees):
        cli(rig.env, "spawn", "--cwd", str(path), "--name", f"v{i}", "--", "say hello")
    return Fleet(rig.dirs.hosts, app=rig.app.pid)


def volee_parts(fleet: Fleet) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """(volee's processes: the app with its embedded daemon, the hosts; the agents' trees)."""
    parts = fleet.scan()
    programs = [r["program"] for r in host_records(fleet.hosts_dir) if r["program"]]
    theirs = [q for pid in programs for q in tree(pid)]
    return parts.get("app", []) + parts.get("hosts", []), theirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=5, help="at most 9 (the menu's keys)")
    parser.add_argument("--more", type=int, default=10, help="generic agents added to volee")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--ccmanager", type=Path, default=Path("/tmp/peers"))
    parser.add_argument("--no-peer", action="store_true", help="volee only")
    parser.add_argument("--generic", action="store_true", help="generic agents, no Claude Code")
    args = parser.parse_args(argv)
    claude = None if args.generic else find_harness("claude")
    if claude is None and not args.generic:
        raise SystemExit("the pinned Claude Code is not installed (scripts/install-harnesses)")
    peer = not args.no_peer and not args.generic and CCManager.installed(args.ccmanager)
    if not peer and not args.no_peer and not args.generic:
        print(f"ccmanager {VERSION} + Bun not under {args.ccmanager} (npm install --prefix ...)")
    rig = Rig(claude)
    ccm: CCManager | None = None
    try:
        names = [f"v{i}" for i in range(args.agents)] + (
            [f"a{i}" for i in range(args.agents)] if peer else []
        )
        trees = worktrees(rig.root / "r", names)
        for path in trees:
            claude_env(rig.sandbox.home, rig.fake.port, path)  # trusted, as the project is
        if args.generic:
            rig.start_app()
            assert rig.app is not None
            for i, path in enumerate(trees[: args.agents]):
                cli(
                    rig.env,
                    *("spawn", "--harness", "generic", "--cwd", str(path), "--name", f"v{i}"),
                    *("--", "sleep", "600"),
                )
            fleet = Fleet(rig.dirs.hosts, app=rig.app.pid)
        else:
            fleet = volee_side(rig, trees[: args.agents])
        if peer:
            assert claude is not None
            ccm = CCManager(args.ccmanager, rig, claude, trees[args.agents :])
            ccm.start(rig.root / "r", names[-1])
            for i in range(args.agents):
                # The menu lists the repository (0), then the worktrees by name: a*, v*.
                ccm.session(str(1 + i), i + 1)
        settled = ("done", "idle") if claude is not None else ("working", "idle", "done")
        wait_for(
            "volee's agents to answer",
            lambda: (
                len(host_records(rig.dirs.hosts)) >= args.agents
                and all(a["state"] in settled for a in agents(rig.env))
            ),
            180,
        )
        time.sleep(args.settle)
        wait_for(  # a listing in flight (Node, ~90 MB) is not what volee weighs at rest
            "no discovery listing running",
            lambda: not any(is_agent(p) for p in volee_parts(fleet)[0]),
            60,
        )
        sides: dict[str, Any] = {"volee": lambda: volee_parts(fleet)}
        if ccm is not None:
            pid = ccm.pid
            sides["ccmanager"] = lambda: split_tree(pid)
        mem = {}
        detail = []
        for name, parts in sides.items():
            mine, theirs = parts()
            mem[name] = (mb(mine), mb(theirs))
            for proc in mine:
                try:
                    what = " ".join(Path(a).name for a in proc.cmdline()[:4])[:60]
                    rss_one = proc.memory_info().rss / MB
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                detail.append(f"    {name:9s} {rss_one:6.1f} MB  {what}")
        before = {name: [cpu_of(x) for x in parts()] for name, parts in sides.items()}
        t0 = time.monotonic()
        time.sleep(args.idle_seconds)
        wall = time.monotonic() - t0
        after = {name: [cpu_of(x) for x in parts()] for name, parts in sides.items()}
        bodies = [json.dumps(r.get("body")) for r in rig.fake.requests("/v1/messages")]
        asked = {
            side: sum(any(str(t) in b and "say hello" in b for b in bodies) for t in group)
            for side, group in (
                ("volee", trees[: args.agents]),
                ("ccmanager", trees[args.agents :]),
            )
        }
        print(f"\n{args.agents} agents each, idle {wall:.0f} s; {load()}")
        print(
            "  sessions whose prompt reached the model: "
            + ", ".join(f"{side} {n}/{args.agents}" for side, n in asked.items() if n or peer)
        )
        print(
            "  side       manager RSS / PSS MB (procs)   agents RSS / PSS MB   idle CPU % of a core"
        )
        for name in sides:
            (rss, pss, n), (arss, apss, an) = mem[name]
            own, theirs = (
                100 * (a - b) / wall for a, b in zip(after[name], before[name], strict=True)
            )
            print(
                f"  {name:9s} {rss:7.1f} / {pss:6.1f} ({n:2d})        "
                f"{arss:7.1f} / {apss:6.1f} ({an})     manager {own:.3f}, agents {theirs:.3f}"
            )
        print("  the managers' processes (RSS each):")
        print("\n".join(detail))
        if "ccmanager" in mem:
            (vr, vp, _), (var, _vap, _) = mem["volee"]
            (cr, cp, _), (car, _cap, _) = mem["ccmanager"]
            v_cpu = [(a - b) for a, b in zip(after["volee"], before["volee"], strict=True)]
            c_cpu = [(a - b) for a, b in zip(after["ccmanager"], before["ccmanager"], strict=True)]
            agents_ratio = f"{v_cpu[1] / c_cpu[1]:.2f}x" if c_cpu[1] > 0 else "n/a"
            manager_ratio = f"{v_cpu[0] / c_cpu[0]:.2f}x" if c_cpu[0] > 0 else "n/a"
            print(
                f"  volee / ccmanager: manager RSS {vr / cr:.2f}x (target <= 1.0), PSS "
                f"{vp / cp:.2f}x; agents RSS {var / car:.2f}x; idle CPU: manager "
                f"{manager_ratio}, agents {agents_ratio} (target <= 1.1)"
            )
        if args.more:
            (r0, p0, _), _a = mem["volee"]
            project = str(rig.sandbox.project)
            for i in range(args.more):
                cli(
                    rig.env,
                    *("spawn", "--harness", "generic", "--cwd", project, "--name", f"m{i}"),
                    *("--", "sleep", "600"),
                )
            wait_for(
                "the added agents",
                lambda: len(host_records(rig.dirs.hosts)) >= args.agents + args.more,
                120,
            )
            time.sleep(min(args.settle, 5))
            r1, p1, n1 = mb(volee_parts(fleet)[0])
            print(
                f"  volee with {args.more} more generic agents: RSS {r1:.1f} MB (+{r1 - r0:.1f}), "
                f"PSS {p1:.1f} MB (+{p1 - p0:.1f}), {n1} processes; target <= +30 MB per 10; "
                f"{load()}"
            )
    finally:
        if ccm is not None:
            ccm.close()
        rig.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

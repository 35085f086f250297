"""volee's tray app against ccmanager with the same agents, in one run (issue 27).

    .venv/bin/python bench/peer.py [--agents 5] [--more 10] [--idle-seconds 60]
        [--busy-seconds 15] [--pairs 3]
        [--ccmanager DIR]   # an npm prefix holding ccmanager@4.2.3 and @oven/bun-linux-x64

Both sides run at the same time, on the same fake Anthropic server, one git repository with
a worktree per agent and side, Claude Code in the same permission mode (volee's default,
``acceptEdits``; ccmanager's command preset is given it):

- ccmanager 4.2.3 under Bun (it needs Bun's terminal API), in a tmux PTY of 120 x 40: for
  each worktree its menu's quick key starts Claude Code there, the bench types ``say hello``,
  then Ctrl+E returns to the menu; its sessions in a HOME of their own;
- volee: the tray app (``volee app`` on Xvfb + trayer, the daemon embedded in it), and
  ``volee spawn --cwd <worktree> -- 'say hello'`` for each agent.

In this order, each printed as volee / ccmanager ratios with the load average:

1. start-up, before any agent: ``--pairs`` alternating pairs (after a warm-up of each) of
   ``volee app`` (no daemon running: it embeds one) to its icon in the tray and
   ``agents.list`` answered (``bench/app_start.py``'s ``once``), against ccmanager's launch
   (``bun cli.js`` in a new window of a tmux server already up) to its menu drawn (the
   worktrees listed); medians and the ratio pair by pair;
2. once every agent answered and things settled: memory (RSS and PSS summed over every
   process; PSS counts a shared page once across them) of each manager with all its
   children, the agents' own Claude Code processes apart;
3. the app's list opened (a click on its tray icon, as ``bench/soak.py`` does; the daemon
   then counts an interactive client), then the CPU over ``--idle-seconds`` of each manager
   and of its agents (children reaped counted, ``bench/counting.py``);
4. busy: every agent of both sides given a prompt whose reply the fake server holds, the
   same CPU over ``--busy-seconds``;
5. turn end: the held replies let go one at a time (a volee agent, then a ccmanager
   session, ...); the time from the server writing the reply's last byte to the manager
   showing the turn ended: volee's state ``done`` (``agents.list`` polled on its socket),
   ccmanager's menu row ``○ Idle`` (its screen read from tmux); median of the sessions;
6. permission: each agent asked for a shell command (the server's tool call, ``RUN:``),
   held and let go the same way; from the tool call's last byte to volee's ``needs-input``
   and ccmanager's ``◐ Waiting``;
7. ``--more`` generic agents (``sleep``) added to volee and its memory again: the cost of
   each 10 more.

Targets (issue 27): start-up <= 1.0x, app RSS <= 1.0x ccmanager's, each 10 more agents <= +30
MB, the app's idle CPU with its list open <= 0.05x, the agents' idle CPU <= 1.1x.  Without
ccmanager installed, only volee is measured (``--no-peer`` forces that; ``--generic`` runs
``sleep`` agents and skips the prompts: the bench's own path, for its tiny test).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
from app_start import compiled, kept, once  # noqa: E402
from counting import Fleet, host_records, memory, own_and_reaped, tree  # noqa: E402
from fleet import Rig, agents, cli, wait_for  # noqa: E402

from tests.fakes.fake_anthropic import (  # noqa: E402
    FakeAnthropic,
    Reply,
    _block_text,
    _peer_closed,
    last_user_message,
    strip_reminders,
)
from tests.fakes.harness_env import claude_env, find_harness  # noqa: E402
from volee_desktop.ipc.client import Client  # noqa: E402

MB = 1_000_000
MiB = 1024 * 1024
VERSION = "4.2.3"
#: Claude Code's permission mode on both sides: volee's default (harness/claude.py).
PERMISSION_MODE = "acceptEdits"
#: A word in a prompt that makes the fake server hold its reply until the bench lets it go.
GATE = re.compile(r"\bgate-(?:turn|perm)-[a-z]\d+\b")
#: What ccmanager's menu row shows for a session's state (constants/statusIcons.js).
CCM_STATES = {"● Busy": "busy", "◐ Waiting": "waiting", "○ Idle": "idle"}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class GatedFake(FakeAnthropic):
    """The fake model, holding each reply whose prompt holds a gate word (``gate-turn-v0``)
    until the bench opens that gate, and noting when the reply to Claude Code's own request
    (the one offering tools; a side request for a title is held too, but not timed) was
    written to its last byte."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()
        self.guard = threading.Lock()
        self.gates: dict[str, threading.Event] = {}
        self.held: set[str] = set()
        self.sent: dict[str, float] = {}
        self.kinds: dict[str, str] = {}

    def gate(self, key: str) -> threading.Event:
        with self.guard:
            return self.gates.setdefault(key, threading.Event())

    def open(self, key: str) -> None:
        self.gate(key).set()

    def open_all(self) -> None:
        with self.guard:
            gates = list(self.gates.values())
        for gate in gates:
            gate.set()

    def holding(self, keys: list[str]) -> bool:
        with self.guard:
            return all(k in self.held for k in keys)

    def sent_at(self, key: str) -> float | None:
        with self.guard:
            return self.sent.get(key)

    def handle_post(self, path: str, body: dict[str, Any]) -> tuple[int, Any, Reply]:
        status, payload, reply = super().handle_post(path, body)
        self.local.mark = None
        if path == "/v1/messages" and status == 200:
            text = strip_reminders(_block_text(last_user_message(body.get("messages") or [])))
            match = GATE.search(text)
            if match:
                key, main = match.group(0), bool(body.get("tools"))
                self.local.mark = (key, main)
                if main and not isinstance(payload, dict):
                    payload = self.timed(payload, key, "tool_use" if reply.tool else "end_turn")
        return status, payload, reply

    def timed(self, chunks: Iterator[bytes], key: str, kind: str) -> Iterator[bytes]:
        yield from chunks
        # Resumed once the handler wrote and flushed the last chunk (message_stop).
        with self.guard:
            self.sent.setdefault(key, time.monotonic())
            self.kinds[key] = kind

    def wait_reply(self, reply: Reply, conn: socket.socket) -> bool:
        mark = getattr(self.local, "mark", None)
        self.local.mark = None
        if mark is None:
            return super().wait_reply(reply, conn)
        key, main = mark
        gate = self.gate(key)
        if main:
            with self.guard:
                self.held.add(key)
        try:
            while not gate.wait(0.02):
                if _peer_closed(conn, 0):
                    return False
        finally:
            with self.guard:
                self.held.discard(key)
        return super().wait_reply(reply, conn)


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
        # Claude Code in volee's permission mode (its default preset is plain ``claude``).
        config = home / ".config" / "ccmanager" / "config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        preset: dict[str, Any] = {"id": "1", "name": "Main", "command": "claude"}
        preset["args"] = ["--permission-mode", PERMISSION_MODE]
        config.write_text(
            json.dumps({"commandPresets": {"presets": [preset], "defaultPresetId": "1"}})
        )
        self.pid = 0
        self.last = trees[-1].name if trees else ""

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

    def screen(self, window: str = "cc") -> str:
        return self.tmux("capture-pane", "-p", "-t", window)

    def serve(self) -> None:
        """The tmux server up (a window that sleeps), so a launch times ccmanager, not tmux."""
        self.tmux("new-session", "-d", "-s", "hold", "-x", "120", "-y", "40", "sleep 86400")

    def command(self, repo: Path) -> str:
        return f"cd {repo} && exec {self.bun} {self.cli}"

    def first_screen(self, repo: Path) -> tuple[float, float]:
        """(seconds from launching ccmanager to its menu drawn, the worktrees listed; its CPU
        seconds meanwhile); it is killed after."""
        began = time.perf_counter()
        self.tmux("new-session", "-d", "-s", "first", "-x", "120", "-y", "40", self.command(repo))
        procs: list[psutil.Process] = []
        try:
            while f" {self.last} " not in self.screen("first"):
                if time.perf_counter() - began > 60:
                    raise SystemExit("ccmanager's menu not drawn within 60 s")
                time.sleep(0.01)
            wall = time.perf_counter() - began
            pid = self.tmux("display-message", "-p", "-t", "first", "#{pane_pid}").strip()
            procs = tree(int(pid)) if pid.isdigit() else []
            return wall, cpu_of(procs)
        finally:
            for proc in procs:
                try:
                    proc.kill()
                except psutil.NoSuchProcess:
                    pass
            self.tmux("kill-session", "-t", "first")

    def start(self, repo: Path) -> None:
        """Run it in ``repo`` until its menu lists the last worktree."""
        self.tmux("new-session", "-d", "-s", "cc", "-x", "120", "-y", "40", self.command(repo))
        wait_for("ccmanager's menu", lambda: f" {self.last} " in self.screen(), 60)
        self.pid = int(self.tmux("display-message", "-p", "-t", "cc", "#{pane_pid}").strip())

    def in_menu(self) -> bool:
        return f" {self.last} " in self.screen()

    def cursor(self) -> int | None:
        """The menu's row under the cursor (its number)."""
        for line in self.screen().splitlines():
            match = re.match(r"❯ (\d) ❯ ", line)
            if match:
                return int(match.group(1))
        return None

    def enter(self, row: int, count: int) -> None:
        """Open the session of the menu's ``row`` (started there if it was none): the cursor
        moved there, then Enter.  (Its quick key, the row's digit, started a second session
        in the repository's own folder beside the one asked for, in 4.2.3 here.)"""
        menu = self.screen()
        for _ in range(30):
            at = self.cursor()
            if at == row:
                break
            self.tmux("send-keys", "-t", "cc", "Down" if at is None or at < row else "Up")
            time.sleep(0.2)
        else:
            raise SystemExit(f"ccmanager's cursor not brought to row {row}:\n{self.screen()}")
        self.tmux("send-keys", "-t", "cc", "Enter")
        try:
            wait_for(
                f"Claude Code in session {row}",
                lambda: (
                    len([p for p in tree(self.pid) if is_agent(p)]) >= count
                    and "Select a worktree" not in self.screen()
                ),
                60,
            )
        except SystemExit:
            procs = [" ".join(p.cmdline()[:2]) for p in tree(self.pid)]
            raise SystemExit(f"no session {row}: {procs}\n{menu}\n{self.screen()}") from None
        # Its prompt drawn (Claude Code's footer), else after 30 s anyway.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = self.screen()
            if "shift+tab" in screen or "shortcuts" in screen:
                break
            time.sleep(0.2)
        time.sleep(1)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "cc", "-l", text)
        time.sleep(0.5)
        self.tmux("send-keys", "-t", "cc", "Enter")

    def back(self) -> None:
        self.tmux("send-keys", "-t", "cc", "C-e")
        wait_for("ccmanager's menu again", self.in_menu, 30)

    def session(self, row: int, count: int) -> None:
        """Start a session from the menu's ``row``, ask it, return to the menu."""
        self.enter(row, count)
        self.type("say hello")
        time.sleep(3)
        self.back()

    def prompt(self, row: int, count: int, text: str, arrived: Callable[[], bool]) -> bool:
        """Type ``text`` into the session of ``row``; back to the menu once ``arrived()``
        (its request reached the server) or after 20 s.  Whether it arrived."""
        self.enter(row, count)
        self.type(text)
        deadline = time.monotonic() + 20
        while not arrived() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.back()
        return arrived()

    def state(self, name: str) -> str:
        """The state its menu row shows for the session in worktree ``name`` ("" for none)."""
        for line in self.screen().splitlines():
            if f"❯ {name} " in line:
                for shown, state in CCM_STATES.items():
                    if shown in line:
                        return state
                return ""
        return "?"

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


def desk_env(rig: Rig) -> dict[str, str]:
    env = dict(rig.env)
    for key in ("DISPLAY", "QT_QPA_PLATFORM", "DBUS_SESSION_BUS_ADDRESS"):
        env[key] = rig.desk.env[key]
    return env


def start_ups(rig: Rig, ccm: CCManager | None, repo: Path, pairs: int) -> float | None:
    """Launch to first screen, alternating volee and ccmanager (after a warm-up of each);
    the median of the ratios pair by pair."""
    from tests.ui import desktop as dt

    if dt.missing():
        print(f"start-up not measured: needs {', '.join(dt.missing())}")
        return None
    if rig.desk is None:
        rig.desk = dt.Desktop()
    env = desk_env(rig)
    if ccm is not None:
        ccm.serve()
    # As installed: pip and the .deb compile volee's modules (app_start.compiled).
    print(f"\nvolee's bytecode: {compiled()} modules compiled first (an install has them)")
    print(f"the dataclasses' compiled methods: {kept(env)}")
    runs: dict[str, list[tuple[float, float]]] = {"volee": [], "ccmanager": []}
    for i in range(pairs + 1):
        volee = once("app", env)
        peer = ccm.first_screen(repo) if ccm is not None else None
        if i:  # the first pair warms the page cache and the homes
            runs["volee"].append(volee)
            if peer is not None:
                runs["ccmanager"].append(peer)
    print(f"\nstart-up to the first screen, {pairs} pairs after a warm-up; {load()}")
    labels = {
        "volee": "volee app (icon in the tray + agents.list answered)",
        "ccmanager": "ccmanager (its menu drawn)",
    }
    for name, both in runs.items():
        if both:
            times = [wall for wall, _cpu in both]
            cpu = statistics.median(c for _wall, c in both)
            print(
                f"  {labels[name]:52s} median {statistics.median(times):.3f} s "
                f"({min(times):.3f}-{max(times):.3f}), its CPU {cpu:.3f} s"
            )
    if runs["ccmanager"]:
        each = [v[0] / c[0] for v, c in zip(runs["volee"], runs["ccmanager"], strict=True)]
        print(
            "  volee / ccmanager pair by pair: "
            + ", ".join(f"{r:.2f}x" for r in each)
            + f"; median {statistics.median(each):.2f}x (target <= 1.0)"
        )
        return statistics.median(each)
    return None


def open_list(rig: Rig) -> bool:
    """Click the tray icon; whether the daemon then counts an interactive client."""
    if rig.desk is None:
        return False

    def interactive() -> int:
        status = rig.status() or {}
        part = (status.get("extra") or {}).get("discovery") or {}
        return int(part.get("interactive_clients") or 0)

    if interactive():
        return True
    x, y, w, h = rig.desk.settled_tray_icon()
    rig.desk.click(x + w // 2, y + h // 2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if interactive():
            return True
        time.sleep(0.2)
    return False


class Watch:
    """Each side's shown state of an agent, read as the person would see it."""

    def __init__(self, rig: Rig, ccm: CCManager | None) -> None:
        self.client = Client.connect(rig.dirs.socket, timeout=30)
        self.ccm = ccm

    def volee(self, name: str) -> str:
        for agent in self.client.call("agents.list"):
            if agent.get("name") == name:
                return str(agent.get("state"))
        return "?"

    def state(self, side: str, name: str) -> str:
        if side == "volee":
            return self.volee(name)
        assert self.ccm is not None
        return self.ccm.state(name)

    def close(self) -> None:
        self.client.close()


def prompt_all(
    rig: Rig, ccm: CCManager | None, n: int, text: Callable[[str], str], fake: GatedFake
) -> list[tuple[str, str, str]]:
    """Give every agent of both sides a gated prompt; wait until the server holds every
    reply.  (side, name, gate) for each."""

    def gate_of(words: str) -> str:
        match = GATE.search(words)
        assert match is not None, words
        return match.group(0)

    out = []
    for i in range(n):
        key = text(f"v{i}")
        cli(rig.env, "send", f"v{i}", key)
        out.append(("volee", f"v{i}", gate_of(key)))
    if ccm is not None:
        for i in range(n):
            key = text(f"a{i}")
            gate = gate_of(key)
            if not ccm.prompt(1 + i, n, key, lambda g=gate: fake.holding([g])):
                print(f"  (ccmanager's a{i}: its prompt did not reach the server within 20 s)")
            out.append(("ccmanager", f"a{i}", gate))
    try:
        wait_for("every reply held", lambda: fake.holding([g for *_x, g in out]), 60)
    except SystemExit:
        missing = [g for *_x, g in out if not fake.holding([g])]
        print(f"  not held (their prompts did not reach the server): {', '.join(missing)}")
    return out


def let_go(
    fake: GatedFake, watch: Watch, prompted: list[tuple[str, str, str]], wanted: tuple[str, ...]
) -> dict[str, list[float]]:
    """Open the gates one at a time, alternating the sides; for each, seconds from the
    reply's last byte to the side showing one of ``wanted``."""
    order = sorted(prompted, key=lambda p: (int(p[1][1:]), p[0] != "volee"))
    out: dict[str, list[float]] = {"volee": [], "ccmanager": []}
    misses = []
    for side, name, gate in order:
        before = watch.state(side, name)
        fake.open(gate)
        deadline = time.monotonic() + 60
        seen = None
        while time.monotonic() < deadline:
            state = watch.state(side, name)
            if state in wanted and fake.sent_at(gate) is not None:
                seen = time.monotonic()
                break
            time.sleep(0.02)
        sent = fake.sent_at(gate)
        if seen is None or sent is None:
            misses.append(f"{name} not seen in 60 s ({before} -> {watch.state(side, name)})")
        elif before in wanted:
            misses.append(f"{name} showed {before} before its reply went")
        else:
            out[side].append(seen - sent)
        time.sleep(1)
    if misses:
        print(f"  not timed: {', '.join(misses)}")
    return out


def shown(watch: Watch, prompted: list[tuple[str, str, str]]) -> str:
    """What each side shows for its sessions now: its states, counted."""
    by: dict[str, list[str]] = {}
    for side, name, _gate in prompted:
        by.setdefault(side, []).append(watch.state(side, name) or "(none)")
    return "; ".join(
        f"{side} " + ", ".join(f"{state} {n}" for state, n in sorted(Counter(states).items()))
        for side, states in by.items()
    )


def latency_line(what: str, seen: dict[str, list[float]]) -> tuple[float | None, float | None]:
    v, c = median(seen["volee"]), median(seen["ccmanager"])
    cells = []
    for side, values in seen.items():
        if values:
            cells.append(
                f"{side} median {1000 * statistics.median(values):.0f} ms "
                f"({1000 * min(values):.0f}-{1000 * max(values):.0f}, {len(values)} sessions)"
            )
    print(f"  {what}: " + "; ".join(cells) + (f"; volee / ccmanager {ratio(v, c)}" if c else ""))
    return v, c


Sides = dict[str, Callable[[], tuple[list[psutil.Process], list[psutil.Process]]]]


def cpu_phase(sides: Sides, seconds: float) -> tuple[dict[str, tuple[float, float]], float]:
    """% of one core of each side's manager and agents over ``seconds``, and the wall."""
    before = {name: [cpu_of(x) for x in parts()] for name, parts in sides.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - t0
    after = {name: [cpu_of(x) for x in parts()] for name, parts in sides.items()}
    out = {}
    for name in sides:
        own, theirs = (100 * (a - b) / wall for a, b in zip(after[name], before[name], strict=True))
        out[name] = (own, theirs)
    return out, wall


def cpu_lines(cpu: dict[str, tuple[float, float]]) -> tuple[str, str]:
    """Each side's figures, and the ratios (manager, agents) when both sides ran."""
    for name, (own, theirs) in cpu.items():
        print(f"  {name:9s} manager {own:7.3f} %, agents {theirs:7.3f} % of a core")
    if "ccmanager" not in cpu:
        return "n/a", "n/a"
    (vo, va), (co, ca) = cpu["volee"], cpu["ccmanager"]
    manager, theirs = ratio(vo, co), ratio(va, ca)
    print(f"  volee / ccmanager: manager {manager}, agents {theirs}")
    return manager, theirs


def verdict(value: str, target: float) -> str:
    if not value.endswith("x"):
        return "not measured"
    return "met" if float(value[:-1]) <= target else "missed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=5, help="at most 9 (the menu's keys)")
    parser.add_argument("--more", type=int, default=10, help="generic agents added to volee")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--busy-seconds", type=float, default=15.0)
    parser.add_argument("--pairs", type=int, default=3, help="start-ups of each, alternating")
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
    fake = GatedFake()
    rig = Rig(claude, fake)
    ccm: CCManager | None = None
    watch: Watch | None = None
    summary: dict[str, tuple[str, float | None]] = {}
    try:
        names = [f"v{i}" for i in range(args.agents)] + (
            [f"a{i}" for i in range(args.agents)] if peer else []
        )
        trees = worktrees(rig.root / "r", names)
        for path in trees:
            claude_env(rig.sandbox.home, rig.fake.port, path)  # trusted, as the project is
        if peer:
            assert claude is not None
            ccm = CCManager(args.ccmanager, rig, claude, trees[args.agents :])
        if args.pairs > 0:
            start = start_ups(rig, ccm, rig.root / "r", args.pairs)
            summary["start-up, launch to first screen"] = (ratio(start, 1.0), 1.0)
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
        if ccm is not None:
            ccm.start(rig.root / "r")
            for i in range(args.agents):
                # The menu lists the repository (0), then the worktrees by name: a*, v*.
                ccm.session(1 + i, i + 1)
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

        def at_rest() -> None:
            wait_for(  # a listing in flight (Node, ~90 MB) is not what volee weighs at rest
                "no discovery listing running",
                lambda: not any(is_agent(p) for p in volee_parts(fleet)[0]),
                60,
            )

        at_rest()
        sides: Sides = {"volee": lambda: volee_parts(fleet)}
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
        bodies = [json.dumps(r.get("body")) for r in rig.fake.requests("/v1/messages")]
        asked = {
            side: sum(any(str(t) in b and "say hello" in b for b in bodies) for t in group)
            for side, group in (
                ("volee", trees[: args.agents]),
                ("ccmanager", trees[args.agents :]),
            )
        }
        print(f"\n{args.agents} agents each, at rest, the app's list closed; {load()}")
        print(
            "  sessions whose prompt reached the model: "
            + ", ".join(f"{side} {n}/{args.agents}" for side, n in asked.items() if n or peer)
        )
        print("  side       manager RSS / PSS MB (procs)   agents RSS / PSS MB (procs)")
        for name in sides:
            (rss, pss, n), (arss, apss, an) = mem[name]
            print(
                f"  {name:9s} {rss:7.1f} / {pss:6.1f} ({n:2d})        "
                f"{arss:7.1f} / {apss:6.1f} ({an})"
            )
        print("  the managers' processes (RSS each):")
        print("\n".join(detail))
        if "ccmanager" in mem:
            (vr, vp, _), (var, _vap, _) = mem["volee"]
            (cr, cp, _), (car, _cap, _) = mem["ccmanager"]
            print(
                f"  volee / ccmanager: manager RSS {vr / cr:.2f}x (target <= 1.0), PSS "
                f"{vp / cp:.2f}x; agents RSS {var / car:.2f}x"
            )
            summary["app RSS (app + daemon + hosts)"] = (ratio(vr, cr), 1.0)
            summary["app PSS"] = (ratio(vp, cp), None)

        list_open = open_list(rig)
        time.sleep(min(args.settle, 5))
        at_rest()
        cpu, wall = cpu_phase(sides, args.idle_seconds)
        print(
            f"\nidle {wall:.0f} s, the app's list "
            + ("open (the daemon counts an interactive client)" if list_open else "NOT open")
            + f"; {load()}"
        )
        manager, theirs = cpu_lines(cpu)
        label = "app idle CPU, list open" if list_open else "app idle CPU, list NOT open"
        summary[label] = (manager, 0.05)
        summary["agents' idle CPU"] = (theirs, 1.1)
        r1, p1, _n = mb(volee_parts(fleet)[0])
        (r0, p0, _), _a = mem["volee"]
        print(f"  volee's RSS with the list open {r1:.1f} MB (+{r1 - r0:.1f}), PSS {p1:.1f} MB")

        if claude is not None:
            watch = Watch(rig, ccm)
            print(f"\nbusy: every agent's reply held by the server; {load()}")
            turns = prompt_all(rig, ccm, args.agents, lambda n: f"say gate-turn-{n}", fake)
            time.sleep(2)
            print(f"  shown before: {shown(watch, turns)}")
            cpu, wall = cpu_phase(sides, args.busy_seconds)
            print(f"  over {wall:.0f} s; {load()}; shown after: {shown(watch, turns)}")
            manager, theirs = cpu_lines(cpu)
            summary["busy CPU, manager"] = (manager, None)
            summary["busy CPU, agents"] = (theirs, None)
            print(f"\nlatencies, the server's last byte -> the manager showing it; {load()}")
            seen = let_go(fake, watch, turns, ("done", "idle"))
            kinds = {fake.kinds.get(g) for *_x, g in turns}
            if kinds != {"end_turn"}:
                print(f"  (the server's replies were {sorted(str(k) for k in kinds)})")
            v, c = latency_line("turn end (volee done, ccmanager Idle)", seen)
            summary["turn end seen"] = (ratio(v, c), None)
            time.sleep(3)
            asks = prompt_all(rig, ccm, args.agents, lambda n: f"RUN: make gate-perm-{n}", fake)
            seen = let_go(fake, watch, asks, ("needs-input", "waiting"))
            kinds = {fake.kinds.get(g) for *_x, g in asks}
            v, c = latency_line("permission (volee needs-input, ccmanager Waiting)", seen)
            summary["permission seen"] = (ratio(v, c), None)
            if kinds != {"tool_use"}:
                print(f"  (the server's replies were {sorted(str(k) for k in kinds)})")

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
                f"\nvolee with {args.more} more generic agents: RSS {r1:.1f} MB "
                f"(+{r1 - r0:.1f} since at rest), PSS {p1:.1f} MB (+{p1 - p0:.1f}), "
                f"{n1} processes; target <= +30 MB per 10; {load()}"
            )
        if peer:
            print(f"\nvolee / ccmanager, this run; {load()}")
            for label, (value, target) in summary.items():
                goal = f"target <= {target:g}: {verdict(value, target)}" if target else ""
                print(f"  {label:36s} {value:>7s}  {goal}")
    finally:
        if watch is not None:
            watch.close()
        fake.open_all()
        if ccm is not None:
            ccm.close()
        rig.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""volee at rest with a fleet of agents, everything counted (issue 13).

    .venv/bin/python bench/fleet.py [--sizes 0,5,20,60] [--idle-seconds 60] [--claude 5]

For each size: a real daemon (``volee daemon run``) in a throwaway VOLEE_HOME, the real
Claude Code (the pinned one in ~/.cache/volee-harness) for the first ``--claude`` agents
against the fake Anthropic server (each runs one turn, then idles), cheap generic agents
(``sleep``) for the rest.  Then, with nothing changing:

1. the daemon alone: idle CPU (% of one core over ``--idle-seconds``) by part: the
   daemon with the children it reaped (discovery listings, git), the hosts, the MCP
   relays (none where Claude Code speaks MCP over HTTP to the daemon), the hook shims
   (hooks seen meanwhile x CPU per hook);
2. RSS and USS by part, per agent (host + relay), and how the agents reach volee's MCP;
3. CPU per hook: the shim (``-I -S``, as agents run it) and the daemon's share;
4. ``volee ls`` with nothing new: its two requests (discovery.refresh, agents.list), wall
   and daemon CPU per call;
5. the tray app (``volee app`` on Xvfb + trayer, list closed) beside that daemon: its
   idle CPU (app + reaped children) and the daemon's meanwhile, and its RSS/USS.

Targets (issue 13): tray app idle with 0 and 5 agents <= 0.2 %; daemon with 5 idle agents
<= 0.3 %; per agent (host + relay) <= 12 MiB USS; total RSS 5 agents < 120 MB, 60 < 700 MB;
``volee ls`` <= 20 ms wall, <= 10 ms daemon CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
from counting import Fleet, MiB, idle_cpu, own_and_reaped  # noqa: E402

from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.harness_env import Sandbox, claude_env, find_harness  # noqa: E402
from volee_desktop.ipc.client import Client  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402

SHIM = ROOT / "volee_desktop" / "cli" / "hookshim.py"
MB = 1_000_000


def cli(env: dict[str, str], *args: str, timeout: float = 60) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"volee {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def agents(env: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(cli(env, "ls", "--json", "--all", "--no-refresh"))
    return out


def wait_for(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


#: ``volee app`` that never runs the daemon inside itself (``Rig.start_app(embed=False)``).
CLIENT_ONLY_APP = (
    "import sys; from volee_desktop.app.main import run_app; "
    "sys.exit(run_app(['volee'], start_daemon=None))"
)


class Rig:
    """One VOLEE_HOME with its daemon, agents, and optionally the tray app."""

    def __init__(self, claude: Path | None, fake: FakeAnthropic | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="vf", dir="/tmp"))
        self.sandbox = Sandbox.create(self.root)
        self.fake = (fake or FakeAnthropic()).start()
        self.env = claude_env(self.sandbox.home, self.fake.port, self.sandbox.project)
        if claude is not None:
            self.env["VOLEE_CLAUDE_BIN"] = str(claude)
        self.env["VOLEE_HOME"] = str(self.root / "vh")
        self.dirs = dirs(self.env)
        self.daemon: subprocess.Popen[bytes] | None = None
        self.app: subprocess.Popen[bytes] | None = None
        self.desk: Any = None
        self.ls_listings = 0

    def start_daemon(self) -> None:
        (self.root / "vh").mkdir(parents=True, exist_ok=True)
        log = open(self.root / "daemon.log", "ab")  # noqa: SIM115 - held by the child
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        wait_for("the daemon", lambda: self.dirs.socket.exists() and self.status(), 90)

    def status(self) -> dict[str, Any] | None:
        try:
            with Client.connect(self.dirs.socket, timeout=10) as client:
                out: dict[str, Any] = client.request("daemon.status", {})
                return out
        except Exception:
            return None

    def spawn(self, n_claude: int, n_generic: int) -> None:
        project = str(self.sandbox.project)
        for i in range(n_claude):
            cli(
                self.env,
                *("spawn", "--cwd", project, "--name", f"c{i}"),
                *("--permission-mode", "bypassPermissions", "--", "say hello"),
            )
        for i in range(n_generic):
            cli(
                self.env,
                *("spawn", "--harness", "generic", "--cwd", project, "--name", f"g{i}"),
                *("--", "sleep", "7200"),
            )

        def settled() -> bool:
            listed = agents(self.env)
            claude = [a for a in listed if a["harness"] == "claude"]
            live = [a for a in listed if a["state"] not in ("stopped", "lost", "failed")]
            return len(live) == n_claude + n_generic and all(
                a["state"] in ("done", "idle") for a in claude
            )

        wait_for("the agents to settle", settled, 120 + 3 * (n_claude + n_generic))

    def start_app(self, embed: bool = True) -> bool:
        """The tray app on Xvfb as the daemon's client.  ``embed=False``: a client only, never
        running the daemon inside itself when it is away (``run_app(start_daemon=None)``), for
        benches that kill and restart the daemon and measure the two apart."""
        from tests.ui import desktop as dt

        if dt.missing():
            return False
        if self.desk is None:  # a bench may have made it before (bench/peer.py's start-ups)
            self.desk = dt.Desktop()
        env = dict(self.env)
        for key in ("DISPLAY", "QT_QPA_PLATFORM", "DBUS_SESSION_BUS_ADDRESS"):
            env[key] = self.desk.env[key]
        env["VOLEE_LOG"] = "INFO"
        log = open(self.root / "app.log", "ab")  # noqa: SIM115 - held by the child
        argv = [sys.executable, "-m", "volee_desktop.cli", "app"]
        if not embed:  # the last word stays "app" (bench/memtrace tells the app by it)
            argv[1:] = ["-c", CLIENT_ONLY_APP, "app"]
        self.app = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        app_log = self.root / "app.log"
        wait_for(
            "the app to connect",
            lambda: "connected to the volee daemon" in app_log.read_text(errors="replace"),
            60,
        )
        return True

    def close(self) -> None:
        for proc in (self.app, self.daemon):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for path in self.dirs.hosts.glob("ag_*.json"):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            for key in ("program_pid", "host_pid"):
                pid = data.get(key)
                if not pid:
                    continue
                try:
                    if key == "program_pid":
                        os.killpg(int(pid), signal.SIGKILL)
                    else:
                        os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if self.desk is not None:
            self.desk.close()
        self.fake.close()
        shutil.rmtree(self.root, ignore_errors=True)


def hooks_seen(rig: Rig) -> int:
    status = rig.status() or {}
    return int(status.get("hooks_accepted", 0)) + int(status.get("hooks_rejected", 0))


def cpu_per_hook(rig: Rig, agent: dict[str, Any], runs: int = 30) -> tuple[float, float]:
    """(shim CPU, daemon CPU) per hook in ms: a Notification as Claude Code sends it, for
    the agent's own session."""
    agent_id = agent["id"]
    assert rig.daemon is not None
    daemon = psutil.Process(rig.daemon.pid)
    payload = json.dumps(
        {
            "session_id": agent.get("session_id") or "00000000-0000-0000-0000-000000000000",
            "transcript_path": "/nonexistent.jsonl",
            "cwd": str(rig.sandbox.project),
            "hook_event_name": "Notification",
            "message": "Claude is waiting for your input",
            "notification_type": "idle_prompt",
        }
    )
    env = {
        "VOLEE_SOCKET": str(rig.dirs.socket),
        "VOLEE_SPOOL": str(rig.dirs.spool),
        "VOLEE_AGENT": agent_id,
        "VOLEE_HARNESS": "claude",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    d0 = own_and_reaped(daemon)
    for _ in range(runs):
        subprocess.run(
            [sys.executable, "-I", "-S", str(SHIM), "Notification"],
            input=payload.encode(),
            env=env,
            check=True,
            timeout=30,
        )
    time.sleep(0.5)  # the daemon's side of the last one
    d1 = own_and_reaped(daemon)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shim = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return 1000 * shim / runs, 1000 * (d1 - d0) / runs


def ls_cost(rig: Rig, runs: int = 20) -> tuple[float, float, float]:
    """``volee ls`` with nothing new: (wall ms, daemon CPU ms) per call of its two requests,
    and the wall ms of the whole CLI process."""
    assert rig.daemon is not None
    daemon = psutil.Process(rig.daemon.pid)
    walls = []
    listings0 = ((rig.status() or {}).get("extra") or {}).get("discovery", {}).get("listings", 0)
    d0 = own_and_reaped(daemon)
    for _ in range(runs):
        t0 = time.perf_counter()
        with Client.connect(rig.dirs.socket, timeout=30) as client:
            try:
                client.request("discovery.refresh", {})
            except Exception:
                pass
            client.request("agents.list", {"all": False})
        walls.append(time.perf_counter() - t0)
    d1 = own_and_reaped(daemon)
    listings1 = ((rig.status() or {}).get("extra") or {}).get("discovery", {}).get("listings", 0)
    rig.ls_listings = listings1 - listings0
    t0 = time.perf_counter()
    cli(rig.env, "ls")
    whole = time.perf_counter() - t0
    walls.sort()
    return 1000 * walls[len(walls) // 2], 1000 * (d1 - d0) / runs, 1000 * whole


def list_open(rig: Rig, fleet: Fleet, args: argparse.Namespace) -> None:
    """The daemon with the list shown (an interactive client subscribed, as the tray's shown
    list is; ``bench/list_open.py``): idle CPU by part and the listings meanwhile."""
    from list_open import discovery, subscribed

    client = subscribed(rig)
    try:
        time.sleep(args.settle)
        listings = discovery(rig).get("listings", 0)
        cpu = idle_cpu(fleet, args.idle_seconds)
        listed = discovery(rig).get("listings", 0) - listings
    finally:
        client.close()
    one, five, fifteen = os.getloadavg()
    print(
        f"list open (1 interactive client), idle {args.idle_seconds:g} s: daemon + reaped "
        f"{cpu.get('daemon', 0.0):.3f} %, hosts {cpu.get('hosts', 0.0):.3f} %, relays "
        f"{cpu.get('relays', 0.0):.3f} %; {listed} listings; "
        f"load {one:.2f} {five:.2f} {fifteen:.2f}"
    )


def report(n: int, n_claude: int, args: argparse.Namespace, claude: Path | None) -> None:
    rig = Rig(claude)
    try:
        rig.start_daemon()
        rig.spawn(n_claude, n - n_claude)
        assert rig.daemon is not None
        fleet = Fleet(rig.dirs.hosts, daemon=rig.daemon.pid)
        time.sleep(args.settle)
        one, five, fifteen = os.getloadavg()
        print(
            f"\n== {n} agents ({n_claude} Claude Code, {n - n_claude} generic); "
            f"load {one:.2f} {five:.2f} {fifteen:.2f} =="
        )
        h0 = hooks_seen(rig)
        shim_ms = daemon_ms = 0.0
        listed = agents(rig.env)
        claude_agents = [a for a in listed if a["harness"] == "claude"]
        t0 = time.monotonic()
        cpu = idle_cpu(fleet, args.idle_seconds)
        hooks = hooks_seen(rig) - h0
        hook_rate = hooks / (time.monotonic() - t0)
        if claude_agents or n:
            shim_ms, daemon_ms = cpu_per_hook(rig, (claude_agents or listed)[0])
        hook_pct = hook_rate * shim_ms / 10  # ms per s -> % of a core
        total = sum(cpu.values()) + hook_pct
        print(f"daemon alone, idle {args.idle_seconds:g} s, % of one core:")
        for part in ("daemon", "hosts", "relays"):
            print(f"  {part:8s} {cpu.get(part, 0.0):7.3f} %")
        print(f"  hooks    {hook_pct:7.3f} %  ({hooks} hooks seen, shim {shim_ms:.1f} ms each)")
        target = " (target <= 0.3 with 5)" if n == 5 else ""
        print(f"  total    {total:7.3f} %{target}")
        mem = fleet.memory()
        print("memory by part (RSS / PSS / USS MiB, processes):")
        for part, (rss, pss, uss, count) in mem.items():
            print(f"  {part:8s} {rss:7.1f} / {pss:6.1f} / {uss:6.1f}  ({count})")
        hosts, relays = mem.get("hosts", (0, 0, 0, 0)), mem.get("relays", (0, 0, 0, 0))
        if n:
            per_host = hosts[2] / max(1, hosts[3])
            per_relay = relays[2] / max(1, relays[3]) if relays[3] else 0.0
            print(
                f"  per agent USS: host {per_host:.2f} + relay {per_relay:.2f} = "
                f"{per_host + per_relay:.2f} MiB (target <= 12; relay <= 6)"
            )
        extra = (rig.status() or {}).get("extra", {})
        http, relayed = extra.get("mcp_http") or {}, extra.get("mcp") or {}
        print(
            f"  MCP: {len(claude_agents)} Claude Code agents; over HTTP to the daemon: "
            f"{http.get('connections', 0)} connections open ({http.get('url') or 'not serving'}); "
            f"relay processes: {relays[3]}, relay sessions: {relayed.get('sessions', 0)}"
        )
        rss_total = sum(v[0] for v in mem.values()) * MiB / MB
        pss_total = sum(v[1] for v in mem.values()) * MiB / MB
        print(f"  total RSS {rss_total:.0f} MB, PSS {pss_total:.0f} MB", end="")
        print(" (target < 120)" if n == 5 else " (target < 700)" if n == 60 else "")
        print(f"CPU per hook: shim {shim_ms:.1f} ms, daemon {daemon_ms:.1f} ms")
        if args.list_open:
            list_open(rig, fleet, args)
        wall, dcpu, whole = ls_cost(rig)
        print(
            f"volee ls, nothing new: {wall:.1f} ms wall, {dcpu:.1f} ms daemon CPU per call "
            f"(targets <= 20, <= 10; {rig.ls_listings} listings ran meanwhile); "
            f"the whole CLI process {whole:.0f} ms"
        )
        if args.app and rig.start_app():
            assert rig.app is not None
            fleet.app = rig.app.pid
            time.sleep(args.settle)
            h0 = hooks_seen(rig)
            cpu = idle_cpu(fleet, args.idle_seconds)
            app_mem = fleet.memory().get("app", (0.0, 0.0, 0.0, 0))
            target = " (target <= 0.2)" if n in (0, 5) else ""
            print(f"tray app (Xvfb + trayer, list closed), idle {args.idle_seconds:g} s:")
            print(f"  app + reaped children {cpu.get('app', 0.0):7.3f} % of one core{target}")
            print(
                f"  daemon meanwhile      {cpu.get('daemon', 0.0):7.3f} %, hosts "
                f"{cpu.get('hosts', 0.0):.3f} %, relays {cpu.get('relays', 0.0):.3f} %, "
                f"{hooks_seen(rig) - h0} hooks"
            )
            rss, pss, uss, _count = app_mem
            print(f"  app RSS / PSS / USS {rss:.1f} / {pss:.1f} / {uss:.1f} MiB")
    finally:
        rig.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,5,20,60")
    parser.add_argument("--claude", type=int, default=5, help="real Claude Code agents")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--no-app", dest="app", action="store_false")
    parser.add_argument(
        "--list-open", action="store_true", help="also the daemon with an interactive client"
    )
    args = parser.parse_args()
    claude = find_harness("claude")
    if claude is None:
        print("the pinned Claude Code is not installed (scripts/install-harnesses): generic only")
    for n in (int(x) for x in args.sizes.split(",")):
        n_claude = min(n, args.claude) if claude is not None else 0
        report(n, n_claude, args, claude)


if __name__ == "__main__":
    main()

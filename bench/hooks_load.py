"""Benchmark of hook intake under load: ``volee hook`` subprocesses against a real daemon.

Run: ``.venv/bin/python bench/hooks_load.py [--agents 20] [--rate 200] [--seconds 30]``.

A real daemon runs as a subprocess under a temporary VOLEE_HOME with ``--agents`` Claude Code
agents (their "claude" is a sleeper, so no real harness runs; the hooks are what is
measured).  For ``--seconds``, hook invocations start at a combined ``--rate`` per second,
round-robin over the agents: each is the real shim as agents run it, ``python -I -S hookshim.py
PreToolUse|PostToolUse`` as a separate process with a real-shaped payload on stdin (from
tests/harness/samples) and ``VOLEE_AGENT``/``VOLEE_HARNESS`` in its environment, exactly as
Claude Code runs it.  Every payload carries a unique command, so each one becomes an
``activity-recorded`` event with that text.

A subscriber timestamps each event as it arrives.  Printed: the achieved start rate,
p50/p99/max latency from the hook's start (just before its process is spawned) to the event
reaching the subscriber, and from the shim's own ``received_at`` (after interpreter start-up),
the daemon's CPU share (psutil on its pid), and how many payloads were lost (must be 0).
Target: p99 <= 50 ms hook -> registry.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from volee_desktop.daemon.agents.runner import HOOKSHIM
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.client import Client
from volee_desktop.paths import Dirs, dirs
from volee_desktop.store.codec import decode_event, event_to_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from counting import Fleet

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "harness" / "samples"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start_daemon(folders: Dirs, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = open(folders.logs / "bench-daemon.log", "ab")  # noqa: SIM115 - held by the child
    proc = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    deadline = time.monotonic() + 20
    while True:
        try:
            Client.connect(folders.socket, timeout=2).close()
            return proc
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the daemon did not start") from None
            time.sleep(0.05)


def spawn_agents(
    folders: Dirs, count: int, project: Path, env: dict[str, str]
) -> list[dict[str, Any]]:
    agents = []
    with Client.connect(folders.socket, timeout=30) as client:
        for n in range(count):
            agents.append(
                client.request(
                    "agents.spawn",
                    {
                        "harness": "claude",
                        "name": f"bench-{n}",
                        "cwd": str(project),
                        "prompt": None,
                        "env": env,
                        "permission_mode": "bypassPermissions",
                    },
                )
            )
    return agents


async def run_load(
    folders: Dirs,
    agents: list[dict[str, Any]],
    rate: float,
    seconds: float,
    env: dict[str, str],
    project: Path,
    in_flight: int,
) -> dict[str, Any]:
    started: dict[str, float] = {}
    arrived: dict[str, float] = {}
    received_at: dict[str, float] = {}
    all_arrived = asyncio.Event()
    total = int(rate * seconds)

    client = await AsyncClient.connect(folders.socket)

    def on_event(push: dict[str, Any]) -> None:
        now = time.time()
        event = push["event"]
        if event.get("type") != "activity-recorded":
            return
        activity = event.get("activity", "")
        if activity.startswith("Bash: bench "):
            token = activity.split()[-1]
            arrived.setdefault(token, now)
            if len(arrived) >= total:
                all_arrived.set()

    client.on_push("event", on_event)
    await client.call("subscribe", {"since": None, "interactive": False})

    pre = json.loads((SAMPLES / "claude-hook-PreToolUse.json").read_text())
    post = json.loads((SAMPLES / "claude-hook-PostToolUse.json").read_text())
    reaped = 0

    slots = asyncio.Semaphore(in_flight)

    async def one(n: int) -> None:
        nonlocal reaped
        try:
            await run_one(n)
        finally:
            slots.release()

    async def run_one(n: int) -> None:
        nonlocal reaped
        agent = agents[n % len(agents)]
        hook = "PreToolUse" if n % 2 == 0 else "PostToolUse"
        payload = dict(pre if n % 2 == 0 else post)
        token = f"{n:07d}"
        payload.update(
            session_id=agent["session_id"],
            cwd=str(project),
            tool_input={"command": f"bench {token}", "description": "run command"},
        )
        folders = dirs({"VOLEE_HOME": env["VOLEE_HOME"]})
        hook_env = {
            **env,
            "VOLEE_AGENT": agent["id"],
            "VOLEE_HARNESS": "claude",
            "VOLEE_SOCKET": str(folders.socket),
            "VOLEE_SPOOL": str(folders.spool),
        }
        started[token] = time.time()
        # Exactly what the hooks file of an agent volee launched runs (docs/decisions.md D5).
        proc = await asyncio.create_subprocess_exec(
            *hook_cmd,
            hook,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=hook_env,
        )
        await proc.communicate(json.dumps(payload).encode())
        reaped += 1

    began = time.monotonic()
    late = 0.0
    tasks = []
    for n in range(total):
        due = began + n / rate
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        await slots.acquire()
        late = max(late, time.monotonic() - due)
        tasks.append(asyncio.ensure_future(one(n)))
    spawned_in = time.monotonic() - began
    await asyncio.gather(*tasks)
    try:
        await asyncio.wait_for(all_arrived.wait(), 30)
    except TimeoutError:
        pass
    await client.close()
    # The shim's own start (after interpreter start-up), from the events in the log.
    for token, at in _received_times(folders).items():
        received_at[token] = at
    return {
        "total": total,
        "started": started,
        "arrived": arrived,
        "received_at": received_at,
        "spawned_in": spawned_in,
        "late": late,
        "reaped": reaped,
    }


def _received_times(folders: Dirs) -> dict[str, float]:
    """ActivityRecorded.at is the shim's received_at (the intake uses it as the event time)."""
    from volee_desktop.store.log import EventLog

    out: dict[str, float] = {}
    log = EventLog.open(folders.events_db)
    try:
        for stored in log.read(0):
            if stored.type != "activity-recorded":
                continue
            data = event_to_dict(decode_event(stored.type, stored.version, stored.payload))
            activity = str(data.get("activity", ""))
            if activity.startswith("Bash: bench "):
                out.setdefault(activity.split()[-1], float(data["at"]))
    finally:
        log.close()
    return out


hook_cmd = (sys.executable, "-I", "-S", str(HOOKSHIM))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rate", type=float, default=200.0, help="hooks started per second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument(
        "--in-flight",
        type=int,
        default=16,
        help="at most this many hook processes at once (a start waits for a free slot: an "
        "open loop on a machine that cannot keep up piles up thousands of processes)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary VOLEE_HOME")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    project = root / "p"
    project.mkdir()
    sleeper = root / "claude"
    sleeper.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "2.1.332 (Claude Code)"; exit 0; }\n'
        # Discovery asks `claude agents --json`: none to report.
        '[ "$1" = agents ] && { echo "[]"; exit 0; }\n'
        "exec sleep 100000\n"
    )
    sleeper.chmod(0o755)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", str(root)),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "VOLEE_HOME": str(root / "vh"),
        "VOLEE_CLAUDE_BIN": str(sleeper),
    }
    folders = dirs(env)
    folders.logs.mkdir(parents=True, exist_ok=True)
    daemon = start_daemon(folders, env)
    try:
        agents = spawn_agents(folders, args.agents, project, env)
        with Client.connect(folders.socket, timeout=10) as client:
            listed = {a["id"]: a for a in client.request("agents.list", {"all": True})}
        agents = [listed[a["id"]] for a in agents]
        # The daemon with what it reaped and its live children, plus the hosts (bench/counting).
        fleet = Fleet(folders.hosts, daemon=daemon.pid)
        cpu0 = sum(fleet.cpu().values())
        wall0 = time.monotonic()
        result = asyncio.run(
            run_load(folders, agents, args.rate, args.seconds, env, project, args.in_flight)
        )
        wall = time.monotonic() - wall0
        daemon_cpu = sum(fleet.cpu().values()) - cpu0
        with Client.connect(folders.socket, timeout=10) as client:
            status = client.request("daemon.status", {})
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
        for path in folders.hosts.glob("ag_*.json"):
            data = json.loads(path.read_text())
            for pid in (data.get("program_pid"), data.get("host_pid")):
                try:
                    if pid:
                        os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    started, arrived, received = result["started"], result["arrived"], result["received_at"]
    total = result["total"]
    lat = [1000 * (arrived[t] - started[t]) for t in arrived if t in started]
    shim = [1000 * (arrived[t] - received[t]) for t in arrived if t in received]
    lost = total - len(arrived)
    print(
        f"agents {args.agents}, target {args.rate:.0f} hooks/s for {args.seconds:.0f} s, "
        f"at most {args.in_flight} hook processes at once"
    )
    print(
        f"started {total} hooks in {result['spawned_in']:.1f} s "
        f"({total / result['spawned_in']:.0f}/s; "
        f"worst start lateness {1000 * result['late']:.0f} ms)"
    )
    print(f"machine: {os.cpu_count()} cores")
    print(
        "hook start -> event at a subscriber: "
        f"p50 {statistics.median(lat):.1f} ms, p99 {percentile(lat, 0.99):.1f} ms, "
        f"max {max(lat):.1f} ms"
    )
    print(
        "shim received_at -> event at a subscriber: "
        f"p50 {statistics.median(shim):.1f} ms, p99 {percentile(shim, 0.99):.1f} ms, "
        f"max {max(shim):.1f} ms"
    )
    print(
        f"daemon CPU: {daemon_cpu:.2f} s over {wall:.1f} s = "
        f"{100 * daemon_cpu / wall:.1f}% of one core"
    )
    print(
        f"accepted by the daemon: {status.get('hooks_accepted')}, "
        f"kept aside: {status.get('hooks_rejected')}; lost: {lost} of {total}"
    )
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())

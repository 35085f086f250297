"""Another machine over a loopback sshd: the link's cost at rest, and hook -> visible here.

Run (as root: the other machine is a second Unix user, as in tests/e2e/test_machines_ssh.py):
``.venv/bin/python bench/machines.py [--rest 60] [--hooks 40]``.

At rest (nothing happening, ``--rest`` seconds): the CPU of the ssh client (here) and of the
bridge (there) as a share of one core, their RSS, and the bytes on the wire per minute (the
TCP connection's ``bytes_sent``/``bytes_received`` from ``ss -ti``: keepalives only, we hope).
Then ``--hooks`` times: a ``volee hook PreToolUse`` run there for an agent there (the fake
Claude Code), timed until its daemon took it (the hook's exit) and until ``agents.list`` here
shows it (polled every 2 ms), p50 and p99.  Last, the catch-up: sshd gone for ``--down``
seconds while ``--burst`` hooks happen there, then back: how long until this side has every
event (a replay from its last sequence number, no snapshot).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.agents_rig import Volee  # noqa: E402
from tests.e2e.machines_rig import SYSTEM_PYTHON, ServerUser, SshServer, make_root  # noqa: E402
from volee_desktop.ipc.client import Client  # noqa: E402

FAKES = REPO / "tests" / "fakes"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def wire_bytes(port: int) -> int:
    """Bytes sent plus received on the established connections to ``port`` (client side)."""
    out = subprocess.run(
        ["ss", "-tinH", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sent = sum(int(n) for n in re.findall(r"bytes_sent:(\d+)", out))
    received = sum(int(n) for n in re.findall(r"bytes_received:(\d+)", out))
    return sent + received


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rest", type=float, default=60.0, help="seconds measured at rest")
    parser.add_argument("--hooks", type=int, default=40, help="hooks timed")
    parser.add_argument("--burst", type=int, default=500, help="hooks there while the link is down")
    parser.add_argument("--down", type=float, default=30.0, help="seconds the link is down")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: the other machine is a second Unix user (useradd)", file=sys.stderr)
        return 2
    root = make_root()
    there = ServerUser(root)
    sshd: SshServer | None = None
    here: Volee | None = None
    try:
        fakes = root / "fakes"
        fakes.mkdir()
        for name in ("fake-claude", "fake_harness.py"):
            shutil.copy(FAKES / name, fakes / name)
        (fakes / "fh").mkdir()
        os.chown(fakes / "fh", there.uid, there.gid)
        there.start_daemon(
            {
                "VOLEE_CLAUDE_BIN": str(fakes / "fake-claude"),
                "FAKE_HARNESS_HOME": str(fakes / "fh"),
                "FAKE_PYTHON": "/usr/bin/python3",
            }
        )
        sshd = SshServer(root, there)
        here = Volee(root / "here", {**os.environ, "PATH": f"{sshd.bin}:{os.environ['PATH']}"})
        here.start()
        added = json.loads(
            here.cli(
                "machine",
                "add",
                "devbox",
                "--ssh",
                "devbox",
                "--volee",
                str(there.volee),
                "--json",
            ).stdout
        )
        assert added["reachable"], added
        project = there.home / "project"
        here.cli("spawn", "--machine", "devbox", "--cwd", str(project), "--name", "b1", "--", "hi")
        agent = here.wait(
            "b1", lambda a: a["session_id"] is not None and a["state"] in ("done", "idle"), "idle"
        )
        assert here.daemon is not None
        [ssh_pid] = [p for p in children(here.daemon.pid) if comm(p) == "ssh"]
        [bridge_pid] = [
            p
            for p in there.pids()
            if b"bridge" in Path(f"/proc/{p}/cmdline").read_bytes() and comm(p).startswith("python")
        ]
        time.sleep(3)  # settle after the snapshot and the agent's start

        cpu0 = {pid: cpu_seconds(pid) for pid in (ssh_pid, bridge_pid)}
        wire0 = wire_bytes(sshd.port)
        began = time.monotonic()
        time.sleep(args.rest)
        took = time.monotonic() - began
        wire1 = wire_bytes(sshd.port)
        print(f"at rest, {took:.0f} s:")
        for name, pid in (("ssh client", ssh_pid), ("bridge", bridge_pid)):
            share = (cpu_seconds(pid) - cpu0[pid]) / took * 100
            tick = 100 / TICKS / took  # one clock tick over the span: the resolution
            cpu = f"{share:.3f} %" if share else f"< {tick:.3f} % (no tick)"
            print(f"  {name:<10} CPU {cpu} of a core   RSS {rss_kib(pid) / 1024:.1f} MiB")
        per_minute = (wire1 - wire0) / took * 60
        print(f"  wire       {per_minute:.0f} bytes/min (both ways, TCP payload)")

        payload = json.loads(
            (REPO / "tests/harness/samples/claude-hook-PreToolUse.json").read_text()
        )
        payload["session_id"] = agent["session_id"]
        payload["cwd"] = str(project)
        committed: list[float] = []
        visible: list[float] = []
        with Client.connect(here.dirs.socket, timeout=10) as client:
            for n in range(args.hooks):
                payload["tool_input"] = {"command": f"echo bench {n}"}
                began = time.perf_counter()
                subprocess.run(
                    [str(there.volee), "hook", "PreToolUse"],
                    input=json.dumps(payload).encode(),
                    env=there.env,
                    user=there.uid,
                    group=there.gid,
                    extra_groups=[],
                    cwd=there.home,
                    check=True,
                    capture_output=True,
                )
                committed.append(time.perf_counter() - began)
                needle = f"echo bench {n}"
                while True:
                    views = client.request("agents.list", {})
                    if any(needle in (v.get("activity") or "") for v in views):
                        break
                    time.sleep(0.002)
                visible.append(time.perf_counter() - began)
        print(f"hook -> visible, {args.hooks} hooks over loopback sshd:")
        for name, values in (("taken there (hook exit)", committed), ("visible here", visible)):
            print(
                f"  {name:<24} p50 {statistics.median(values) * 1000:6.1f} ms"
                f"   p99 {percentile(values, 0.99) * 1000:6.1f} ms"
            )
        link = [v - c for v, c in zip(visible, committed, strict=True)]
        print(
            f"  {'the link adds':<24} p50 {statistics.median(link) * 1000:6.1f} ms"
            f"   p99 {percentile(link, 0.99) * 1000:6.1f} ms"
        )

        # Catch-up: the link down (sshd gone) while BURST events happen there, then back.
        burst = root / "burst.py"
        burst.write_text(
            "import json, os, sys, time\n"
            "from volee_desktop.ipc.client import Client\n"
            "from volee_desktop.paths import dirs\n"
            "payload = json.loads(sys.argv[1])\n"
            "with Client.connect(dirs().socket) as client:\n"
            "    for i in range(int(sys.argv[2])):\n"
            "        payload['tool_input'] = {'command': f'echo burst {i}'}\n"
            "        client.request('hook', {'event': 'PreToolUse',\n"
            "            'payload': json.dumps(payload), 'agent': None, 'harness': 'claude',\n"
            "            'key': f'burst-{i}-{os.getpid()}', 'received_at': time.time()})\n"
        )
        sshd.cut()
        sshd.close()
        down_at = time.monotonic()
        subprocess.run(
            [str(SYSTEM_PYTHON), str(burst), json.dumps(payload), str(args.burst)],
            env={**there.env, "PYTHONPATH": f"{REPO}:{sysconfig.get_paths()['purelib']}"},
            user=there.uid,
            group=there.gid,
            extra_groups=[],
            cwd=there.home,
            check=True,
        )
        remote_seq = json.loads(there.run("daemon", "status", "--json").stdout)["seq"]
        left = args.down - (time.monotonic() - down_at)
        if left > 0:
            time.sleep(left)
        behind = remote_seq - (json.loads(here.cli("machine", "ls", "--json").stdout)[0]["seq"])
        sshd.start()
        with Client.connect(here.dirs.socket, timeout=10) as client:
            began = time.perf_counter()
            client.request("machines.list", {"retry": True})  # try again now, not at backoff
            while True:
                [machine] = client.request("machines.list", {})
                if machine["reachable"] and machine["seq"] == remote_seq:
                    break
                time.sleep(0.002)
            caught = time.perf_counter() - began
        print(
            f"catch-up after {time.monotonic() - down_at - caught:.0f} s down: {behind} events "
            f"behind, caught up {caught * 1000:.0f} ms after sshd was back "
            f"(snapshots {machine['snapshots']}, replays {machine['replays']})"
        )
        here.cli("stop", "devbox:b1")
    finally:
        if here is not None:
            here.close()
        if sshd is not None:
            sshd.close()
        there.remove()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""An agent's CPU under volee against the same agent run plainly (issue 27, item 1).

    .venv/bin/python bench/agent_overhead.py [--seconds 60] [--busy-seconds 15]
    .venv/bin/python bench/agent_overhead.py --generic --seconds 1   # a tiny form, no Claude Code

Three copies of the pinned Claude Code at the same time, on the same fake Anthropic server,
with the same HOME and project, each in a PTY of volee's size (40 x 120):

- ``plain``: ``claude --session-id S --permission-mode default PROMPT`` in a PTY this bench
  holds and drains (as a terminal would);
- ``argv``: the argv volee gives Claude Code (its ``--settings`` with the hooks and the
  status-line wrapper, its ``--mcp-config``), the same environment, a session of its own, in
  this bench's PTY; its hooks go to a socket nobody serves (the shim spools them), so the
  daemon is not asked;
- ``volee``: ``volee spawn`` (a real daemon, its host holding the PTY); with ``--volees N``,
  N of them under one daemon, ``volee0``..., the daemon's CPU divided among them (as a
  person's agents share it) and their mean printed;
- with ``--split``, three more copies of ``argv``, each without one of volee's additions:
  ``-status`` (no status line), ``-hooks`` (no hooks), ``-mcp`` (no ``--mcp-config``).

``plain`` -> ``argv`` is what volee's settings cost inside Claude's process tree (hooks, the
status line, the MCP connection); ``argv`` -> ``volee`` is the host's share (the PTY read and
rendered, resizes, the keys it sends).  Every process is counted with the children it reaped
(``bench/counting.py``): Claude Code reaps its hooks and status-line runs, so they are in its
figure.  For ``volee`` the host and the daemon are added (the daemon serves only that agent),
the daemon's own CPU apart from its reaped children's (discovery's listings: the ``plain``
and ``argv`` copies share the HOME, so the daemon sees them as sessions outside volee and
lists when they change; ``--own-home`` gives them a HOME of their own).

Phases, each measured on all three at once: ``after turn`` (the first ``--seconds`` after
the first turn ended), ``idle`` (the next ``--seconds``), ``busy`` (a reply held by the fake
server, ``--busy-seconds``), ``permission`` (a permission dialog open, ``--busy-seconds``).
Prints CPU seconds per phase, the ratios against the mean of the plain copies measured in the
same run (``--plains``, default 2: one copy alone varied by 0.8-1.2x from run to run; target:
<= 1.1x), with several volee agents their mean and its 95 % interval (what the copies'
spread leaves of the difference), the load average, the split (own / reaped children, host,
daemon, hooks seen), and each program's anonymous memory after idle (the heap Claude Code's
collector works over at rest: docs/performance.md).
``--generic`` runs a small shell loop instead of Claude Code (volee's generic harness),
prompts skipped: the bench's own path, in seconds.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
from counting import host_records, own_and_reaped, tree  # noqa: E402
from fleet import Rig, agents, cli, wait_for  # noqa: E402

from tests.fakes.harness_env import claude_env, find_harness  # noqa: E402

ROWS, COLS = 40, 120  # volee's host's PTY (hosts/main.py)
GENERIC = ["sh", "-c", "while :; do date > /dev/null; sleep 0.5; done"]
PHASES = ("after turn", "idle", "busy", "permission")


#: Student's t, two-sided 95 %, by degrees of freedom (Welch's, rounded down; 30 and more: 2.0).
T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13)


def ratio_interval(volees: list[float], plains: list[float]) -> tuple[float, float, float]:
    """The ratio of the two means and its 95 % interval (the delta method, Welch's degrees
    of freedom): what copy-to-copy spread leaves of a difference, with this many copies."""
    mv, mp = statistics.mean(volees), statistics.mean(plains)
    rv = statistics.variance(volees) / len(volees) / mv**2
    rp = statistics.variance(plains) / len(plains) / mp**2
    ratio = mv / mp
    if rv + rp == 0:
        return ratio, ratio, ratio
    df = (rv + rp) ** 2 / (rv**2 / (len(volees) - 1) + rp**2 / (len(plains) - 1))
    t = T95[int(df) - 1] if int(df) <= len(T95) else 2.0
    half = t * ratio * math.sqrt(rv + rp)
    return ratio, ratio - half, ratio + half


def anon_mib(pid: int) -> float:
    """The anonymous memory (RssAnon: the heap, no shared pages) of ``pid``'s tree."""
    total = 0
    for proc in tree(pid):
        try:
            with open(f"/proc/{proc.pid}/status", encoding="ascii") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("RssAnon")), 0)
        except (OSError, ValueError):
            continue
    return total / 1024


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


@dataclass
class Plain:
    """A program in a PTY this bench holds and drains, as a terminal would."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    proc: subprocess.Popen[bytes] | None = None
    master: int = -1
    output: bytearray = field(default_factory=bytearray)

    def start(self) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            cwd=self.cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 1.0)
                if ready:
                    chunk = os.read(self.master, 65536)
                    if not chunk:
                        return
                    self.output += chunk
                    del self.output[:-65536]
            except OSError:
                return

    def type(self, text: str) -> None:
        os.write(self.master, b"\x1b[200~" + text.encode() + b"\x1b[201~")
        time.sleep(0.3)
        os.write(self.master, b"\r")

    def cpu(self) -> dict[str, float]:
        assert self.proc is not None
        return {"agent": sum(own_and_reaped(p) for p in tree(self.proc.pid))}

    def split(self) -> tuple[float, float]:
        """(own, reaped) CPU of the program."""
        assert self.proc is not None
        return split(self.proc.pid)

    def anon(self) -> float:
        assert self.proc is not None
        return anon_mib(self.proc.pid)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


def split(pid: int, exclude: list[int] | None = None) -> tuple[float, float]:
    own = reaped = 0.0
    for proc in tree(pid, exclude=exclude or []):
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        own += t.user + t.system
        reaped += t.children_user + t.children_system
    return own, reaped


class Volee:
    """The same program as a volee agent: its tree, its host, and its share of the daemon
    (``share`` agents serve under it: the daemon's CPU is divided among them, as a person's
    agents share theirs)."""

    def __init__(self, rig: Rig, agent_id: str, share: int = 1) -> None:
        self.rig = rig
        self.id = agent_id
        self.share = share
        record = json.loads((rig.dirs.hosts / f"{agent_id}.json").read_text())
        self.host, self.program = int(record["host_pid"]), int(record["program_pid"])

    def cpu(self) -> dict[str, float]:
        assert self.rig.daemon is not None
        # The hosts may be the daemon's children: their trees are counted apart.
        hosts = [r["host"] for r in host_records(self.rig.dirs.hosts)]
        own, reaped = split(self.rig.daemon.pid, exclude=hosts)
        discovery = ((self.rig.status() or {}).get("extra") or {}).get("discovery") or {}
        return {
            "agent": sum(own_and_reaped(p) for p in tree(self.program)),
            "host": sum(own_and_reaped(p) for p in tree(self.host, exclude=[self.program])),
            "daemon": own / self.share,
            "reaped": reaped / self.share,
            "listings": float(discovery.get("listings", 0)),
        }

    def split(self) -> tuple[float, float]:
        return split(self.program)

    def anon(self) -> float:
        return anon_mib(self.program)

    def type(self, text: str) -> None:
        cli(self.rig.env, "send", self.id, text)

    def hooks(self) -> int:
        status = self.rig.status() or {}
        return int(status.get("hooks_accepted", 0)) + int(status.get("hooks_rejected", 0))


def volee_argv(program: int, session: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment volee gave its agent's program, with a new session id."""
    proc = psutil.Process(program)
    argv = proc.cmdline()
    if "--session-id" in argv:
        argv[argv.index("--session-id") + 1] = session
    env = proc.environ()
    return argv, env


def variants(argv: list[str], root: Path) -> dict[str, list[str]]:
    """volee's argv with one of its additions left out each: its status line, its hooks,
    its MCP server (the settings file copied without that key, or the option dropped)."""
    out: dict[str, list[str]] = {}
    if "--settings" in argv:
        at = argv.index("--settings") + 1
        document = json.loads(Path(argv[at]).read_text())
        for key, name in (("statusLine", "-status"), ("hooks", "-hooks")):
            if key in document:
                path = root / f"settings{name}.json"
                path.write_text(json.dumps({k: v for k, v in document.items() if k != key}))
                out[name] = [*argv[:at], str(path), *argv[at + 1 :]]
    if "--mcp-config" in argv:
        at = argv.index("--mcp-config")
        out["-mcp"] = argv[:at] + argv[at + 2 :]
    return out


def measure(parts: dict[str, Any], seconds: float) -> dict[str, dict[str, float]]:
    before = {name: p.cpu() for name, p in parts.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - t0
    out = {}
    for name, p in parts.items():
        after = p.cpu()
        out[name] = {k: max(0.0, v - before[name].get(k, 0.0)) for k, v in after.items()}
        out[name]["wall"] = wall
    return out


def interleaved(parts: dict[str, Any]) -> list[Any]:
    """The parts in turns, a plain copy then a volee agent (then the others): typed in this
    order, no kind has its turns all started last, when a turn's first seconds fall inside
    the window (a 10-and-10 run typed the volee agents last and read them busy at 1.17x)."""
    kinds: dict[str, list[Any]] = {}
    for name, part in parts.items():
        kinds.setdefault(name.rstrip("0123456789"), []).append(part)
    ordered: list[Any] = []
    rows = max(len(group) for group in kinds.values())
    for n in range(rows):
        ordered += [group[n] for group in kinds.values() if n < len(group)]
    return ordered


def start_turns(rig: Rig, parts: dict[str, Any], text: str) -> None:
    """Type ``text`` into every part, wait until the fake model has each one's request, and
    let their turns settle before a phase is measured."""
    before = len(rig.fake.requests("/v1/messages"))
    for part in interleaved(parts):
        part.type(text)
    wait_for(
        "every part's request",
        lambda: len(rig.fake.requests("/v1/messages")) >= before + len(parts),
        60,
    )
    time.sleep(5)


def run(args: argparse.Namespace) -> dict[str, Any]:
    claude = None if args.generic else find_harness("claude")
    if claude is None and not args.generic:
        raise SystemExit("the pinned Claude Code is not installed (scripts/install-harnesses)")
    rig = Rig(claude)
    extra: list[Plain] = []
    results: dict[str, Any] = {"phases": {}, "hooks": {}}
    try:
        rig.start_daemon()
        project = str(rig.sandbox.project)
        if args.generic:
            out = cli(
                rig.env,
                *("spawn", "--harness", "generic", "--cwd", project, "--name", "g0", "--json"),
                *("--", *GENERIC),
            )
        ids = [json.loads(out)["id"]] if args.generic else []
        plains: dict[str, Plain] = {}
        home = rig.root / "h2"
        if not args.generic:
            assert claude is not None
            plain_argv = [str(claude), "--session-id", ""]
            plain_argv += ["--permission-mode", "default", "say hello"]
            plain_env = dict(rig.env)
            if args.own_home:
                plain_env = claude_env(home, rig.fake.port, rig.sandbox.project)
                plain_env["VOLEE_HOME"] = rig.env["VOLEE_HOME"]
            for n in range(1, args.plains + 1):  # more of the same: the baseline's own spread
                again = list(plain_argv)
                again[again.index("--session-id") + 1] = str(uuid.uuid4())
                name = "plain" if n == 1 else f"plain{n}"
                plains[name] = Plain(again, dict(plain_env), rig.sandbox.project)
        waiting = list(plains.values())
        for n in range(0 if args.generic else args.volees):
            out = cli(
                rig.env,
                *("spawn", "--cwd", project, "--name", f"c{n}", "--json"),
                *("--permission-mode", "default", "--", "say hello"),
            )
            ids.append(json.loads(out)["id"])
            if waiting:  # a plain copy launched beside each agent: their first turns end together
                waiting.pop(0).start()
        for plain in waiting:
            plain.start()
        wait_for("the agents' hosts", lambda: len(host_records(rig.dirs.hosts)) >= len(ids), 60)
        volees = {
            "volee" if len(ids) == 1 else f"volee{n}": Volee(rig, agent_id, share=len(ids))
            for n, agent_id in enumerate(ids)
        }
        volee = next(iter(volees.values()))
        if args.generic:
            plain = Plain(list(GENERIC), dict(rig.env), rig.sandbox.project)
            parts: dict[str, Any] = {"plain": plain, **volees}
        else:
            argv, env = volee_argv(volee.program, str(uuid.uuid4()))
            if args.own_home:
                env["HOME"] = str(home)
                env.pop("CLAUDE_CONFIG_DIR", None)
            dead = rig.root / "nobody.sock"
            env.update(VOLEE_SOCKET=str(dead), VOLEE_SPOOL=str(rig.root / "spool2"))
            argv_run = Plain(argv, env, rig.sandbox.project)
            parts = {**plains, "argv": argv_run}
            if args.split:
                for name, changed in variants(argv, rig.root).items():
                    changed = list(changed)
                    changed[changed.index("--session-id") + 1] = str(uuid.uuid4())
                    parts[name] = Plain(changed, dict(env), rig.sandbox.project)
            parts.update(volees)
        for p in parts.values():
            if isinstance(p, Plain) and p.proc is None:
                p.start()
                extra.append(p)
        if not args.generic:
            # The first turn: every copy has asked the model and has its answer.
            wait_for(
                "the first turns",
                lambda: (
                    len(rig.fake.requests("/v1/messages")) >= len(parts)
                    and all(a["state"] in ("done", "idle") for a in agents(rig.env))
                ),
                120,
            )
            time.sleep(2)  # the answer painted
        h0 = volee.hooks() if not args.generic else 0
        results["phases"]["after turn"] = measure(parts, args.seconds)
        results["phases"]["idle"] = measure(parts, args.seconds)
        results["hooks"]["at rest"] = (volee.hooks() - h0) if not args.generic else 0
        results["anon"] = {name: p.anon() for name, p in parts.items()}
        if not args.generic:
            start_turns(rig, parts, "HOLD")
            results["phases"]["busy"] = measure(parts, args.busy_seconds)
            rig.fake.release()
            time.sleep(5)
            start_turns(rig, parts, f"RUN: touch {rig.root}/asked")  # the dialog shown
            results["phases"]["permission"] = measure(parts, args.busy_seconds)
        results["split"] = {name: p.split() for name, p in parts.items()}
        results["hooks"]["all"] = volee.hooks() if not args.generic else 0
        return results
    finally:
        for p in extra:
            p.close()
        rig.close()


def report(results: dict[str, Any]) -> None:
    print(f"\nagent CPU, seconds per phase (every descendant and reaped child counted); {load()}")
    for phase, by in results["phases"].items():
        # The baseline: the mean of the plain copies (one copy alone varied by 0.8-1.2x
        # from run to run: 2.97 s against 3.63 s asking, 5 minutes, the same bench).
        plains = [r["agent"] for name, r in by.items() if name.startswith("plain")]
        base = sum(plains) / len(plains)
        cells = []
        if len(plains) > 1:
            cells.append(f"plain mean {base:.2f} s ({min(plains):.2f}-{max(plains):.2f})")
        volees = []
        for name, r in by.items():
            total = sum(v for k, v in r.items() if k not in ("wall", "listings"))
            ratio = f"{total / base:.2f}x" if base > 0 else "n/a"
            extra = ""
            if name.startswith("volee"):
                volees.append(total)
                share = "" if "volee" in by else "/N"
                extra = (
                    f" (agent {r['agent']:.2f} + host {r['host']:.2f} + daemon{share} "
                    f"{r['daemon']:.2f} + its reaped children{share} {r['reaped']:.2f}: "
                    f"{r['listings']:.0f} listings)"
                )
            cells.append(f"{name} {total:.2f} s = {ratio}{extra}")
        if len(volees) > 1 and base > 0:
            mean = sum(volees) / len(volees)
            cells.append(
                f"volee mean {mean:.2f} s = {mean / base:.2f}x"
                f" ({min(volees) / base:.2f}-{max(volees) / base:.2f}x)"
            )
            if len(plains) > 1:
                _, low, high = ratio_interval(volees, plains)
                cells.append(f"95 % interval {low:.2f}-{high:.2f}x")
        print(f"  {phase:10s} {by['plain']['wall']:5.1f} s: " + "; ".join(cells))
    print("  target: <= 1.1x the plain copies' mean in every phase")
    anon = results.get("anon") or {}
    if anon:
        # The heap each program keeps: Claude Code's own GC works over it at rest.
        cells = [f"{name} {mib:.0f}" for name, mib in anon.items()]
        print("anonymous memory after idle, MiB (the program's tree): " + ", ".join(cells))
    print("split since start (own / reaped children CPU s of the agent's program tree):")
    for name, (own, reaped) in results["split"].items():
        print(f"  {name:6s} own {own:.2f}, reaped {reaped:.2f}")
    hooks = results["hooks"]
    print(f"hooks seen by the daemon: {hooks['at rest']} at rest, {hooks['all']} in all")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--busy-seconds", type=float, default=15.0)
    parser.add_argument("--generic", action="store_true", help="a shell loop, no Claude Code")
    parser.add_argument(
        "--plains", type=int, default=2, help="plain copies; their mean is the baseline"
    )
    parser.add_argument(
        "--volees",
        type=int,
        default=1,
        help="volee agents under one daemon (its CPU divided among them, as a person's is)",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="also volee's argv without its status line, without its hooks, without its MCP",
    )
    parser.add_argument(
        "--own-home", action="store_true", help="plain and argv in a HOME the daemon does not watch"
    )
    args = parser.parse_args(argv)
    if shutil.which("sh") is None:
        raise SystemExit("no sh")
    report(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Count everything volee runs: a process, the children it reaped, its live descendants, hosts,
MCP relays (issue 13: a figure of one process hides the Node listings it starts).

CPU of a part is the sum, over its live processes, of user + system + the CPU of the
children each one reaped (``children_user``/``children_system``, Linux's RUSAGE_CHILDREN
per process); the difference of two samples is what the part spent meanwhile, including
processes that were born and reaped in between.  Hosts are not children of the daemon
(they outlive it): they are found from their records, their agent's program excluded
(it is the agent, not volee), and the MCP relays are found under the programs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

MiB = 1024 * 1024
RELAY_MARK = "mcp/relay.py"


def own_and_reaped(proc: psutil.Process) -> float:
    """CPU seconds of one process and of the children it reaped."""
    try:
        t = proc.cpu_times()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return 0.0
    return float(t.user + t.system + t.children_user + t.children_system)


def tree(pid: int, exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """``pid`` and its live descendants, without the subtrees of ``exclude``."""
    skip = set(exclude)
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return []
    out = [root]
    todo = [root]
    while todo:
        proc = todo.pop()
        try:
            children = proc.children()
        except psutil.NoSuchProcess:
            continue
        for child in children:
            if child.pid not in skip:
                out.append(child)
                todo.append(child)
    return out


def tree_cpu(pid: int, exclude: Iterable[int] = ()) -> float:
    return sum(own_and_reaped(p) for p in tree(pid, exclude))


def memory(procs: Iterable[psutil.Process]) -> tuple[float, float, float]:
    """(RSS, PSS, USS) in MiB, summed (RSS counts the shared pages, libpython's, each time)."""
    rss = pss = uss = 0.0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss / MiB
        pss += getattr(info, "pss", 0) / MiB
        uss += info.uss / MiB
    return rss, pss, uss


def host_records(hosts_dir: Path) -> list[dict[str, int]]:
    out = []
    for path in sorted(hosts_dir.glob("ag_*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("host_pid") and psutil.pid_exists(int(data["host_pid"])):
            out.append(
                {"host": int(data["host_pid"]), "program": int(data.get("program_pid") or 0)}
            )
    return out


def relays_under(pids: Iterable[int]) -> list[psutil.Process]:
    """The MCP relays running below the given processes (the agents' programs)."""
    found = []
    for pid in pids:
        for proc in tree(pid)[1:]:
            try:
                if any(RELAY_MARK in part for part in proc.cmdline()):
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
    return found


@dataclass
class Fleet:
    """volee's processes for one VOLEE_HOME: the daemon, the app, the hosts, the relays."""

    hosts_dir: Path
    daemon: int | None = None
    app: int | None = None
    parts: dict[str, list[psutil.Process]] = field(default_factory=dict)

    def scan(self) -> dict[str, list[psutil.Process]]:
        records = host_records(self.hosts_dir)
        hosts = [h["host"] for h in records]
        programs = [h["program"] for h in records if h["program"]]
        parts: dict[str, list[psutil.Process]] = {}
        if self.daemon:
            parts["daemon"] = tree(self.daemon, exclude=hosts)
        if self.app:
            parts["app"] = tree(self.app, exclude=hosts + ([self.daemon] if self.daemon else []))
        parts["hosts"] = [p for h in hosts for p in tree(h, exclude=programs)]
        parts["relays"] = relays_under(programs)
        self.parts = parts
        return parts

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far by part (own + reaped + live descendants)."""
        parts = self.scan()
        return {name: sum(own_and_reaped(p) for p in procs) for name, procs in parts.items()}

    def memory(self) -> dict[str, tuple[float, float, float, int]]:
        """(RSS, PSS, USS MiB, processes) by part."""
        parts = self.scan()
        return {name: (*memory(procs), len(procs)) for name, procs in parts.items()}


def idle_cpu(fleet: Fleet, seconds: float) -> dict[str, float]:
    """Percent of one core by part over ``seconds`` (processes present at either end)."""
    before = fleet.cpu()
    t0 = time.monotonic()
    time.sleep(seconds)
    after = fleet.cpu()
    wall = time.monotonic() - t0
    return {name: 100 * max(0.0, after[name] - before.get(name, 0.0)) / wall for name in after}

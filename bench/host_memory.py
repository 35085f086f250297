"""Measure a host's memory (RSS/PSS/USS), the Python host's and the native one's.

For each host (``--host python``, ``native`` or ``both``, the default): a real detached host
holding ``sleep 1000``, then one holding a shell measured at rest, attached, with its
scrollback full (400 KB printed) and after a ``screen`` request; then ten hosts holding
``sleep 1000`` at once, summed: what ten more agents cost (docs/performance.md, item 4:
target +30 MB RSS per 10 agents).  Figures from ``/proc/<pid>/smaps_rollup`` (RSS, PSS,
private pages as USS); the Python host's target is <= 6 MiB USS.

    .venv/bin/python bench/host_memory.py [--host both]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from volee_desktop.hosts import native
from volee_desktop.hosts.launcher import HOST_ENV, HostClient, launch_host
from volee_desktop.hosts.records import HostRecord

MB = 1000 * 1000


def smaps(pid: int) -> dict[str, int]:
    """RSS, PSS and USS (private clean + dirty) of ``pid`` in bytes, from smaps_rollup."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0].endswith(":") and parts[2] == "kB":
                fields[parts[0][:-1]] = int(parts[1]) * 1024
    return {
        "rss": fields["Rss"],
        "pss": fields["Pss"],
        "uss": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0),
    }


def _line(label: str, pid: int) -> dict[str, int]:
    m = smaps(pid)
    print(
        f"  {label:26} RSS {m['rss'] / MB:6.2f} MB  PSS {m['pss'] / MB:6.2f} MB  "
        f"USS {m['uss'] / MB:6.2f} MB"
    )
    return m


def _settle() -> None:
    time.sleep(0.3)  # let the host finish its start-up work before measuring


def _launch(root: Path, agent: str, argv: list[str]) -> HostRecord:
    return launch_host(
        agent,
        argv,
        root,
        dict(os.environ),
        root / "hosts" / f"{agent}.json",
        root / "run" / f"{agent}.sock",
    )


def measure(kind: str, root: Path) -> dict[str, int]:
    """Print one host kind's figures; return the ten hosts' sums."""
    os.environ[HOST_ENV] = kind
    print(f"{kind} host")
    record = _launch(root, f"ag_{kind}_sleep", ["sleep", "1000"])
    _settle()
    _line("holding sleep 1000", record.host_pid)
    HostClient(record.socket).stop(grace=2)

    script = "echo ready; read x; yes output-line | head -c 400000; echo filled; sleep 600"
    record = _launch(root, f"ag_{kind}_sh", ["sh", "-c", script])
    _settle()
    _line("holding a shell, at rest", record.host_pid)
    client = HostClient(record.socket)
    with client.open_stream() as stream:
        stream.read_until(b"ready", 5)
        _settle()
        _line("attached", record.host_pid)
        client.send_text("go")
        stream.read_until(b"filled", 10)
        _settle()
        _line("scrollback full", record.host_pid)
    client.screen(40)
    _settle()
    _line("after a screen request", record.host_pid)
    client.stop(grace=2)

    ten = [_launch(root, f"ag_{kind}_{i}", ["sleep", "1000"]) for i in range(10)]
    _settle()
    total = {"rss": 0, "pss": 0, "uss": 0}
    for rec in ten:
        for key, value in smaps(rec.host_pid).items():
            total[key] += value
    print(
        f"  {'10 hosts holding sleep':26} RSS {total['rss'] / MB:6.2f} MB  "
        f"PSS {total['pss'] / MB:6.2f} MB  USS {total['uss'] / MB:6.2f} MB"
    )
    for rec in ten:
        HostClient(rec.socket).stop(grace=2)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", choices=("python", "native", "both"), default="both")
    args = parser.parse_args()
    kinds = ["python", "native"] if args.host == "both" else [args.host]
    if "native" in kinds and native.binary() is None:
        print("the native host is not built: python -m volee_desktop.hosts.native build")
        return 1
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    try:
        totals = {kind: measure(kind, root) for kind in kinds}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if len(totals) == 2:
        py, nat = totals["python"], totals["native"]
        print(
            f"10 more agents: python host +{py['rss'] / MB:.1f} MB RSS "
            f"(+{py['pss'] / MB:.1f} PSS), native host +{nat['rss'] / MB:.1f} MB RSS "
            f"(+{nat['pss'] / MB:.1f} PSS)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Wall and CPU time of volee's status-line wrapper as Claude Code runs it, vs ``-I -S -c pass``.

Run: ``.venv/bin/python bench/statusline.py [--runs N]``.  Claude Code runs its status line
on every change of the conversation, so most runs see the same share: measured are an
unchanged share (nothing sent), a changed share (handed to a daemon that is not there: the
spool, write + fsync), and the person's own status line (``printf``) run after volee's part.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from volee_desktop.daemon.agents.hosts import STATUSLINE


def payload(used: int) -> bytes:
    window = {"context_window_size": 200000, "used_percentage": used, "current_usage": {}}
    data = {"session_id": "s", "cost": {"total_cost_usd": 0.1}, "context_window": window}
    return json.dumps(data).encode()


def timed(argv: list[str], runs: int, env: dict[str, str], data: object) -> tuple[float, float]:
    """(median wall ms, mean CPU ms) over ``runs``; ``data(i)`` is the i-th run's stdin."""
    walls, cpus = [], []
    for i in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(argv, input=data(i), env=env, stdout=subprocess.DEVNULL, check=False)  # type: ignore[operator]
        walls.append((time.perf_counter() - began) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return statistics.median(walls), statistics.fmean(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="vbs", dir="/tmp"))
    env = {
        "PATH": "/usr/bin:/bin",
        "VOLEE_AGENT": "ag_bench",
        "VOLEE_SOCKET": str(tmp / "none.sock"),
        "VOLEE_SPOOL": str(tmp / "spool"),
    }
    wrapper = [sys.executable, "-I", "-S", str(STATUSLINE), str(tmp / "last")]
    rows = [
        ("python -I -S -c pass", [sys.executable, "-I", "-S", "-c", "pass"], lambda i: b""),
        ("unchanged share", wrapper, lambda i: payload(42)),
        ("changed share (spooled)", wrapper, lambda i: payload(i % 100)),
        ("unchanged + own status line", [*wrapper, "printf mine"], lambda i: payload(42)),
    ]
    print(f"volee's status-line wrapper, {args.runs} runs each")
    base = None
    for name, argv, data in rows:
        wall, cpu = timed(argv, args.runs, env, data)
        base = base or wall
        print(f"  {name:30s} median {wall:6.1f} ms ({wall / base:4.2f}x)  CPU {cpu:5.1f} ms/run")


if __name__ == "__main__":
    main()

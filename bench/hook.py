"""Wall time of `volee hook` (the console script, as a harness runs it) vs `python3 -c pass`.

Run: ``.venv/bin/python bench/hook.py [--runs N]``.  Measured in the same run: the bare
interpreter, the hook against a running daemon (a real round trip: parse, commit, fsync) and the
hook with no daemon (it spools).  Prints medians, p90 and the ratios; target <= 2.5x.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "harness" / "samples"


def timed(cmd: list[str], runs: int, env: dict[str, str], stdin: bytes = b"") -> list[float]:
    out = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - began)
    return sorted(out)


def line(name: str, values: list[float], base: float | None) -> str:
    med = statistics.median(values)
    p90 = values[int(len(values) * 0.9) - 1]
    ratio = f"  {med / base:.2f}x" if base else ""
    return f"{name:<34} median {med * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms{ratio}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    env = {**os.environ, "VOLEE_HOME": str(home), "VOLEE_AGENT": ""}
    volee = str(Path(sys.executable).with_name("volee"))
    payload = (SAMPLE / "claude-hook-PreToolUse.json").read_bytes()
    # The real interpreter binary (a pyenv shim would be a slow shell script).
    python3 = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    try:
        # Interleave the kinds so machine noise hits them alike.
        base: list[float] = []
        spool: list[float] = []
        for _ in range(2):
            base += timed([python3, "-c", "pass"], args.runs // 2, env)
            spool += timed([volee, "hook", "PreToolUse"], args.runs // 2, env, payload)
        daemon = subprocess.Popen([volee, "daemon", "run"], env=env, stderr=subprocess.DEVNULL)
        try:
            subprocess.run([volee, "ls"], env=env, stdout=subprocess.DEVNULL, check=True)
            live: list[float] = []
            base2: list[float] = []
            for _ in range(2):
                base2 += timed([python3, "-c", "pass"], args.runs // 2, env)
                live += timed([volee, "hook", "PreToolUse"], args.runs // 2, env, payload)
        finally:
            daemon.terminate()
            daemon.wait(30)
        base.sort()
        spool.sort()
        base2.sort()
        live.sort()
        b1, b2 = statistics.median(base), statistics.median(base2)
        print(line("python3 -c pass", base, None))
        print(line("volee hook (no daemon: spools)", spool, b1))
        print(line("python3 -c pass (again)", base2, None))
        print(line("volee hook (daemon answers)", live, b2))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

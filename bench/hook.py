"""Wall time of `volee hook` (the console script, as a harness runs it) vs `python3 -c pass`.

Run: ``.venv/bin/python bench/hook.py [--runs N]``.  Measured in the same run: the bare
interpreter, the hook against a running daemon (a real round trip: parse, commit, fsync) and the
hook with no daemon (it spools).  Prints medians, p90, the ratios (target <= 2.5x) and the CPU
time per run; then the same for the shim as volee's own agents run it (``python -I -S
hookshim.py``, docs/decisions.md D5) against ``python -I -S -c pass``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from volee_desktop.daemon.agents.runner import HOOKSHIM
from volee_desktop.paths import dirs

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "harness" / "samples"


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], runs: int, env: dict[str, str], stdin: bytes = b"") -> list[float]:
    out = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        CPU.setdefault(" ".join(cmd), []).append(used)
    return sorted(out)


def line(name: str, values: list[float], base: float | None, cmd: list[str]) -> str:
    med = statistics.median(values)
    p90 = values[int(len(values) * 0.9) - 1]
    ratio = f"  {med / base:.2f}x" if base else "       "
    cpu = statistics.mean(CPU[" ".join(cmd)]) * 1000
    return (
        f"{name:<40} median {med * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms{ratio}"
        f"  CPU {cpu:5.1f} ms/run"
    )


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
    bare = [python3, "-c", "pass"]
    lean_bare = [sys.executable, "-I", "-S", "-c", "pass"]
    hook = [volee, "hook", "PreToolUse"]
    shim = [sys.executable, "-I", "-S", str(HOOKSHIM), "PreToolUse"]
    folders = dirs(env)
    shim_env = {**env, "VOLEE_SOCKET": str(folders.socket), "VOLEE_SPOOL": str(folders.spool)}
    try:
        # Interleave the kinds so machine noise hits them alike.
        base: list[float] = []
        spool: list[float] = []
        for _ in range(2):
            base += timed(bare, args.runs // 2, env)
            spool += timed(hook, args.runs // 2, env, payload)
        daemon = subprocess.Popen([volee, "daemon", "run"], env=env, stderr=subprocess.DEVNULL)
        try:
            subprocess.run([volee, "ls"], env=env, stdout=subprocess.DEVNULL, check=True)
            live: list[float] = []
            base2: list[float] = []
            lean: list[float] = []
            lean_base: list[float] = []
            for _ in range(2):
                base2 += timed(bare, args.runs // 2, env)
                live += timed(hook, args.runs // 2, env, payload)
                lean_base += timed(lean_bare, args.runs // 2, env)
                lean += timed(shim, args.runs // 2, shim_env, payload)
        finally:
            daemon.terminate()
            daemon.wait(30)
        for values in (base, spool, base2, live, lean_base, lean):
            values.sort()
        b1, b2 = statistics.median(base), statistics.median(base2)
        print(line("python3 -c pass", base, None, bare))
        print(line("volee hook (no daemon: spools)", spool, b1, hook))
        print(line("python3 -c pass (again)", base2, None, bare))
        print(line("volee hook (daemon answers)", live, b2, hook))
        print(line("python -I -S -c pass", lean_base, None, lean_bare))
        print(line("agents' shim -I -S (daemon answers)", lean, statistics.median(lean_base), shim))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

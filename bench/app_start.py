"""The app's start-up to its tray icon, against the headless daemon's, in one run (issue 27).

    .venv/bin/python bench/app_start.py [--runs 7]
    .venv/bin/python bench/app_start.py --once app|daemon   # one start, for an outside timer

The time runs from spawning ``volee app`` (the embedded daemon, no daemon running before) to
both its icon shown in the tray (trayer on Xvfb, read with ``xwininfo``) and ``agents.list``
answered over its socket; the baseline is ``volee daemon run`` to ``agents.list`` answered.
Each start is killed (its process group) once ready, so neither's shutdown is timed.  The
two alternate (A B A B ...) in the same VOLEE_HOME (kept between runs, as a person's is);
printed: each one's median and the ratio app / daemon pair by pair, with the load average.
Target (issue 27): the app <= 0.45 s on this machine, and <= 1.0x the peer's first screen.

``--once`` does one start (DISPLAY and VOLEE_HOME from the environment) and prints its time,
so a timer of whole processes can pair ``--once app`` against ``--once daemon``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from volee_desktop.ipc.client import Client  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402

DEADLINE = 60.0


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def answers(socket: Path) -> bool:
    try:
        with Client.connect(socket, timeout=5) as client:
            client.call("agents.list")
        return True
    except Exception:
        return False


def icon_shown(env: dict[str, str]) -> bool:
    """Whether a window called volee is embedded in the trayer panel."""
    tree = subprocess.run(
        ["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True, check=False
    ).stdout
    inside, depth = False, 0
    for line in tree.splitlines():
        if '"panel": ("panel" "trayer")' in line:
            inside, depth = True, len(line) - len(line.lstrip())
            continue
        if inside:
            if line.strip() and len(line) - len(line.lstrip()) <= depth:
                inside = False
            elif '"volee": ("volee"' in line:
                return True
    return False


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants (with what each reaped) so far."""
    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def compiled() -> int:
    """Compile volee's bytecode where it is missing or stale; the number of modules compiled.

    An installed volee has it (pip compiles a wheel's modules, and the .deb keeps them), but a
    checkout on a machine with ``PYTHONDONTWRITEBYTECODE=1`` (this one) compiled every module
    it imports from source at every start: the start timed was not the one a person gets.
    """
    import compileall
    import importlib.util

    package = ROOT / "volee_desktop"
    stale = 0
    for source in package.rglob("*.py"):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
            stale += 1
    if stale:
        compileall.compile_dir(str(package), quiet=1)
    return stale


def kept(env: dict[str, str]) -> str:
    """Have a first start keep the dataclasses' methods it compiled, as a person's first start
    does (``volee_desktop/dcache.py``: a few seconds after the daemon is up); each timed
    start is killed once ready, before that.  What was done, in words."""
    from volee_desktop import dcache
    from volee_desktop.paths import state_dir

    cache = state_dir(env) / dcache.NAME
    if cache.exists():
        return "kept already"
    with started("app", env) as proc:
        deadline = time.monotonic() + DEADLINE
        while not cache.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
    return "kept by a first start" if cache.exists() else "NOT kept by a first start"


def once(what: str, env: dict[str, str]) -> tuple[float, float]:
    """(seconds from spawning ``what`` to ready, its CPU seconds meanwhile); the started tree
    is killed after."""
    socket = dirs(env).socket
    began = time.perf_counter()
    with started(what, env) as proc:
        icon = what != "app"
        listed = False
        while not (icon and listed):
            if proc.poll() is not None:
                raise SystemExit(f"volee {what} exited with {proc.returncode}")
            if time.perf_counter() - began > DEADLINE:
                raise SystemExit(f"volee {what} was not ready within {DEADLINE:g} s")
            listed = listed or answers(socket)
            if listed and not icon:
                icon = icon_shown(env)  # a process: not before the list answers
            if not (icon and listed):
                time.sleep(0.01)
        return time.perf_counter() - began, tree_cpu(proc.pid)


@contextlib.contextmanager
def started(what: str, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """``volee app`` or ``volee daemon run`` started in a session of its own, its whole
    process group killed after."""
    argv = [sys.executable, "-m", "volee_desktop.cli", "app" if what == "app" else "daemon"]
    if what != "app":
        argv.append("run")
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def paired(env: dict[str, str], runs: int) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {"app": [], "daemon": []}
    once("app", env)  # a warm-up: the page cache, the home's files
    once("daemon", env)
    for _ in range(runs):
        for what in ("app", "daemon"):
            out[what].append(once(what, env))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--once", choices=("app", "daemon"))
    args = parser.parse_args(argv)
    if args.once:
        kept(dict(os.environ))
        wall, cpu = once(args.once, dict(os.environ))
        print(f"{args.once} ready in {wall:.3f} s (its CPU {cpu:.3f} s)")
        return 0
    from tests.ui import desktop as dt

    if dt.missing():
        raise SystemExit(f"needs {', '.join(dt.missing())}")
    print(f"volee's bytecode: {compiled()} modules compiled first (an install has them)")
    desk = dt.Desktop()
    home = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    try:
        env = dict(desk.env)
        env["VOLEE_HOME"] = str(home)
        print(f"the dataclasses' compiled methods: {kept(env)}")
        runs = paired(env, args.runs)
        print(f"start-up to ready, {args.runs} pairs, median (min-max); {load()}")
        for i, unit in ((0, "wall"), (1, "CPU")):
            times = {k: [r[i] for r in v] for k, v in runs.items()}
            ratios = [a / d for a, d in zip(times["app"], times["daemon"], strict=True) if d]
            for name, key in (("app (icon + list)", "app"), ("daemon (list)", "daemon")):
                t = times[key]
                print(
                    f"  {unit:4s} {name:18s} {statistics.median(t):.3f} s "
                    f"({min(t):.3f}-{max(t):.3f})"
                )
            if ratios:
                print(
                    f"  {unit:4s} app / daemon, pair by pair: median "
                    f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
                )
        app = statistics.median(r[0] for r in runs["app"])
        print(f"  target: app <= 0.45 s wall ({'met' if app <= 0.45 else 'missed'}: {app:.3f} s)")
    finally:
        desk.close()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

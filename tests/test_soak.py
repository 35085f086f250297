"""The soak bench (bench/soak.py) in its short form, once per run of the suite (issue 22).

Twelve agents (two real Claude Code asking and allowed, ten generic stopped, resumed and
forgotten), the tray app on Xvfb as the daemon's client with its list opened and closed, the
daemon killed twice: nothing volee acknowledged is lost, nothing of the run is left behind,
and the figures print.  The full hour is for the closing note (docs/testing.md).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.harness_env import find_harness
from tests.ui import desktop as dt

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

BENCH = Path(__file__).resolve().parents[1] / "bench" / "soak.py"
MINUTES = "3"  # of churn; with the start and the two rest measures, about five minutes


def test_the_short_soak_loses_nothing_and_leaves_nothing_behind() -> None:
    argv = [sys.executable, str(BENCH), "--minutes", MINUTES, "--agents", "12", "--claude", "2"]
    argv += ["--idle-seconds", "20", "--sample", "15"]
    if dt.missing():
        argv.append("--no-app")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=840, check=False)
    print(done.stdout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "lost: 0\n" in out
    assert "left behind after close: 0\n" in out
    acked = re.search(
        r"acknowledged: (\d+) spawns, (\d+) forgets, (\d+) answers; daemon killed (\d)x", out
    )
    assert acked, out
    spawns, forgets, answers, kills = map(int, acked.groups())
    assert kills == 2
    assert spawns > 12  # the churn replaced forgotten agents
    assert forgets > 0
    if find_harness("claude") is not None:
        assert answers > 0
    assert re.search(r"  daemon +\d+\.\d+ / +\d+\.\d+ -> ", out)
    assert "CPU at rest" in out

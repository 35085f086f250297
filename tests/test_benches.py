"""Issue 27's benches, each run in a tiny form so they cannot rot (no figure is asserted: this
machine is shared; the benches print what they measured, and docs/performance.md keeps it).

Each runs as a person runs it (``python bench/X.py ...``) with generic agents instead of Claude
Code and seconds instead of minutes; the test checks that it finished and printed its figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ui import desktop as dt

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def bench(name: str, *args: str, timeout: float = 100) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.e2e
def test_agent_overhead_tiny() -> None:
    out = bench("agent_overhead.py", "--generic", "--seconds", "0.5")
    assert "after turn" in out
    assert "idle" in out
    assert "plain" in out
    assert "volee" in out
    assert "x" in out
    assert "load " in out
    assert "anonymous memory after idle, MiB" in out


def test_the_overhead_s_interval_widens_with_the_copies_spread() -> None:
    """The ratio of the means and its 95 % interval (delta method, Welch's degrees of freedom),
    worked by hand: 1.1125x, 0.978-1.247x with these four and four copies."""
    sys.path.insert(0, str(BENCH))
    import agent_overhead

    ratio, low, high = agent_overhead.ratio_interval([1.1, 1.2, 1.0, 1.15], [1.0, 0.95, 1.05, 1.0])
    assert (round(ratio, 4), round(low, 3), round(high, 3)) == (1.1125, 0.978, 1.247)
    assert agent_overhead.ratio_interval([2.0, 2.0], [1.0, 1.0]) == (2.0, 2.0, 2.0)
    many = agent_overhead.ratio_interval([1.1, 1.2, 1.0, 1.15] * 10, [1.0, 0.95, 1.05, 1.0] * 10)
    assert 0.978 < many[1] < many[2] < 1.247


def test_the_overhead_types_a_plain_copy_then_a_volee_agent_in_turn() -> None:
    sys.path.insert(0, str(BENCH))
    import agent_overhead

    parts = {"plain": 1, "plain2": 2, "plain3": 3, "argv": 4, "volee0": 5, "volee1": 6}
    assert agent_overhead.interleaved(parts) == [1, 4, 5, 2, 6, 3]


@pytest.mark.e2e
def test_app_start_once_for_the_daemon(tmp_path: Path) -> None:
    env = {**os.environ, "VOLEE_HOME": str(tmp_path / "vh")}
    done = subprocess.run(
        [sys.executable, str(BENCH / "app_start.py"), "--once", "daemon"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("daemon ready in ")


@pytest.mark.e2e
@pytest.mark.realx
@pytest.mark.skipif(bool(dt.missing()), reason=f"needs {', '.join(dt.missing())}")
def test_app_start_paired_tiny() -> None:
    out = bench("app_start.py", "--runs", "1")
    assert "app (icon + list)" in out
    assert "daemon (list)" in out
    assert "app / daemon, pair by pair" in out
    assert "CPU" in out


@pytest.mark.e2e
@pytest.mark.realx
@pytest.mark.skipif(bool(dt.missing()), reason=f"needs {', '.join(dt.missing())}")
def test_peer_tiny_volee_side() -> None:
    out = bench(
        "peer.py",
        *("--generic", "--no-peer", "--agents", "1", "--more", "1"),
        *("--idle-seconds", "0.3", "--settle", "0.3", "--pairs", "1"),
    )
    assert "volee " in out
    assert "RSS" in out
    assert "PSS" in out
    assert "1 more generic agents" in out
    assert "start-up to the first screen" in out
    assert "the app's list open" in out


@pytest.mark.e2e
def test_year_log_tiny() -> None:
    out = bench(
        "year_log.py",
        *("--generic", "--days", "1", "--hours", "1", "--tool-calls-per-hour", "2"),
        *("--runs", "1"),
    )
    assert "records per agent-hour" in out
    assert "MB on disk" in out
    assert "full replay" in out
    assert "with the snapshot" in out
    assert "after compaction" in out


@pytest.mark.e2e
def test_fleet_tiny_with_the_list_open() -> None:
    out = bench(
        "fleet.py",
        *("--sizes", "1", "--claude", "0", "--no-app", "--list-open"),
        *("--idle-seconds", "0.3", "--settle", "0.3"),
    )
    assert "== 1 agents" in out
    assert "list open (1 interactive client)" in out
    assert "volee ls, nothing new" in out


def test_conversation_tiny() -> None:
    out = bench(
        "conversation.py", "--entries", "120", "--files", "30", "--windows", "2", timeout=200
    )
    assert "conversation of 120 entries: first screen" in out
    assert "longest GUI stall" in out
    assert "change of 30 files" in out
    assert "2 conversation windows RSS" in out


#: The benches with options (argparse): --help imports everything they need and runs nothing.
WITH_HELP = sorted(p.name for p in BENCH.glob("*.py") if "argparse" in p.read_text())


@pytest.mark.parametrize("name", WITH_HELP)
def test_every_bench_starts(name: str) -> None:
    # bench/ui.py and bench/new_agent.py imported tests/ui/fakes.py for weeks after it moved
    # to tests/fakes/ (found by issue 24's helper): --help imports everything a run needs.
    out = bench(name, "--help", timeout=60)
    assert "usage:" in out, out

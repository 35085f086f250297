"""The suite's own processes: a test that leaves one running fails the run, named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import leftovers
from tests.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_a_process_of_this_session_is_found_and_named_by_its_test() -> None:
    began = leftovers.now_ticks()
    marker = os.environ[leftovers.MARKER]
    proc = subprocess.Popen(["sleep", "300"])  # inherits the marker, as everything does
    try:
        tests = [(began, leftovers.now_ticks() + 100, "tests/x.py::t")]

        def found() -> list[leftovers.Leftover]:
            return [f for f in leftovers.find(marker, [], tests, began) if f.pid == proc.pid]

        (left,) = wait_until(found, 10, "the sleeper")
        assert left.test == "tests/x.py::t"
        assert "sleep 300" in str(left)
        leftovers.kill([left])
        proc.wait(10)
        assert not found()
    finally:
        proc.kill()
        proc.wait()


def test_a_host_is_found_by_the_home_in_its_command_line(tmp_path: Path) -> None:
    home = tmp_path / "h"
    procs = [
        leftovers.Proc(10, 5, None, None, f"python -c boot --record {home}/state/hosts/a.json"),
        leftovers.Proc(11, 6, None, str(home).encode(), "claude"),
        leftovers.Proc(12, 7, b"another session", None, "daemon"),
        leftovers.Proc(13, 1, b"ours", None, "older than the session"),
        leftovers.Proc(14, 8, b"ours", str(home).encode(), "volee daemon run"),
    ]
    found = leftovers.find("ours", [], [(4, 9, "t")], 2, procs)
    assert sorted(f.pid for f in found) == [10, 11, 14]


@pytest.mark.slow
# In one process, and on an xdist worker as scripts/dev test runs it (the worker's leak check
# hands its finding to the controller).
@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_a_run_that_leaves_a_process_fails_naming_the_test(workers: list[str]) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *workers,
            str(ROOT / "tests" / "faults" / "leaky_sample.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 passed" in out
    assert "leftover processes" in out
    assert "started by tests/faults/leaky_sample.py::test_that_leaves_a_sleeper_behind" in out
    assert "sleep 300" in out

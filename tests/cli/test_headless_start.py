"""A daemon started by the CLI says so, once (issue 26); `volee app` then joins it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from volee_desktop.cli.common import STARTED_HEADLESS


def volee(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ.copy(),
    )


@pytest.fixture
def stop_daemon() -> Iterator[None]:
    yield
    volee("daemon", "stop")


def test_the_command_that_starts_the_daemon_says_so_on_stderr_once(stop_daemon: None) -> None:
    first = volee("ls", "--json")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "[]"  # scripts still read clean JSON
    assert first.stderr.splitlines() == [
        "volee: started the daemon (no tray): `volee app` for the tray"
    ]
    assert STARTED_HEADLESS in first.stderr
    again = volee("ls")
    assert again.returncode == 0
    assert STARTED_HEADLESS not in again.stderr, "only the command that started it says so"

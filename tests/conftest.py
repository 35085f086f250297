"""Project-wide test fixtures: every test runs under its own short VOLEE_HOME."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Variables that would make a test talk to a real daemon, harness or desktop of the developer.
_LEAKY = ("VOLEE_AGENT", "VOLEE_HARNESS", "VOLEE_CLAUDE_BIN", "VOLEE_CODEX_BIN", "VOLEE_PI_BIN")


@pytest.fixture(autouse=True)
def _isolated_volee_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh, short VOLEE_HOME (Unix socket paths are limited to ~104 bytes)."""
    home = Path(tempfile.mkdtemp(prefix="vh", dir="/tmp"))
    monkeypatch.setenv("VOLEE_HOME", str(home))
    for name in _LEAKY:
        monkeypatch.delenv(name, raising=False)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def volee_home() -> Path:
    """The VOLEE_HOME of this test."""
    return Path(os.environ["VOLEE_HOME"])

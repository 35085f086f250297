"""Fixtures of the core tests: every test runs under a temporary VOLEE_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _volee_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The core does no IO; this only guarantees nothing here could reach the real home.
    monkeypatch.setenv("VOLEE_HOME", str(tmp_path / "home"))

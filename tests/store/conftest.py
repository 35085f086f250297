"""Store tests: every test runs under its own VOLEE_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def volee_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("VOLEE_HOME", str(home))
    return home

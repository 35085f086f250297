"""Fixtures for login-item tests: a temp home, a real volee executable, a hermetic environment."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def volee_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "volee-home"
    monkeypatch.setenv("VOLEE_HOME", str(home))
    return home


@pytest.fixture
def home(tmp_path: Path, volee_home: Path) -> Path:
    """A person's home with some things of their own already in it."""
    home = tmp_path / "home"
    (home / ".config" / "systemd" / "user").mkdir(parents=True)
    (home / ".config" / "systemd" / "user" / "theirs.service").write_text("[Service]\n")
    (home / ".config" / "autostart").mkdir()
    (home / ".config" / "autostart" / "theirs.desktop").write_text("[Desktop Entry]\n")
    (home / "Library" / "LaunchAgents").mkdir(parents=True)
    (home / "Library" / "LaunchAgents" / "com.other.plist").write_text("<plist/>")
    return home


@pytest.fixture
def volee_exe(tmp_path: Path) -> Path:
    """A real executable standing in for the volee script (systemd-analyze checks it exists)."""
    exe = tmp_path / "bin" / "volee"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """An empty 0700 XDG_RUNTIME_DIR: no user bus in it, so systemctl works on files only."""
    path = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    path.chmod(0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def environ(home: Path, runtime_dir: Path, volee_home: Path) -> dict[str, str]:
    """The environment a login item sees: the temp home, never the real one, never a real bus."""
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "VOLEE_HOME": str(volee_home),
    }

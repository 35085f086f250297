"""Issue 22, finding 7: every folder volee makes is 0700, ``VOLEE_HOME`` and ``state/screens``
included, whatever the umask; folders an older volee left open are tightened at start.

Agents run as the person's user, so these modes keep *other* users out (docs/faults.md,
docs/trust-model.md).  A real daemon in-process, under a umask that opens folders (022).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from volee_desktop.daemon.agents.screens import Screens, Snapshot
from volee_desktop.daemon.main import Daemon
from volee_desktop.paths import dirs


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _open_folders(top: Path) -> list[str]:
    found = [] if _mode(top) == 0o700 else [f"{top} {oct(_mode(top))}"]
    for root, folders, _files in os.walk(top):
        for name in folders:
            path = Path(root) / name
            if _mode(path) != 0o700:
                found.append(f"{path} {oct(_mode(path))}")
    return found


async def test_every_folder_volee_makes_is_0700_whatever_the_umask(
    open_umask: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "fresh" / "vh"
    monkeypatch.setenv("VOLEE_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    folders = dirs()
    d = await Daemon.start(folders)
    try:
        assert folders.screens.is_dir()
        assert folders.agents.is_dir()
    finally:
        await d.close()
    assert _open_folders(home) == []
    assert _mode(tmp_path / "fresh") == 0o700  # a parent volee had to make, too


async def test_folders_left_open_are_tightened_at_start(
    open_umask: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "vh"
    (home / "state" / "screens").mkdir(parents=True, mode=0o755)
    (home / "run").mkdir(mode=0o755)
    for folder in (home, home / "state", home / "state" / "screens", home / "run"):
        os.chmod(folder, 0o755)
    monkeypatch.setenv("VOLEE_HOME", str(home))
    d = await Daemon.start(dirs())
    await d.close()
    assert _open_folders(home) == []


def test_a_kept_screen_goes_into_a_0700_folder(open_umask: None, tmp_path: Path) -> None:
    screens = Screens(tmp_path / "state" / "screens")
    snapshot = Snapshot(["$ done"], 24, 80, (0, 6), 1.0, False, 6)
    screens._save("ag_x", snapshot)
    assert _mode(tmp_path / "state" / "screens") == 0o700
    assert _mode(tmp_path / "state") == 0o700
    assert _mode(screens.path_of("ag_x")) == 0o600

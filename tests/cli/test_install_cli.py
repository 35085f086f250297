"""What an installed `volee` says about itself: its version, its menu entry, Windows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import volee_desktop
from volee_desktop.app.desktopentry import PNG_SIZES, Layout
from volee_desktop.cli import entry


def volee(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env or os.environ.copy(),
    )


def test_version() -> None:
    done = volee("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"volee {volee_desktop.__version__}"


def test_the_version_is_written_once() -> None:
    pyproject = (Path(volee_desktop.__file__).parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "volee_desktop.__version__" }' in pyproject
    assert "\nversion =" not in pyproject.split("[project]")[1].split("\n[")[0]


def test_windows_is_refused_at_start_with_a_pointer_to_wsl(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert entry.main(["ls"]) == 1
    err = capsys.readouterr().err
    assert "not supported on Windows yet; it runs under WSL" in err


def test_desktop_entry_install_then_uninstall_for_this_user(tmp_path: Path) -> None:
    env = os.environ.copy()
    env["XDG_DATA_HOME"] = str(tmp_path / "share")
    env["QT_QPA_PLATFORM"] = "offscreen"
    layout = Layout(tmp_path / "share")
    done = volee("desktop-entry", "install", "--json", env=env)
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)["installed"]
    assert sorted(written) == sorted(str(p) for p in layout.files())
    text = layout.entry.read_text()
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    assert Path(exec_line.removeprefix("Exec=")).is_absolute(), exec_line
    assert "Icon=volee\n" in text
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(
            ["desktop-file-validate", str(layout.entry)], capture_output=True, text=True
        )
        assert (check.returncode, check.stdout) == (0, ""), check.stdout
    for size in PNG_SIZES:
        data = layout.png(size).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(data[16:20], "big") == size
    assert layout.svg.read_text().startswith("<svg")
    # Nothing that starts volee at login.
    assert not (tmp_path / "share" / "autostart").exists()
    assert not list(tmp_path.rglob("*.service"))

    done = volee("desktop-entry", "uninstall", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["removed"]) == sorted(written)
    assert not [p for p in (tmp_path / "share").rglob("*") if p.is_file()]
    again = volee("desktop-entry", "uninstall", env=env)
    assert again.returncode == 0
    assert "nothing to remove" in again.stdout


def test_desktop_entry_quotes_an_executable_path_with_spaces() -> None:
    from volee_desktop.app.desktopentry import entry_text

    text = entry_text("/home/a b/.local/bin/volee")
    assert 'Exec="/home/a b/.local/bin/volee"\n' in text
    assert "TryExec=/home/a b/.local/bin/volee\n" in text
    assert "Exec=volee\n" in entry_text(None)


def test_daemon_status_says_whether_notifications_can_be_shown() -> None:
    done = volee("daemon", "status", "--json")  # no daemon: status 3, still the whole answer
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["notifications"] == {"desktop": True, "problem": None}

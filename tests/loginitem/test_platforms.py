"""Choosing the login item, the null one, finding volee, and the fakes other tests use."""

from __future__ import annotations

import os
import plistlib
import sys
from pathlib import Path

import pytest

from tests.fakes.loginitem import FakeLoginItem, FakeRunKeyStore, FakeRunner
from volee_desktop.loginitem import (
    LaunchdAgent,
    LoginItemError,
    NullLoginItem,
    SystemdUserUnit,
    WindowsRunKey,
    find_volee_command,
    for_this_platform,
)
from volee_desktop.loginitem.base import FileSet, template_path
from volee_desktop.paths import dirs

from .support import snapshot


@pytest.mark.parametrize(
    ("platform", "kind"),
    [
        ("linux", SystemdUserUnit),
        ("darwin", LaunchdAgent),
        ("win32", WindowsRunKey),
        ("freebsd14", NullLoginItem),
    ],
)
def test_for_this_platform_picks_the_class(
    platform: str, kind: type, environ: dict[str, str]
) -> None:
    item = for_this_platform(
        command=["/opt/volee"],
        environ=environ,
        runner=FakeRunner(),
        run_keys=FakeRunKeyStore(),
        platform=platform,
        uid=501,
    )
    assert isinstance(item, kind)


def test_the_mac_logs_go_to_volees_log_folder(environ: dict[str, str]) -> None:
    item = for_this_platform(command=["/v"], environ=environ, platform="darwin", uid=1)
    assert isinstance(item, LaunchdAgent)
    plist = plistlib.loads(item.render())
    assert plist["StandardOutPath"].startswith(str(dirs(environ).logs))


def test_the_null_item_refuses_to_install_and_says_what_to_do() -> None:
    item = NullLoginItem("freebsd14")
    with pytest.raises(LoginItemError) as info:
        item.install()
    assert "freebsd14" in info.value.message
    assert "volee daemon run" in info.value.message
    item.uninstall()
    status = item.status()
    assert (status.installed, status.enabled) == (False, None)


def test_find_volee_command_prefers_the_script_next_to_python() -> None:
    (found,) = find_volee_command()
    assert Path(found).is_absolute()
    assert os.access(found, os.X_OK)
    beside = Path(sys.executable).parent / "volee"
    if beside.is_file():
        assert found == str(beside.absolute())


def test_find_volee_command_falls_back_to_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    exe = tmp_path / "bin" / "volee"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert find_volee_command({"PATH": str(exe.parent)}) == (str(exe),)
    with pytest.raises(LoginItemError, match="not found"):
        find_volee_command({"PATH": str(tmp_path / "empty")})


def test_templates_are_found_in_the_checkout() -> None:
    assert template_path("systemd", "volee.service.in").is_file()
    assert template_path("launchd", "com.volee.desktop.plist.in").is_file()
    with pytest.raises(LoginItemError, match="reinstall volee"):
        template_path("systemd", "nope.in")


def test_a_rolled_back_file_set_restores_files_and_removes_new_folders(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("old")
    before = snapshot(tmp_path)
    files = FileSet()
    files.write(tmp_path / "kept.txt", b"new")
    files.write(tmp_path / "a" / "b" / "new.txt", b"new")
    files.make_dir(tmp_path / "logs" / "deep")
    assert (tmp_path / "kept.txt").read_text() == "new"
    files.roll_back()
    assert snapshot(tmp_path) == before


def test_the_fake_login_item_for_the_tray() -> None:
    item = FakeLoginItem()
    item.install()
    assert item.status().installed is True
    item.uninstall()
    item.install_error = LoginItemError("t", "m")
    with pytest.raises(LoginItemError):
        item.install()
    assert item.calls == ["install", "uninstall", "install"]
    assert item.status().installed is False

"""The Windows Run key, against an in-memory registry."""

from __future__ import annotations

import pytest

from tests.fakes.loginitem import FakeRunKeyStore
from volee_desktop.loginitem import LoginItemError, WindowsRunKey
from volee_desktop.loginitem.system import RUN_KEY, STARTUP_APPROVED_KEY

EXE = r"C:\Program Files\volee\volee.exe"


def test_render_quotes_a_path_with_spaces() -> None:
    assert WindowsRunKey([EXE], FakeRunKeyStore()).render() == f'"{EXE}" app'


def test_install_status_uninstall() -> None:
    store = FakeRunKeyStore()
    store.values[(RUN_KEY, "other")] = "other.exe"
    item = WindowsRunKey([EXE], store)
    assert item.status().installed is False

    item.install()
    assert store.values == {(RUN_KEY, "other"): "other.exe", (RUN_KEY, "volee"): f'"{EXE}" app'}
    status = item.status()
    assert (status.installed, status.enabled) == (True, True)
    assert status.path == rf"HKEY_CURRENT_USER\{RUN_KEY}\volee"

    item.uninstall()
    assert store.values == {(RUN_KEY, "other"): "other.exe"}
    item.uninstall()  # already gone: fine


def test_switched_off_in_task_manager_reads_as_disabled() -> None:
    store = FakeRunKeyStore()
    item = WindowsRunKey([EXE], store)
    item.install()
    store.values[(STARTUP_APPROVED_KEY, "volee")] = bytes([3]) + bytes(11)
    status = item.status()
    assert (status.installed, status.enabled) == (True, False)
    assert "Task Manager" in status.detail
    store.values[(STARTUP_APPROVED_KEY, "volee")] = bytes([2]) + bytes(11)
    assert item.status().enabled is True


def test_a_value_from_another_volee_is_reported() -> None:
    store = FakeRunKeyStore()
    store.values[(RUN_KEY, "volee")] = r'"C:\old\volee.exe" app'
    assert "volee daemon install" in WindowsRunKey([EXE], store).status().detail


def test_a_refused_write_is_a_clear_error() -> None:
    store = FakeRunKeyStore()
    store.fail = PermissionError(5, "Access is denied")
    item = WindowsRunKey([EXE], store)
    with pytest.raises(LoginItemError, match="Access is denied") as info:
        item.install()
    assert info.value.title == "Could not make volee start at login"
    assert store.values == {}
    with pytest.raises(LoginItemError, match="regedit"):
        item.uninstall()

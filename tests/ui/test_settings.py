"""The settings dialog writes config.toml (keeping comments) and the login item only when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.loginitem import FakeLoginItem
from volee_desktop.app.settings import SettingsDialog, format_seconds, parse_delays
from volee_desktop.config import load_config
from volee_desktop.loginitem import LoginItemError


class Errors:
    def __init__(self) -> None:
        self.shown: list[tuple[str, str]] = []

    def __call__(self, title: str, message: str) -> None:
        self.shown.append((title, message))


def dialog(qtbot: Any, path: Path, login: FakeLoginItem | None = None) -> tuple[Any, Errors]:
    errors = Errors()
    item = login or FakeLoginItem()
    d = SettingsDialog(path, lambda: item, errors)
    qtbot.addWidget(d)
    return d, errors


def test_saves_only_changed_keys_and_keeps_comments(qtbot: Any, volee_home: Path) -> None:
    path = volee_home / "config.toml"
    path.write_text("# my settings\n[agents]\nresume_after_reboot = true  # ADR 0024\n")
    d, errors = dialog(qtbot, path)
    d.resume_after_reboot.setChecked(False)
    d.notify["needs_input"].setChecked(False)
    d.resume_max_age.setText("2h")
    d.restart_delays.setText("1, 10")
    assert d.save() is True
    assert errors.shown == []
    text = path.read_text()
    assert "# my settings" in text
    assert "# ADR 0024" in text
    config = load_config(path).config
    assert config.agents.resume_after_reboot is False
    assert config.notifications.needs_input is False
    assert config.agents.resume_max_age == 7200
    assert config.agents.restart_delays == (1.0, 10.0)
    assert "restart_on_crash" not in text  # untouched keys are not written


def test_a_bad_value_is_shown_with_a_title_and_nothing_is_saved(
    qtbot: Any, volee_home: Path
) -> None:
    path = volee_home / "config.toml"
    d, errors = dialog(qtbot, path)
    d.resume_max_age.setText("soon")
    assert d.save() is False
    [(title, message)] = errors.shown
    assert title == "Could not save a setting"
    assert "agents.resume_max_age" in message
    assert not path.exists()


def test_start_at_login_installs_and_removes_only_when_ticked(qtbot: Any, volee_home: Path) -> None:
    path = volee_home / "config.toml"
    login = FakeLoginItem()
    d, _ = dialog(qtbot, path, login)
    assert d.start_at_login.isChecked() is False
    d.notify["failed"].setChecked(False)
    assert d.save()
    assert login.calls == []  # saving other settings never touches the login item
    d, _ = dialog(qtbot, path, login)
    d.start_at_login.setChecked(True)
    assert d.save()
    assert login.calls == ["install"]
    d, _ = dialog(qtbot, path, login)
    assert d.start_at_login.isChecked() is True
    d.start_at_login.setChecked(False)
    assert d.save()
    assert login.calls == ["install", "uninstall"]


def test_login_item_failure_is_shown_with_its_title(qtbot: Any, volee_home: Path) -> None:
    login = FakeLoginItem(install_error=LoginItemError("volee was not found", "Install it."))
    d, errors = dialog(qtbot, volee_home / "config.toml", login)
    d.start_at_login.setChecked(True)
    assert d.save() is False
    assert errors.shown == [("volee was not found", "Install it.")]


def test_config_problems_are_shown(qtbot: Any, volee_home: Path) -> None:
    path = volee_home / "config.toml"
    path.write_text("[notifications]\nneeds_imput = false\n")
    d, _ = dialog(qtbot, path)
    assert not d.problems.isHidden()
    assert "needs_input" in d.problems.text()  # the typo help


def test_saved_notification_settings_reach_the_notifier(
    controller: Any, qtbot: Any, volee_home: Path
) -> None:
    d = controller.open_settings()
    d.notify["lost"].setChecked(False)
    assert d.save()
    assert controller.notifications.settings.lost is False


def test_the_context_limit_is_saved_as_a_share_and_reaches_the_list(
    controller: Any, qtbot: Any, volee_home: Path
) -> None:
    d = controller.open_settings()
    assert d.context_limit.value() == 85
    d.context_limit.setValue(70)
    assert d.save()
    assert "context_limit = 0.7" in controller.options.config_path.read_text()
    assert controller.panel.delegate.context_limit == 0.7


def test_value_helpers() -> None:
    assert format_seconds(21600) == "6h"
    assert format_seconds(90) == "90s"
    assert format_seconds(120) == "2m"
    assert parse_delays("1, 5 15") == [1, 5, 15]
    assert parse_delays("0.5") == [0.5]

"""No real notification backend (macOS outside a bundle): volee says so and uses the tray's own
messages, instead of handing notifications to desktop-notifier's dummy that drops them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QSystemTrayIcon

from volee_desktop import notifycheck
from volee_desktop.app.notifier import BalloonSink, DesktopSink, default_sinks
from volee_desktop.app.settings import SettingsDialog


def test_a_dummy_backend_on_macos_is_a_problem_with_its_reason() -> None:
    why = notifycheck.problem(lambda: notifycheck.DUMMY, "darwin")
    assert why is not None
    assert "bundle" in why
    assert "installers/macos" in why
    assert notifycheck.problem(lambda: "DBusDesktopNotifier", "linux") is None
    assert "no notification backend" in str(
        notifycheck.problem(lambda: notifycheck.DUMMY, "sunos5")
    )

    def broken() -> str:
        raise OSError("no session bus")

    assert "no session bus" in str(notifycheck.problem(broken, "linux"))


def test_this_linux_machine_has_a_real_backend() -> None:
    assert notifycheck.problem() is None


def test_without_a_real_backend_only_the_tray_balloon_is_used(qapp: Any) -> None:
    tray = QSystemTrayIcon()
    sinks = default_sinks(tray, None, problem=lambda: "macOS outside a bundle")
    assert [type(s) for s in sinks] == [BalloonSink]
    sinks = default_sinks(tray, None, problem=lambda: None)
    assert [type(s) for s in sinks] == [DesktopSink, BalloonSink]


def test_the_settings_say_why_notifications_cannot_be_shown(qtbot: Any, tmp_path: Path) -> None:
    dialog = SettingsDialog(
        tmp_path / "config.toml", notifications_problem=lambda: "macOS outside a bundle"
    )
    qtbot.addWidget(dialog)
    assert not dialog.notifications_problem.isHidden()
    assert "cannot be shown here: macOS outside a bundle" in dialog.notifications_problem.text()
    fine = SettingsDialog(tmp_path / "config.toml", notifications_problem=lambda: None)
    qtbot.addWidget(fine)
    assert fine.notifications_problem.isHidden()

"""The settings dialog writes config.toml (keeping comments) and the login item only when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QGroupBox, QScrollArea

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


def test_the_github_token_goes_into_the_keyring_and_test_asks_github(
    qtbot: Any, volee_home: Path, memory_keyring: Any, monkeypatch: Any
) -> None:
    from tests.fakes.fake_github import FakeGitHub
    from volee_desktop.daemon.forge import KEYRING_SERVICE, KEYRING_USER

    path = volee_home / "config.toml"
    d, _errors = dialog(qtbot, path)
    box = d.github
    assert box.token.echoMode() == box.token.EchoMode.Password
    assert "none in the keyring" in box.status.text()
    box.store.click()
    assert box.status.text().startswith("Type a token first")
    box.token.setText("ghp_test")
    box.store.click()
    assert memory_keyring.passwords[(KEYRING_SERVICE, KEYRING_USER)] == "ghp_test"
    assert box.token.text() == ""  # not left on screen
    assert "Stored in the keyring (MemoryKeyring)" in box.status.text()
    assert not path.exists() or "ghp_test" not in path.read_text()  # never in config.toml
    github = FakeGitHub(token="ghp_test").start()
    try:
        monkeypatch.setenv("VOLEE_GITHUB_API", github.url)
        box.test.click()  # the stored token
        qtbot.waitUntil(lambda: "@volee-tester" in box.status.text(), timeout=10_000)
        box.token.setText("ghp_wrong")
        box.test.click()
        qtbot.waitUntil(lambda: "GitHub refused it" in box.status.text(), timeout=10_000)
        assert "401" in box.status.text()
    finally:
        github.close()


def test_the_harnesses_say_which_program_runs_and_the_permission_mode_is_saved(
    qtbot: Any, volee_home: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    fake = tmp_path / "my-claude"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(fake))
    monkeypatch.setenv("VOLEE_PI_BIN", str(tmp_path / "no-such-pi"))
    path = volee_home / "config.toml"
    d, errors = dialog(qtbot, path)
    assert d.harnesses.binaries["claude"].text() == f"{fake} (VOLEE_CLAUDE_BIN)"
    assert d.harnesses.binaries["pi"].text().startswith("not found: pi executable")
    assert d.harnesses.permission_mode.currentText() == "acceptEdits"
    d.harnesses.permission_mode.setCurrentText("plan")
    assert d.save() is True
    assert errors.shown == []
    assert load_config(path).config.claude.permission_mode == "plan"


def test_each_harness_default_model_is_shown_saved_and_a_bad_one_refused_inline(
    qtbot: Any, volee_home: Path
) -> None:
    path = volee_home / "config.toml"
    path.write_text('[codex]\nmodel = "gpt-5"\n', encoding="utf-8")
    d, errors = dialog(qtbot, path)
    box = d.harnesses
    save = d.buttons.button(d.buttons.StandardButton.Save)
    assert box.models["codex"].text() == "gpt-5"
    assert box.models["claude"].text() == ""
    assert box.models["claude"].placeholderText() == "Claude Code's own default"
    box.models["pi"].setText("--dangerously-skip-permissions")
    problem = box.model_problems["pi"]
    assert not problem.isHidden()
    assert "not starting with -" in problem.text()
    assert not save.isEnabled()  # never saved while refused
    box.models["pi"].setText("anthropic/claude-sonnet-4")
    assert problem.isHidden()
    assert save.isEnabled()
    box.models["claude"].setText("opus")
    box.models["codex"].setText("")  # back to codex's own
    assert d.save() is True
    assert errors.shown == []
    config = load_config(path).config
    assert (config.claude.model, config.codex.model, config.pi.model) == (
        "opus",
        None,
        "anthropic/claude-sonnet-4",
    )


def test_the_default_harness_is_shown_and_saved(qtbot: Any, volee_home: Path) -> None:
    path = volee_home / "config.toml"
    d, errors = dialog(qtbot, path)
    choice = d.harnesses.default_harness
    assert choice.currentData() == "claude"
    assert [choice.itemText(i) for i in range(choice.count())] == ["Claude Code", "codex", "pi"]
    choice.setCurrentIndex(choice.findData("pi"))
    assert d.save() is True
    assert errors.shown == []
    assert load_config(path).config.agents.harness == "pi"


def test_settings_fit_the_screen_and_scroll_rather_than_squeeze_their_rows(
    qtbot: Any, volee_home: Path
) -> None:
    # The trial of issue 26 (docs/trials/issue-26.md): on a 1280x800 desktop the dialog was
    # taller than the screen, the window manager squeezed it, the harnesses' lines were cut
    # through the middle and Save / Cancel were below the screen.
    d, _errors = dialog(qtbot, volee_home / "config.toml")
    d.show()
    screen = d.screen().availableGeometry()
    assert d.height() <= screen.height()
    assert d.sizeHint().height() <= screen.height()
    assert d.buttons.isVisible()
    content = d.findChild(QScrollArea, "settingsScroll")
    assert content is not None
    assert content.widget().findChild(QGroupBox, "harnesses") is d.harnesses

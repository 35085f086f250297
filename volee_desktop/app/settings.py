"""The settings dialog: ``config.toml``'s agents and notifications keys, and "Start at login".

Saving writes only the keys the person changed, one by one through
``volee_desktop.config.save_setting`` (comments and order kept).  "Start at
login" installs or removes the login item only when the person changes the
tick.  Every failure is shown with a title and a message; the dialog stays open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from volee_desktop.loginitem.base import LoginItem

log = logging.getLogger(__name__)

ErrorSink = Callable[[str, str], None]  # (title, message)
LoginItemFactory = Callable[[], "LoginItem"]

NOTIFICATION_KEYS = (
    ("needs_input", "An agent needs my input"),
    ("failed", "An agent failed"),
    ("lost", "An agent was lost"),
    ("interrupted", "Interrupted agents were not resumed"),
    ("mission", "A mission waits for my approval"),
    ("done", "An agent finished its turn (with its last message)"),
)


def format_seconds(seconds: float) -> str:
    """``21600`` -> ``"6h"``; the inverse of config.parse_duration for round values."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def parse_delays(text: str) -> list[float | int]:
    """``"1, 5, 15"`` -> ``[1, 5, 15]``; ValueError names what is wrong."""
    out: list[float | int] = []
    for word in text.replace(",", " ").split():
        try:
            value = float(word)
        except ValueError:
            raise ValueError(
                f"restart delays: {word!r} is not a number of seconds; write e.g. 1, 5, 15"
            ) from None
        out.append(int(value) if value.is_integer() else value)
    return out


def _show_error(parent: QWidget | None) -> ErrorSink:
    def show(title: str, message: str) -> None:
        QMessageBox.warning(parent, title, message)

    return show


class SettingsDialog(QDialog):
    """Edits config.toml (agents, notifications) and the login item."""

    saved = Signal()

    def __init__(
        self,
        config_path: Path,
        login_item: LoginItemFactory | None = None,
        show_error: ErrorSink | None = None,
        parent: QWidget | None = None,
        notifications_problem: Callable[[], str | None] | None = None,
    ) -> None:
        super().__init__(parent)
        from volee_desktop import notifycheck
        from volee_desktop.config import harness_model, load_config

        self.setObjectName("settings")
        self.setWindowTitle("Settings — volee")
        self.config_path = config_path
        self._login_factory = login_item
        self._login: LoginItem | None = None
        self.show_error = show_error or _show_error(self)
        loaded = load_config(config_path)
        config = loaded.config
        self.problems = QLabel("\n".join(loaded.problems), self)
        self.problems.setObjectName("problems")
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("color: #e03131;")
        self.problems.setVisible(bool(loaded.problems))

        agents = QGroupBox("Agents", self)
        form = QFormLayout(agents)
        self.resume_after_reboot = QCheckBox("Resume agents interrupted by a reboot", agents)
        self.resume_after_reboot.setChecked(config.agents.resume_after_reboot)
        self.restart_on_crash = QCheckBox("Restart an agent whose program crashed", agents)
        self.restart_on_crash.setChecked(config.agents.restart_on_crash)
        self.restart_delays = QLineEdit(
            ", ".join(f"{d:g}" for d in config.agents.restart_delays), agents
        )
        self.restart_delays.setToolTip(
            "Seconds before each automatic restart; their number is the budget"
        )
        self.resume_max_age = QLineEdit(format_seconds(config.agents.resume_max_age), agents)
        self.resume_max_age.setToolTip('No automatic resume of work older than this ("6h", "90m")')
        self.resume_cap = QSpinBox(agents)
        self.resume_cap.setRange(0, 1000)
        self.resume_cap.setValue(config.agents.resume_cap_per_start)
        form.addRow(self.resume_after_reboot)
        form.addRow(self.restart_on_crash)
        form.addRow("Restart delays (s):", self.restart_delays)
        form.addRow("Resume work at most this old:", self.resume_max_age)
        form.addRow("At most this many resumes per start:", self.resume_cap)
        self.context_limit = QSpinBox(agents)
        self.context_limit.setObjectName("contextLimit")
        self.context_limit.setRange(5, 100)
        self.context_limit.setSuffix(" %")
        self.context_limit.setValue(round(config.agents.context_limit * 100))
        self.context_limit.setToolTip(
            "The list marks an agent whose conversation uses this share of its context window"
        )
        form.addRow("Mark an agent near its context limit from:", self.context_limit)

        notes = QGroupBox("Notify me when", self)
        notes_layout = QVBoxLayout(notes)
        self.notify: dict[str, QCheckBox] = {}
        for key, text in NOTIFICATION_KEYS:
            box = QCheckBox(text, notes)
            box.setObjectName(f"notify-{key}")
            box.setChecked(bool(getattr(config.notifications, key)))
            notes_layout.addWidget(box)
            self.notify[key] = box
        why = (notifications_problem or notifycheck.problem)()
        self.notifications_problem = QLabel(
            f"Notifications cannot be shown here: {why}." if why else "", notes
        )
        self.notifications_problem.setObjectName("notificationsProblem")
        self.notifications_problem.setWordWrap(True)
        self.notifications_problem.setVisible(why is not None)
        notes_layout.addWidget(self.notifications_problem)

        start = QGroupBox("Start", self)
        start_layout = QVBoxLayout(start)
        self.start_at_login = QCheckBox("Start volee at login", start)
        self.start_at_login.setObjectName("startAtLogin")
        self.login_detail = QLabel(start)
        self.login_detail.setWordWrap(True)
        start_layout.addWidget(self.start_at_login)
        start_layout.addWidget(self.login_detail)
        self._login_was = self._read_login_status()
        self.start_at_login.setChecked(bool(self._login_was))

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        # Everything but Save / Cancel scrolls: taller than a 800-pixel screen, the dialog was
        # squeezed by the window manager (rows cut through) with its buttons off the screen.
        content = QWidget(self)
        layout = QVBoxLayout(content)
        layout.addWidget(self.problems)
        layout.addWidget(agents)
        layout.addWidget(notes)
        layout.addWidget(start)
        from .harness_box import HarnessBox
        from .token_box import GitHubTokenBox

        models = {h: harness_model(config, h) for h in ("claude", "codex", "pi")}
        self.harnesses = HarnessBox(
            config.claude.permission_mode,
            self,
            models=models,
            default_harness=config.agents.harness,
        )
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.harnesses.valid.connect(save.setEnabled)  # a refused model is never saved
        layout.addWidget(self.harnesses)

        self.github = GitHubTokenBox(self)  # the keyring, not config.toml: outside Save
        layout.addWidget(self.github)
        layout.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setObjectName("settingsScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.addWidget(scroll)
        outer.addWidget(self.buttons)
        self._fit(content)
        self._initial = self.values()

    def _fit(self, content: QWidget) -> None:
        """As tall as its content, at most the screen's free height (the rest scrolls)."""
        screen = self.screen().availableGeometry()
        bar = self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        want = content.sizeHint()
        height = want.height() + self.buttons.sizeHint().height() + 40
        self.resize(want.width() + bar + 30, min(height, screen.height() - 60))

    # --- the login item ------

    def _read_login_status(self) -> bool | None:
        if self._login_factory is None:
            self.start_at_login.setEnabled(False)
            self.login_detail.setText("Login items are not available here.")
            return None
        try:
            self._login = self._login_factory()
            status = self._login.status()
        except Exception as exc:
            title = getattr(exc, "title", "Cannot read the login item")
            message = getattr(exc, "message", str(exc))
            self.start_at_login.setEnabled(False)
            self.login_detail.setText(f"{title}: {message}")
            return None
        self.login_detail.setText(
            f"{status.detail} ({status.path})" if status.path else status.detail
        )
        return bool(status.installed)

    # --- values ------

    def values(self) -> dict[str, Any]:
        """The settings as shown, keyed ``section.key`` (raw text where the person types)."""
        out: dict[str, Any] = {
            "agents.resume_after_reboot": self.resume_after_reboot.isChecked(),
            "agents.restart_on_crash": self.restart_on_crash.isChecked(),
            "agents.restart_delays": self.restart_delays.text().strip(),
            "agents.resume_max_age": self.resume_max_age.text().strip(),
            "agents.resume_cap_per_start": self.resume_cap.value(),
            "agents.context_limit": self.context_limit.value(),
        }
        for key, box in self.notify.items():
            out[f"notifications.{key}"] = box.isChecked()
        if hasattr(self, "harnesses"):
            out["claude.permission_mode"] = self.harnesses.permission_mode.currentText()
            out["agents.harness"] = str(self.harnesses.default_harness.currentData())
            for harness, model in self.harnesses.models.items():
                out[f"{harness}.model"] = model.text().strip()
        return out

    def changed(self) -> dict[str, Any]:
        now = self.values()
        return {k: v for k, v in now.items() if v != self._initial.get(k)}

    def save(self) -> bool:
        """Write the changed keys and the login item; False (and an error shown) on failure."""
        from volee_desktop.config import ConfigError, save_setting

        for key, raw in self.changed().items():
            value: Any = raw
            try:
                if key == "agents.restart_delays":
                    value = parse_delays(raw)
                elif key == "agents.resume_max_age":
                    value = _number_or_text(raw)
                elif key == "agents.context_limit":
                    value = raw / 100  # stored as a share: 0.85
                save_setting(self.config_path, key, value)
            except (ConfigError, ValueError) as exc:
                self.show_error("Could not save a setting", str(exc))
                return False
            self._initial[key] = raw
            log.info("setting %s saved", key)
        wanted = self.start_at_login.isChecked()
        if self.start_at_login.isEnabled() and wanted != bool(self._login_was):
            try:
                if self._login is None:
                    raise RuntimeError("the login item was not read")
                if wanted:
                    self._login.install()
                else:
                    self._login.uninstall()
            except Exception as exc:
                title = getattr(exc, "title", "Could not change the login item")
                message = getattr(exc, "message", str(exc))
                self.show_error(title, message)
                return False
            self._login_was = wanted
            log.info("login item %s", "installed" if wanted else "removed")
        self.saved.emit()
        self.accept()
        return True


def _number_or_text(text: str) -> float | int | str:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value

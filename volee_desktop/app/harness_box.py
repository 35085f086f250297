"""Settings' harnesses: which program each one runs (as the daemon finds it), the model each
starts with when `volee spawn` is given no ``--model`` (``[claude|codex|pi] model``, refused
inline as ``volee spawn --model`` refuses it) and Claude Code's permission mode
(``[claude] permission_mode``, validated as config.toml is)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QLineEdit, QWidget

from volee_desktop.config import PERMISSION_MODES, model_problem
from volee_desktop.harness.versions import BinaryMissing, locate

#: (harness, its name in words, its default executable)
HARNESSES: tuple[tuple[str, str, str], ...] = (
    ("claude", "Claude Code", "claude"),
    ("codex", "codex", "codex"),
    ("pi", "pi", "pi"),
)


def binary_words(harness: str, default: str, env: Mapping[str, str]) -> str:
    """Which program volee runs for ``harness`` ("/usr/bin/claude (VOLEE_CLAUDE_BIN)"), or
    why none (the same words `volee spawn` refuses with)."""
    var = f"VOLEE_{harness.upper()}_BIN"
    chosen = env.get(var) or default
    try:
        path = locate(harness, chosen, env)
    except BinaryMissing as exc:
        return f"not found: {exc}"
    return f"{path} ({var})" if env.get(var) else path


class HarnessBox(QGroupBox):
    """The harnesses' programs (read-only: the environment chooses them), the default harness,
    their default models and Claude Code's permission mode."""

    #: Whether every model typed is one a harness can be started with (Save follows it).
    valid = Signal(bool)

    def __init__(
        self,
        permission_mode: str,
        parent: QWidget | None = None,
        env: Mapping[str, str] | None = None,
        models: Mapping[str, str | None] | None = None,
        default_harness: str = "claude",
    ) -> None:
        super().__init__("Harnesses", parent)
        self.setObjectName("harnesses")
        form = QFormLayout(self)
        environ = os.environ if env is None else env
        self.binaries: dict[str, QLabel] = {}
        for harness, words, default in HARNESSES:
            where = QLabel(binary_words(harness, default, environ), self)
            where.setObjectName(f"binary-{harness}")
            where.setWordWrap(True)
            where.setToolTip(
                f"Set VOLEE_{harness.upper()}_BIN in the daemon's environment to choose another"
            )
            form.addRow(f"{words}:", where)
            self.binaries[harness] = where
        self.default_harness = QComboBox(self)
        self.default_harness.setObjectName("defaultHarness")
        for name, words, _default in HARNESSES:
            self.default_harness.addItem(words, name)
        chosen = self.default_harness.findData(default_harness)
        self.default_harness.setCurrentIndex(max(0, chosen))
        self.default_harness.setToolTip(
            "What `volee spawn` runs when given no --harness (`[agents] harness`)"
        )
        form.addRow("Default harness:", self.default_harness)
        self.models: dict[str, QLineEdit] = {}
        self.model_problems: dict[str, QLabel] = {}
        for harness, words, _default in HARNESSES:
            model = QLineEdit((models or {}).get(harness) or "", self)
            model.setObjectName(f"model-{harness}")
            model.setPlaceholderText(f"{words}'s own default")
            model.setToolTip(
                f"The model {words} agents start with when `volee spawn` is given no --model "
                f"(`[{harness}] model`; empty: {words}'s own)"
            )
            problem = QLabel(self)
            problem.setObjectName(f"model-problem-{harness}")
            problem.setWordWrap(True)
            problem.setStyleSheet("color: #e03131")
            problem.hide()
            model.textChanged.connect(lambda _text, h=harness: self._check_model(h))
            form.addRow(f"{words}'s model:", model)
            form.addRow("", problem)
            self.models[harness] = model
            self.model_problems[harness] = problem
        self.permission_mode = QComboBox(self)
        self.permission_mode.setObjectName("permissionMode")
        self.permission_mode.addItems(list(PERMISSION_MODES))
        self.permission_mode.setCurrentText(permission_mode)
        self.permission_mode.setToolTip(
            "The permission mode volee starts Claude Code agents in (`[claude] permission_mode`)"
        )
        form.addRow("Claude Code's permission mode:", self.permission_mode)

    def model_refusal(self, harness: str) -> str | None:
        """Why the model typed for ``harness`` would be refused (None: fine, or empty)."""
        text = self.models[harness].text().strip()
        return model_problem(text, harness) if text else None

    def _check_model(self, harness: str) -> None:
        why = self.model_refusal(harness)
        label = self.model_problems[harness]
        label.setText(f"Not a model volee can start {harness} with: {why}" if why else "")
        label.setVisible(why is not None)
        self.valid.emit(all(self.model_refusal(h) is None for h in self.models))

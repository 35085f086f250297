"""New agent…: one dialog that starts an agent the way ``volee spawn`` does (``agents.spawn``).

The project (the folders volee has seen, most recent first, or one picked), the machine when
``[machines]`` are configured, the harness (those the daemon finds installed, with their
versions: ``agents.harnesses``), its model and permission mode (only those it accepts), a new
worktree and its branch, the name and the task.  What the daemon refuses is said in the
dialog, which stays open with everything typed.  The harness, mode and worktree choice are
remembered per project (``new_agent.json`` in the state folder).  Docs: docs/list.md.
This module loads when the dialog first opens; what opens it is ``new_agent_flow.NewAgent``.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.core.registry import Registry
from volee_desktop.harness.choices import NO_MODES

from .harness_box import HARNESSES
from .new_agent_templates import Templates

log = logging.getLogger(__name__)

#: The harnesses in the order offered, with their names in words.
WORDS: dict[str, str] = {h: w for h, w, _ in HARNESSES} | {"generic": "a command (generic)"}
THIS_MACHINE = "this machine"
PROJECTS_SHOWN = 30


def seen_projects(
    registry: Registry,
    limit: int = PROJECTS_SHOWN,
    machine: str | None = None,
    machine_of: Callable[[str], str | None] = lambda _agent: None,
) -> list[str]:
    """The folders the agents of ``machine`` (None: this one; ``machine_of`` says an agent's)
    worked in (a worktree's repository, not the worktree), the most recently started first,
    each once: a folder of this machine means nothing on devbox."""
    out: dict[str, None] = {}
    agents = sorted(registry.agents.values(), key=lambda a: a.created_at, reverse=True)
    for agent in agents:
        folder = agent.repo or agent.cwd
        mine = machine_of(agent.id) == machine
        if folder and mine and ":" not in agent.id and folder not in out:
            out[folder] = None
    return list(out)[:limit]


def git_refusal(folder: str) -> str | None:
    """Why a new worktree cannot be made in ``folder`` (not in a git repository), else None.
    The daemon checks it again (``git rev-parse``); this only says it before OK."""
    path = Path(folder).expanduser()
    for each in (path, *path.parents):
        if (each / ".git").exists():
            return None
    return f"{folder} is not in a git repository: a new worktree needs one"


def slug(text: str, limit: int = 24) -> str:
    """A branch's name from a task: its first words joined by dashes, cut between words
    (daemon/spawn.py's ``slug`` cuts the agent's name anywhere)."""
    out = ""
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        longer = f"{out}-{word}" if out else word
        if len(longer) > limit:
            return out or longer[:limit]
        out = longer
    return out or "agent"


class NewAgentDialog(QDialog):
    """The form; ``submitted`` carries the ``agents.spawn`` parameters."""

    submitted = Signal(dict)

    def __init__(
        self,
        projects: list[str],
        templates: Templates,
        machines: list[str] | None = None,
        env: Mapping[str, str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("newAgent")
        self.setWindowTitle("New agent — volee")
        self.templates = templates
        self.env = env
        self.harnesses: dict[str, dict[str, Any]] = {}  # installed: offered
        self.known: dict[str, dict[str, Any]] = {}  # every answer, with the problems
        self.asked: list[str] = []  # the harnesses asked of the daemon
        self.unreachable = ""  # why the daemon could not say (then every harness is offered)
        self._harness_chosen = False  # the person picked one: an answer never changes it
        self._branch_edited = False

        self.project = QComboBox(self)
        self.project.setObjectName("project")
        self.project.setEditable(True)
        self.project.addItems(projects)
        self.project.setMinimumWidth(360)
        line = self.project.lineEdit()
        if line is not None:
            line.setPlaceholderText("the folder it works in")
            line.setAccessibleName("Project folder")
        pick = QPushButton("Choose…", self)
        pick.setObjectName("chooseFolder")
        pick.setAutoDefault(False)
        pick.clicked.connect(self.choose_folder)
        where = QHBoxLayout()
        where.addWidget(self.project, 1)
        where.addWidget(pick)

        self.machine = QComboBox(self)
        self.machine.setObjectName("machine")
        self.machine.addItems([THIS_MACHINE, *(machines or [])])

        self.harness = QComboBox(self)
        self.harness.setObjectName("harness")
        self.missing = QLabel("Looking for the harnesses…", self)
        self.missing.setObjectName("missing")
        self.missing.setWordWrap(True)
        self.model = QLineEdit(self)
        self.model.setObjectName("model")
        self.model.setPlaceholderText("the harness's default")
        self.mode = QComboBox(self)
        self.mode.setObjectName("mode")
        self.worktree = QCheckBox("In a new worktree, on its own branch", self)
        self.worktree.setObjectName("worktree")
        self.branch = QLineEdit(self)
        self.branch.setObjectName("branch")
        self.branch.textEdited.connect(self._branch_typed)
        self.name = QLineEdit(self)
        self.name.setObjectName("name")
        self.name.setPlaceholderText("from the task")
        self.task = QPlainTextEdit(self)
        self.task.setObjectName("task")
        self.task.setPlaceholderText("What it should do")
        self.task.setTabChangesFocus(True)
        self.refusal = QLabel(self)
        self.refusal.setObjectName("refusal")
        self.refusal.setWordWrap(True)
        self.refusal.setTextFormat(Qt.TextFormat.PlainText)
        self.refusal.setStyleSheet("color: #c62828")
        self.refusal.hide()

        form = QFormLayout()
        form.addRow("Project:", where)
        if machines:
            form.addRow("Machine:", self.machine)
        else:
            self.machine.hide()  # no other machine: this one, and nothing to choose
        form.addRow("Harness:", self.harness)
        form.addRow("", self.missing)
        form.addRow("Model:", self.model)
        form.addRow("Permission mode:", self.mode)
        form.addRow("", self.worktree)
        form.addRow("Branch:", self.branch)
        form.addRow("Name:", self.name)
        form.addRow("Task:", self.task)

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("Start")
        self.ok.setObjectName("start")
        self.ok.setEnabled(False)  # until the daemon said which harnesses there are
        self.buttons.accepted.connect(self.submit)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.refusal)
        layout.addWidget(self.buttons)

        self.project.currentTextChanged.connect(self._project_changed)
        self.machine.currentTextChanged.connect(lambda _: self._check())
        self.harness.currentIndexChanged.connect(lambda _: self._harness_changed())
        self.harness.activated.connect(lambda _: setattr(self, "_harness_chosen", True))
        self.worktree.toggled.connect(lambda _: self._check())
        self.name.textChanged.connect(lambda _: self._default_branch())
        self.task.textChanged.connect(self._default_branch)
        self._default_branch()
        self._project_changed(self.project.currentText())

    # --- what the daemon says ---

    def set_harnesses(self, harnesses: list[dict[str, Any]]) -> None:
        """What the daemon said of some harnesses (``agents.harnesses``; each one answers on
        its own, pi's ``--version`` takes seconds): offer the installed ones, in volee's order,
        say why not the rest."""
        for h in harnesses:
            self.known[str(h.get("harness"))] = h
        order = {name: i for i, name in enumerate(WORDS)}
        known = sorted(self.known.values(), key=lambda h: order.get(str(h.get("harness")), 99))
        self.harnesses = {str(h.get("harness")): h for h in known if not h.get("problem")}
        chosen = self.chosen_harness()
        self.harness.blockSignals(True)
        self.harness.clear()
        for name, h in self.harnesses.items():
            version = f" {h['version']}" if h.get("version") else ""
            self.harness.addItem(f"{WORDS.get(name, name)}{version}", name)
            if h.get("path"):
                self.harness.setItemData(
                    self.harness.count() - 1, h["path"], Qt.ItemDataRole.ToolTipRole
                )
        self.harness.blockSignals(False)
        lines = [f"Not offered: {h['problem']}" for h in known if h.get("problem")]
        if self.unreachable:
            lines.insert(0, self.unreachable)
        waiting = [WORDS.get(n, n) for n in self.asked if n not in self.known]
        if waiting:
            lines.append(f"Looking for {', '.join(waiting)}…")
        self.missing.setText("\n".join(lines))
        self.missing.setVisible(bool(lines))
        self.ok.setEnabled(self.harness.count() > 0)
        template = self.templates.get(self.folder())
        wanted = template.harness if template else None
        if not self._harness_chosen and wanted in self.harnesses:
            chosen = wanted
        self._choose_harness(chosen)
        self._apply_template()

    def set_projects(self, projects: list[str]) -> None:
        """The folders offered (another machine chosen: that machine's), the first chosen."""
        self.project.clear()
        self.project.addItems(projects)
        self.project.setCurrentText(projects[0] if projects else "")

    def forget_harnesses(self) -> None:
        """Another machine chosen: what the last one said of its harnesses is not this one's."""
        self.known.clear()
        self.asked = []
        self.unreachable = ""
        self.harnesses = {}
        self.harness.clear()
        self.missing.setText(f"Looking for the harnesses on {self.remote() or THIS_MACHINE}…")
        self.missing.setVisible(True)
        self.ok.setEnabled(False)

    def set_unreachable(self, why: str) -> None:
        self.unreachable = f"The daemon did not say which harnesses are installed: {why}"
        log.warning("%s", self.unreachable)

    def show_refusal(self, text: str) -> None:
        """What stops the start, in the dialog (never a second window); everything stays."""
        self.refusal.setText(text)
        self.refusal.setVisible(bool(text))
        self.ok.setEnabled(self.harness.count() > 0)

    # --- the form ---

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "The folder it works in", self.folder())
        if folder:
            self.project.setCurrentText(folder)

    def folder(self) -> str:
        return self.project.currentText().strip()

    def remote(self) -> str | None:
        text = self.machine.currentText()
        return None if text == THIS_MACHINE else text

    def chosen_harness(self) -> str | None:
        data = self.harness.currentData()
        return data if isinstance(data, str) else None

    def _choose_harness(self, harness: str | None) -> None:
        index = self.harness.findData(harness) if harness else -1
        self.harness.setCurrentIndex(index if index >= 0 else min(0, self.harness.count() - 1))
        self._harness_changed()

    def _project_changed(self, _text: str) -> None:
        template = self.templates.get(self.folder())
        if template is not None:
            self._choose_harness(template.harness)
            self.worktree.setChecked(template.worktree)
            self._apply_template()
        self._check()

    def _apply_template(self) -> None:
        template = self.templates.get(self.folder())
        if template is not None and template.harness == self.chosen_harness() and template.mode:
            index = self.mode.findText(template.mode)
            if index >= 0:
                self.mode.setCurrentIndex(index)

    def _harness_changed(self) -> None:
        harness = self.chosen_harness()
        info = self.harnesses.get(harness or "", {})
        modes = [str(m) for m in info.get("modes") or []]
        self.mode.clear()
        self.mode.addItems(modes)
        self.mode.setEnabled(bool(modes))
        self.mode.setToolTip(NO_MODES.get(harness or "", "") if not modes else "")
        self.mode.setPlaceholderText(NO_MODES.get(harness or "", "none"))
        default = info.get("default_mode")
        if isinstance(default, str) and default in modes:
            self.mode.setCurrentText(default)
        self.model.setEnabled(harness != "generic")
        self.task.setPlaceholderText(
            "The command to run, e.g. make test" if harness == "generic" else "What it should do"
        )
        self._check()

    def _branch_typed(self, _text: str) -> None:
        self._branch_edited = True

    def _default_branch(self) -> None:
        if not self._branch_edited:
            words = self.name.text().strip() or self.task.toPlainText().strip()
            self.branch.setText(f"volee/{slug(words)}" if words else "")
        self.branch.setPlaceholderText("volee/<name>")

    def _check(self) -> str | None:
        """The first reason the start would be refused that can be told here, shown inline."""
        self.branch.setEnabled(self.worktree.isChecked())
        why = self._refusal()
        self.show_refusal(why or "")
        return why

    def _refusal(self) -> str | None:
        folder = self.folder()
        if not folder:
            return "Choose the folder it works in."
        if self.remote() is not None:
            return (
                None
                if folder.startswith("/")
                else f"name the folder on {self.remote()}: /path/there"
            )
        if not Path(folder).expanduser().is_dir():
            return f"{folder} is not a folder here."
        if self.worktree.isChecked():
            return git_refusal(folder)
        return None

    def params(self) -> dict[str, Any] | None:
        """The ``agents.spawn`` parameters, or None (the reason is shown)."""
        if self._check() is not None:
            return None
        harness = self.chosen_harness()
        if harness is None:
            self.show_refusal("No harness is installed that volee can start.")
            return None
        task = self.task.toPlainText().strip()
        argv: list[str] = []
        prompt: str | None = task or None
        if harness == "generic":
            try:
                argv = shlex.split(task)
            except ValueError as exc:
                self.show_refusal(f"the command cannot be read: {exc}")
                return None
            if not argv:
                self.show_refusal("the generic harness needs a command: write it as the task")
                return None
            prompt = None
        machine = self.remote()
        folder = self.folder()
        cwd = folder if machine else str(Path(folder).expanduser().absolute())
        worktree = self.worktree.isChecked()
        return {
            "harness": harness,
            "prompt": prompt,
            "argv": argv,
            "name": self.name.text().strip() or None,
            "cwd": cwd,
            "worktree": worktree,
            "branch": (self.branch.text().strip() or None) if worktree else None,
            "model": (self.model.text().strip() or None) if harness != "generic" else None,
            "permission_mode": (self.mode.currentText() or None) if self.mode.isEnabled() else None,
            "env": None if machine or self.env is None else dict(self.env),
            "machine": machine,
        }

    def submit(self) -> None:
        params = self.params()
        if params is None:
            return
        self.ok.setEnabled(False)
        self.refusal.setText("Starting…")
        self.refusal.show()
        self.submitted.emit(params)

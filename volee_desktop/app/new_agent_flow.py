"""The New agent flow the controller keeps: opens the dialog, asks the daemon, starts the agent.

The dialog itself (``new_agent.NewAgentDialog``, with the harnesses' choices it offers)
loads when it first opens, not with the tray icon (issue 27); the last choices per project
(``new_agent_templates.Templates``) are read at start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QIcon

from volee_desktop.core.registry import Registry

from ..ipc.methods import Method
from .errors import LinkError
from .link import DaemonLink
from .live import Change
from .new_agent_templates import Template, Templates
from .tasks import Tasks

if TYPE_CHECKING:
    from .new_agent import NewAgentDialog

log = logging.getLogger(__name__)

#: How often the dialog asks again while the daemon still probes a harness, and for how long.
PROBE_EVERY = 0.5
PROBE_PATIENCE = 120.0


class NewAgent(QObject):
    """Opens the dialog, asks the daemon, starts the agent and selects it in the list."""

    started = Signal(str)  # the new agent's id (tests wait on it)

    def __init__(
        self,
        registry: Callable[[], Registry],
        link: Callable[[], DaemonLink],
        tasks: Tasks,
        select: Callable[[str], None],
        templates: Templates,
        machines: Callable[[], list[str]],
        icon: Callable[[], QIcon] | None = None,
        machine_of: Callable[[str], str | None] = lambda _agent: None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.registry = registry
        self.link = link
        self.tasks = tasks
        self.select = select
        self.templates = templates
        self.machines = machines
        self.icon = icon
        self.machine_of = machine_of  # the other machine an agent is on (None: this one)
        self.dialog: NewAgentDialog | None = None
        self._waiting: str | None = None  # started, not in the list yet: select it when it is

    def open(self) -> NewAgentDialog:
        if self.dialog is not None:
            self.dialog.raise_()
            self.dialog.activateWindow()
            return self.dialog
        from volee_desktop.harness.env import allowed_env

        from .new_agent import NewAgentDialog, seen_projects

        dialog = NewAgentDialog(
            seen_projects(self.registry(), machine_of=self.machine_of),
            self.templates,
            self.machines(),
            env=allowed_env(dict(os.environ)),
        )
        if self.icon is not None:
            dialog.setWindowIcon(self.icon())
        dialog.submitted.connect(lambda params: self._spawn(dialog, params))
        dialog.finished.connect(lambda _=0: self._closed(dialog))
        self.dialog = dialog
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        dialog.machine.currentTextChanged.connect(lambda _: self._machine_chosen(dialog))
        self.tasks.spawn(self._harnesses(dialog), "ask which harnesses are installed")
        return dialog

    def _machine_chosen(self, dialog: NewAgentDialog) -> None:
        """The folders and harnesses offered are those of the machine it will run on."""
        from .new_agent import seen_projects

        machine = dialog.remote()
        dialog.set_projects(
            seen_projects(self.registry(), machine=machine, machine_of=self.machine_of)
        )
        dialog.forget_harnesses()
        self.tasks.spawn(self._harnesses(dialog), "ask which harnesses are installed there")

    async def _harnesses(self, dialog: NewAgentDialog) -> None:
        """Ask until every harness is known: the daemon says ``probing`` for one whose
        ``--version`` has not answered yet (pi takes seconds), offered once it has.  On
        another machine, its daemon is asked (through this one)."""
        deadline = time.monotonic() + PROBE_PATIENCE
        machine = dialog.remote()
        params = {"machine": machine} if machine else {}
        while self.dialog is dialog and dialog.remote() == machine:
            try:
                answer = await self.link().call(Method.AGENTS_HARNESSES, params)
            except LinkError as exc:
                if dialog.remote() != machine:
                    return
                dialog.set_unreachable(str(exc).removeprefix("agents.harnesses: "))
                # Still startable: the daemon refuses what it cannot start, with the reason.
                from .new_agent import WORDS

                dialog.set_harnesses([{"harness": h, "modes": []} for h in WORDS])
                return
            if dialog.remote() != machine:
                return  # another machine was chosen meanwhile: its own answer follows
            listed = answer.get("harnesses") if isinstance(answer, dict) else None
            harnesses = [h for h in listed or [] if isinstance(h, dict)]
            dialog.asked = [str(h.get("harness")) for h in harnesses if h.get("probing")]
            dialog.set_harnesses([h for h in harnesses if not h.get("probing")])
            if not dialog.asked or time.monotonic() > deadline:
                return
            await asyncio.sleep(PROBE_EVERY)

    def _spawn(self, dialog: NewAgentDialog, params: dict[str, Any]) -> None:
        async def spawn() -> None:
            try:
                agent = await self.link().call(Method.AGENTS_SPAWN, params)
            except LinkError as exc:
                dialog.show_refusal(str(exc).removeprefix("agents.spawn: "))
                return
            agent_id = str(agent.get("id")) if isinstance(agent, dict) else ""
            log.info("new agent %s started from the dialog", agent_id)
            self.templates.remember(
                dialog.folder(),
                Template(str(params["harness"]), params.get("permission_mode"), params["worktree"]),
            )
            dialog.accept()
            if agent_id in self.registry().agents:
                self.select(agent_id)
            else:
                self._waiting = agent_id
            self.started.emit(agent_id)

        self.tasks.spawn(spawn(), "start a new agent")

    def _closed(self, dialog: NewAgentDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
        dialog.deleteLater()

    # --- LiveObserver: the new agent is selected once the list has it ---

    def on_reset(self, registry: Registry) -> None:
        self._select_waiting(registry)

    def on_change(self, change: Change) -> None:
        if self._waiting is not None and any(
            after is not None and after.id == self._waiting for _b, after in change.agents
        ):
            self._select_waiting(None)

    def _select_waiting(self, registry: Registry | None) -> None:
        agent_id = self._waiting
        if agent_id is not None and (registry is None or agent_id in registry.agents):
            self._waiting = None
            self.select(agent_id)

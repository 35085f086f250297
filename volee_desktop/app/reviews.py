"""The missions' reviews: one approval dialog per mission, fed by the live registry, with each
worker's change read through the daemon (``agents.changes``) and the person's answer sent
(``missions.answer``).  The controller builds it with what it needs (``MissionReviews``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QIcon

from volee_desktop.core.model import Mission, MissionStatus
from volee_desktop.core.registry import Registry

from ..ipc.methods import Method
from . import feedback
from .calls import Calls
from .errors import LinkError
from .live import Change

if TYPE_CHECKING:  # loaded when a review first opens, not with the tray icon (issue 27)
    from .approval import ApprovalDialog

log = logging.getLogger(__name__)


class MissionReviews:
    """Opens, feeds and closes the approval dialogs; sends what the person answers."""

    def __init__(
        self,
        calls: Calls,
        icon: Callable[[], QIcon],
        show_error: Callable[[str, str], None],
        machine: Callable[[str], str] = lambda _mission: "",
    ) -> None:
        # calls.withdraw: a mission's notification goes once its dialog is open.
        self.calls = calls
        self.machine = machine  # the other machine a mission is on ("": this one)
        self.icon = icon
        self.show_error = show_error
        self.dialogs: dict[str, ApprovalDialog] = {}
        # Missions approved here whose merge is not seen yet (it is done after the answer,
        # on the mission's machine): when each was approved, on ``calls.monotonic``.
        self.merging: dict[str, float] = {}

    def review(self, mission_id: str) -> ApprovalDialog | None:
        """Open (or raise) the approval dialog of a mission."""
        registry = self.calls.registry()
        mission = registry.missions.get(mission_id)
        if mission is None:
            self.show_error("Unknown mission", f"volee knows no mission {mission_id}.")
            return None
        dialog = self.dialogs.get(mission_id)
        if dialog is None:
            from .approval import ApprovalDialog

            dialog = ApprovalDialog(mission, registry)
            dialog.set_machine(self.machine(mission_id))
            dialog.setWindowIcon(self.icon())
            dialog.answer.connect(self.answer)
            dialog.diff_wanted.connect(lambda a, m=mission_id: self._read_changes(m, a, True))
            dialog.finished.connect(lambda _=0, m=mission_id: self._closed(m))
            self.dialogs[mission_id] = dialog
            for worker in dialog.worker_ids():
                self._read_changes(mission_id, worker, False)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        self.calls.withdraw(mission_id)
        log.info("approval dialog of %s shown", mission_id)
        return dialog

    def _read_changes(self, mission_id: str, agent_id: str, diff: bool) -> None:
        """Ask git (through the daemon) what a worker's branch would merge."""

        async def read() -> None:
            try:
                result = await self.calls.link().call(
                    Method.AGENTS_CHANGES, {"agent": agent_id, "diff": diff}
                )
            except LinkError as exc:
                result = {"error": str(exc).removeprefix("agents.changes: ")}
            finally:
                self.calls.called(Method.AGENTS_CHANGES)
            dialog = self.dialogs.get(mission_id)
            if dialog is not None and isinstance(result, dict):
                dialog.set_changes(agent_id, result)

        self.calls.tasks.spawn(read(), f"read the change of {agent_id}")

    def _closed(self, mission_id: str) -> None:
        dialog = self.dialogs.pop(mission_id, None)
        if dialog is not None:
            dialog.deleteLater()

    def answer(self, params: dict[str, Any]) -> None:
        """Send the person's answer to a mission (``missions.answer``); its dialog closes once
        it went in, and says why when it did not."""
        registry = self.calls.registry()
        done = feedback.done_text(Method.MISSIONS_ANSWER, params, registry)
        failed = feedback.failed_text(Method.MISSIONS_ANSWER, params, registry)

        mission_id = str(params.get("mission"))
        mission = registry.missions.get(mission_id)
        report = registry.messages.get(mission.report) if mission and mission.report else None
        approving = report.approving if report is not None else None
        approves = approving is not None and params.get("option") == approving
        started = self.calls.monotonic()
        if approves:  # before the call: its merge may be seen before the answer's reply
            self.merging[mission_id] = started

        async def send() -> None:
            dialog = self.dialogs.get(mission_id)
            try:
                await self.calls.link().call(Method.MISSIONS_ANSWER, dict(params))
            except LinkError as exc:
                self.merging.pop(mission_id, None)
                if dialog is not None:
                    dialog.show_status(f"Not answered: {exc}")
                self.calls.failed(failed, str(exc))
                return
            finally:
                self.calls.called(Method.MISSIONS_ANSWER)
            log.info("mission %s answered: %s", mission_id, params)
            if not approves or mission_id in self.merging:  # else its merge was told first
                self.calls.said(done, started)
            if dialog is not None:
                dialog.accept()

        self.calls.tasks.spawn(send(), "answer the mission")

    # --- LiveObserver: the open dialogs follow their missions ------

    def on_reset(self, registry: Registry) -> None:
        for mission_id, dialog in self.dialogs.items():
            mission = registry.missions.get(mission_id)
            if mission is not None:
                dialog.set_mission(mission, registry)

    def on_change(self, change: Change) -> None:
        if change.mission is not None and change.mission[1] is not None:
            dialog = self.dialogs.get(change.mission[1].id)
            if dialog is not None:
                dialog.set_mission(change.mission[1], self.calls.registry())
            if change.mission[1].id in self.merging:
                self._merge_seen(change.mission[1])

    def _merge_seen(self, mission: Mission) -> None:
        """An approved mission closed (merged) or was sent back: the list says which."""
        if mission.status in (MissionStatus.APPROVED, MissionStatus.AWAITING_APPROVAL):
            return  # still merging (or the approval not recorded yet)
        started = self.merging.pop(mission.id)
        where = self.machine(mission.id)
        on = f" on {where}" if where else ""
        if mission.status is MissionStatus.CLOSED:
            self.calls.said(f"Merged{on}: the mission “{mission.goal}” is closed.", started)
            return
        again = " again" if mission.status is MissionStatus.REPORTING else ""
        why = f" ({mission.reason})" if mission.reason else ""
        self.calls.failed(
            "Not merged", f"the mission “{mission.goal}”{on} is {mission.status.value}{again}{why}."
        )

    def close(self) -> None:
        for dialog in list(self.dialogs.values()):
            dialog.close()

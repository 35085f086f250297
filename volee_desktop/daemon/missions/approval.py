"""The end of a mission: the coordinator's report, the human's answer, the merges after approval.

The coordinator presents its report (``missions.request_approval``) as a
question to the human; the human answers (``missions.answer``) and the
supervisor decides.  Once approved, every worker's branch is merged (the open
pull request at its tip through GitHub when there is a token, else ``git
merge --no-ff`` into the base branch, pushed when there is a remote); the
evidence is read again and the supervisor closes the mission once every merge
is seen, or the mission goes back to reporting with the reason.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ...core import events as ev
from ...core.delivery import delivered_by_merge
from ...core.ids import MESSAGE
from ...core.model import (
    HUMAN,
    VOLEE,
    Agent,
    Delivery,
    MessageKind,
    Mission,
    MissionKind,
    MissionStatus,
    PullState,
)
from ...core.supervisor import APPROVING_DEFAULT, Notice, workers_of
from ...ipc.methods import Method
from ...ipc.protocol import ErrorCode, IpcError
from ...ipc.server import Connection
from .. import git
from ..context import Context
from ..errors import Refused
from ..forge import Forge, ForgeError
from ..ids import fresh
from ..params import decoder, mission_of
from ..views import mission_view, resolve_agent, resolve_mission
from .evidence import Evidence
from .messages import Messages
from .params import AnswerParams, ReportParams
from .results import MissionAnswered, ReportPresented

log = logging.getLogger(__name__)

#: How long ``missions.answer`` waits for the merges of an approval before it replies.
MERGE_WAIT = 240.0


class Rounds(Protocol):
    """Supervision rounds (``MissionsRunner``): an approval waits for one and commits as one."""

    async def supervise_now(self, mission_id: str) -> None:
        """Run a supervision round of the mission now."""
        ...

    async def commit_own(self, events: list[ev.Event]) -> None:
        """Commit events that trigger no supervision round."""
        ...


class Approval:
    """``missions.request_approval`` and ``missions.answer``, and merging approved work."""

    def __init__(
        self, ctx: Context, rounds: Rounds, messages: Messages, evidence: Evidence
    ) -> None:
        self.service = ctx.service
        self.tasks = ctx.tasks
        self.clock = ctx.clock
        self.rounds = rounds
        self.messages = messages
        self.evidence = evidence
        self._merging: dict[str, asyncio.Task[Any]] = {}
        ctx.methods.add(
            Method.MISSIONS_REQUEST_APPROVAL, self.api_request_approval, decoder(ReportParams)
        )
        ctx.methods.add(Method.MISSIONS_ANSWER, self.api_answer, decoder(AnswerParams))

    # --- the report and the answer ---------------------------------------------------------

    async def api_request_approval(
        self, _conn: Connection, params: ReportParams
    ) -> ReportPresented:
        registry = self.service.current()
        agent = resolve_agent(registry, params.agent)
        mission = mission_of(registry, params.mission, agent)
        if agent.id != mission.coordinator:
            raise Refused(
                f"only the coordinator of mission {mission.id} presents its report; "
                "send yours to the coordinator with post_message"
            )
        if mission.status not in (MissionStatus.REPORTING, MissionStatus.AWAITING_APPROVAL):
            raise Refused(
                f"mission {mission.id} is {mission.status}: a report is presented once every "
                "worker delivered (status reporting); wait for volee's message asking for it"
            )
        body = params.body.strip()
        options = params.options or (APPROVING_DEFAULT, "revise")
        approving = params.approving or (
            APPROVING_DEFAULT if APPROVING_DEFAULT in options else options[0]
        )
        if approving not in options:
            raise Refused(
                f"approving option {approving!r} is not one of {list(options)}; "
                "name one of the options"
            )
        now = self.clock.now()
        thread, opened = self.messages.mission_thread(registry, mission, now)
        message_id = fresh(MESSAGE)
        await self.service.commit(
            [
                *opened,
                ev.MessagePosted(
                    at=now,
                    message=message_id,
                    thread=thread,
                    sender=agent.id,
                    recipients=(HUMAN,),
                    kind=MessageKind.QUESTION,
                    body=body,
                    options=options,
                    approving=approving,
                ),
                ev.MissionUpdated(
                    at=now,
                    mission=mission.id,
                    status=MissionStatus.AWAITING_APPROVAL,
                    report=message_id,
                    reason="the coordinator presented its report",
                ),
            ]
        )
        return {"message": message_id, "mission": mission.id, "options": list(options)}

    async def api_answer(self, _conn: Connection, params: AnswerParams) -> MissionAnswered:
        registry = self.service.current()
        mission = resolve_mission(registry, params.mission)
        if mission.status is not MissionStatus.AWAITING_APPROVAL or mission.report is None:
            raise Refused(
                f"mission {mission.id} is {mission.status}: there is no report waiting for "
                "your answer; `volee mission show` says what it waits for"
            )
        question = registry.messages[mission.report]
        option = params.option
        answer = params.text
        if option is None and answer is None:
            raise IpcError(ErrorCode.BAD_REQUEST, "answer with an option or a text")
        if option is not None and option not in question.options:
            raise Refused(
                f"{option!r} is not an option of the report; choose one of "
                + ", ".join(repr(o) for o in question.options)
                + " or answer with a text"
            )
        recipients = (question.sender,) if question.sender in registry.agents else (VOLEE,)
        message_id = fresh(MESSAGE)
        await self.service.commit(
            [
                ev.MessagePosted(
                    at=self.clock.now(),
                    message=message_id,
                    thread=question.thread,
                    sender=HUMAN,
                    recipients=recipients,
                    kind=MessageKind.ANSWER,
                    body=answer or option or "",
                    reply_to=question.id,
                    chosen=option,
                ),
                ev.MessageRead(at=self.clock.now(), message=question.id, recipient=HUMAN),
            ]
        )
        # The supervisor answers in the same breath; wait for it so the reply shows the result,
        # and for the merges an approval starts (bounded: the reply says if they still run).
        await self.rounds.supervise_now(mission.id)
        merging = self._merging.get(mission.id)
        if merging is not None:
            await asyncio.wait({merging}, timeout=MERGE_WAIT)
            await self.rounds.supervise_now(mission.id)
        registry = self.service.current()
        return {**mission_view(registry.missions[mission.id], registry), "answer": message_id}

    # --- merging -----------------------------------------------------------------------------

    def start_merge(self, mission_id: str) -> None:
        """Merge the approved mission's work in the background (once at a time)."""
        if mission_id in self._merging:
            return

        async def run() -> None:
            try:
                await self.merge_all(mission_id)
            finally:
                self._merging.pop(mission_id, None)

        self._merging[mission_id] = self.tasks.spawn(run(), f"merge {mission_id}")

    async def merge_all(self, mission_id: str) -> None:
        """Merge every worker's branch of an approved mission; back to reporting on failure."""
        registry = self.service.current()
        mission = registry.missions[mission_id]
        if mission.kind is not MissionKind.CHANGE:
            return
        evidence = self.evidence
        forge: Forge | None = None
        problems: list[str] = []
        workers = workers_of(registry, mission)
        for worker in workers:
            d = worker.delivery
            if d is None or delivered_by_merge(d) is not None:
                continue
            if forge is None and needs_forge(d):
                # Only for an open pull request on GitHub: the keyring may prompt and block.
                forge = await asyncio.to_thread(evidence.forge)
            try:
                await asyncio.to_thread(merge_one, mission, worker, d, forge)
            except (git.GitError, ForgeError) as exc:
                problems.append(f"{worker.name}: {exc}")
        for worker in workers:
            await evidence.check(worker.id)
        after = self.service.current()
        current = after.missions[mission_id]
        if current.status is not MissionStatus.APPROVED:
            return
        unmerged = [
            w.name
            for w in workers_of(after, current)
            if w.delivery is None or delivered_by_merge(w.delivery) is None
        ]
        if not unmerged:
            return  # the supervisor closes the mission on the new evidence
        reason = "; ".join(problems) or f"merge not seen for {', '.join(unmerged)}"
        await self._back_to_reporting(
            current,
            f"merging failed: {reason} (once that is fixed, the coordinator presents its "
            "report again)",
        )

    async def _back_to_reporting(self, mission: Mission, reason: str) -> None:
        registry = self.service.current()
        now = self.clock.now()
        update = ev.MissionUpdated(
            at=now, mission=mission.id, status=MissionStatus.REPORTING, reason=reason
        )
        told = Notice(recipients=(mission.coordinator or HUMAN, HUMAN), body=reason)
        outbox = self.messages.notices(registry, mission, [told], now)
        await self.rounds.commit_own([update, *outbox.events])
        self.messages.deliver(outbox)


def needs_forge(d: Delivery) -> bool:
    """Whether merging this worker may go through the forge: an open pull request at its tip."""
    pr = d.pull_request_at_tip
    return pr is not None and pr.state == PullState.OPEN


def merge_one(mission: Mission, worker: Agent, d: Delivery, forge: Forge | None) -> None:
    """Merge one worker's branch: its open pull request at the tip, else into the base branch."""
    branch = d.branch or worker.branch
    if not branch:
        raise git.GitError(f"worker {worker.name} has no branch to merge")
    message = f"Merge {branch} (volee mission: {mission.goal[:60]})"
    pr = d.pull_request_at_tip
    tree = worker.worktree or worker.cwd
    url = git.remote_url_of(tree, branch) if pr is not None else None
    if pr is not None and pr.state == PullState.OPEN and forge is not None and forge.token and url:
        forge.merge(url, pr.number, pr.head, message)
        return
    repo = worker.repo or git.toplevel(tree) or tree
    base = mission.base_branch or d.base
    if not base:
        raise git.GitError(f"no base branch known to merge {branch} into")
    git.merge_branch(repo, base, branch, message)
    problem = git.push(repo, base)
    if problem:
        log.warning("merged %s into %s but could not push it: %s", branch, base, problem)

"""The missions runner: supervision after every commit, git evidence, merges, messages, tidy.

It listens to the service: events that concern a mission schedule a
supervision round (``core.supervisor.supervise``), whose decision is committed
in one batch, notices included; its own events never trigger another round.
A worker that stops gets its delivery evidence read from git (and GitHub);
an approved mission gets every worker's branch merged.  The IPC methods for
missions, messages and ``tidy`` live here too (docs/ipc.md).  A failure in a
round is logged and never fails the request whose events triggered it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import events as ev
from ..core.delivery import delivered_by_merge, tidy_check
from ..core.ids import MESSAGE, MISSION, THREAD
from ..core.model import (
    HUMAN,
    VOLEE,
    Agent,
    Delivery,
    MessageKind,
    Mission,
    MissionKind,
    MissionStatus,
    PushState,
    Role,
    ThreadKind,
)
from ..core.registry import Registry
from ..core.states import AgentState
from ..core.supervisor import APPROVING_DEFAULT, reported, supervise, workers_of
from ..ipc.protocol import ErrorCode, IpcError
from ..ipc.server import Connection
from ..store.codec import to_builtins
from . import git
from .errors import Refused
from .forge import Forge, ForgeError
from .ids import fresh
from .views import agent_view, mission_view, resolve_agent, resolve_mission

if TYPE_CHECKING:
    from .main import Daemon

log = logging.getLogger(__name__)

STOPPED_STATES = (AgentState.IDLE, AgentState.DONE, AgentState.STOPPED)
TOOLS = (
    "post_message, read_messages, report, present_report, spawn_worker, list_workers, join_mission"
)


def coordinator_brief(mission: Mission, workers: int | None) -> str:
    """The first prompt of a mission's coordinator: its job and volee's MCP tools."""
    count = f"Spawn {workers} worker(s)" if workers else "Spawn as many workers as the goal needs"
    deliver = (
        "Each worker works on its own branch in its own worktree: it must commit, push and "
        "open a pull request (in a repository without a remote, commits and a clean tree are "
        "enough)."
        if mission.kind is MissionKind.CHANGE
        else "Each worker delivers by sending its findings with the volee tool report."
    )
    return (
        f"You coordinate volee mission {mission.id} ({mission.kind}).\n"
        f"Goal: {mission.goal}\n"
        f"Repositories: {', '.join(mission.repositories)}\n\n"
        f"{count} with the volee MCP tool spawn_worker (one task each). {deliver} volee "
        "watches the workers and tells you each verdict in messages from volee. Talk to "
        "workers and the human with post_message; read_messages shows what you were sent. "
        "When every worker has delivered, volee asks you to check the work and present your "
        "report to the human with present_report: a question whose approving option, chosen "
        "by the human, makes volee merge every worker's branch and close the mission.\n"
        f"volee tools: {TOOLS}."
    )


def worker_brief(mission: Mission, task: str) -> str:
    """The first prompt of a worker: its task and how it delivers."""
    how = (
        "Commit your work on your branch, push it and open a pull request; leave a clean tree."
        if mission.kind is MissionKind.CHANGE
        else "Send your findings with the volee MCP tool report."
    )
    return (
        f"{task}\n\n(volee mission {mission.id}: {mission.goal}. {how} Ask your coordinator "
        "with the volee tool post_message when you are stuck.)"
    )


def _param(params: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = params.get(key)
    if value is None or value == "":
        if required:
            raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} is required")
        return None
    if not isinstance(value, str):
        raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} must be a string")
    return value


def _strings(params: dict[str, Any], key: str) -> tuple[str, ...]:
    value = params.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} must be a list of strings")
    return tuple(value)


def message_view(registry: Registry, message_id: str) -> dict[str, Any]:
    """A message with its sender's and recipients' names."""
    message = registry.messages[message_id]
    data: dict[str, Any] = to_builtins(message)
    data["sender_name"] = _name(registry, message.sender)
    data["recipient_names"] = [_name(registry, r) for r in message.recipients]
    return data


def _name(registry: Registry, party: str) -> str:
    return party if party in (HUMAN, VOLEE) else registry.name_of(party) or party


class MissionsRunner:
    """Supervision rounds, git checks and merges, and the missions/messages IPC methods."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.service = daemon.service
        self.forge_factory = Forge.from_environment
        self._locks: dict[str, asyncio.Lock] = {}
        self._dirty: set[str] = set()
        self._own: set[int] = set()
        self._checking: set[str] = set()
        self._check_again: set[str] = set()
        self._merging: set[str] = set()
        self.rounds = 0

    # --- wiring ----------------------------------------------------------------------------

    def install(self) -> None:
        """Register the IPC methods, the listener and the start-up sweep."""
        for name, fn in (
            ("missions.create", self.api_create),
            ("missions.list", self.api_list),
            ("missions.show", self.api_show),
            ("missions.answer", self.api_answer),
            ("missions.request_approval", self.api_request_approval),
            ("missions.check", self.api_check),
            ("missions.spawn_worker", self.api_spawn_worker),
            ("missions.workers", self.api_workers),
            ("missions.join", self.api_join),
            ("messages.post", self.api_post),
            ("messages.read", self.api_read),
            ("tidy", self.api_tidy),
        ):
            self.daemon.api.add(name, fn)
        self.service.listen(self._on_event)
        self.daemon.after_adoption.append(self.sweep)
        self.daemon.status_parts["missions"] = self._status

    def _status(self) -> str:
        registry = self.service.registry
        open_ = sum(1 for m in registry.missions.values() if not m.status.ended)
        return f"{open_} open, {self.rounds} supervision rounds"

    async def sweep(self) -> None:
        """At start: read evidence never read, then supervise every open mission."""
        registry = self.service.current()
        for mission in registry.missions.values():
            if mission.status.ended:
                continue
            if mission.kind is MissionKind.CHANGE:
                for worker in workers_of(registry, mission):
                    if worker.delivery is None and worker.state not in (
                        AgentState.LAUNCHING,
                        AgentState.WORKING,
                    ):
                        self.schedule_check(worker.id)
            self.schedule(mission.id)
            if mission.status is MissionStatus.APPROVED:
                self._start_merge(mission.id)

    # --- reacting to events ----------------------------------------------------------------

    def _on_event(self, _seq: int, event: ev.Event) -> None:
        if id(event) in self._own:
            self._own.discard(id(event))
            return
        registry = self.service.registry
        concerned: set[str] = set()
        if isinstance(event, ev.AgentEvent):
            agent = registry.agents.get(event.agent)
            if agent is not None and agent.mission:
                concerned.add(agent.mission)
                if isinstance(event, ev.StateChanged) and event.state in STOPPED_STATES:
                    mission = registry.missions.get(agent.mission)
                    if (
                        mission is not None
                        and mission.kind is MissionKind.CHANGE
                        and agent.role is not Role.COORDINATOR
                        and agent.id != mission.coordinator
                    ):
                        self.schedule_check(agent.id)
            if isinstance(event, ev.MembershipChanged):
                concerned.add(event.mission)
        elif isinstance(event, ev.MissionCreated | ev.MissionUpdated | ev.WorkerAssessed):
            concerned.add(event.mission)
        elif isinstance(event, ev.MessagePosted):
            concerned |= self._missions_of_message(registry, event)
        for mission_id in concerned:
            if mission_id in registry.missions:
                self.schedule(mission_id)

    def _missions_of_message(self, registry: Registry, event: ev.MessagePosted) -> set[str]:
        found: set[str] = set()
        thread = registry.threads.get(event.thread)
        if thread is not None and thread.mission:
            found.add(thread.mission)
        sender = registry.agents.get(event.sender)
        if sender is not None and sender.mission:
            found.add(sender.mission)
        if event.reply_to:
            for mission in registry.missions.values():
                if mission.report == event.reply_to:
                    found.add(mission.id)
        return found

    def schedule(self, mission_id: str) -> None:
        """Run a supervision round for the mission soon (coalesced)."""
        if mission_id in self._dirty:
            return
        self._dirty.add(mission_id)
        self.daemon.spawn_task(self.supervise_now(mission_id), f"supervise {mission_id}")

    async def supervise_now(self, mission_id: str) -> None:
        """One supervision round: decide on the working registry, commit in one batch."""
        lock = self._locks.setdefault(mission_id, asyncio.Lock())
        async with lock:
            self._dirty.discard(mission_id)
            registry = self.service.current()
            mission = registry.missions.get(mission_id)
            if mission is None:
                return
            now = time.time()
            decision = supervise(registry, mission_id, now)
            if not decision:
                return
            self.rounds += 1
            events: list[ev.Event] = list(decision.events)
            thread, opened = self._mission_thread(registry, mission, now)
            events += opened
            deliveries: list[tuple[str, str, str]] = []
            for notice in decision.notices:
                recipients = self._known(registry, notice.recipients)
                message_id = fresh(MESSAGE)
                events.append(
                    ev.MessagePosted(
                        at=now,
                        message=message_id,
                        thread=thread,
                        sender=VOLEE,
                        recipients=recipients,
                        kind=MessageKind.NOTICE,
                        body=notice.body,
                        references=notice.references,
                    )
                )
                for recipient in recipients:
                    if recipient in registry.agents:
                        deliveries.append((recipient, f"[volee] {notice.body}", message_id))
            before = mission.status
            await self._commit_own(events)
            for agent_id, text, message_id in deliveries:
                self.deliver_later(agent_id, text, message_id)
            after = self.service.current().missions[mission_id]
            if after.status is MissionStatus.APPROVED and before is not MissionStatus.APPROVED:
                self._start_merge(mission_id)

    def _known(self, registry: Registry, parties: tuple[str, ...]) -> tuple[str, ...]:
        # A forgotten coordinator can no longer be written to: the person hears it instead.
        known = tuple(p for p in parties if p in (HUMAN, VOLEE) or p in registry.agents)
        return known or (HUMAN,)

    def _mission_thread(
        self, registry: Registry, mission: Mission, at: float
    ) -> tuple[str, list[ev.Event]]:
        if mission.thread is not None and mission.thread in registry.threads:
            return mission.thread, []
        existing = next(
            (
                t.id
                for t in registry.threads.values()
                if t.kind is ThreadKind.MISSION and t.mission == mission.id
            ),
            None,
        )
        if existing is not None:
            return existing, []
        thread = fresh(THREAD)
        opened = ev.ThreadOpened(
            at=at, thread=thread, kind=ThreadKind.MISSION, mission=mission.id, parties=(HUMAN,)
        )
        return thread, [opened]

    async def _commit_own(self, events: list[ev.Event]) -> None:
        ids = {id(e) for e in events}
        self._own |= ids
        try:
            await self.service.commit(events)
        except BaseException:
            self._own -= ids
            raise

    def deliver_later(self, agent_id: str, text: str, message_id: str) -> None:
        """Type a message into an agent's session (or resume it with it), in the background."""

        async def deliver() -> None:
            agent = self.service.current().agents.get(agent_id)
            if agent is None or agent.held_for_good:
                return
            try:
                await self.daemon.agents.deliver(agent_id, text, message_id)
            except Exception as exc:  # a message that cannot be delivered stays unread
                log.warning("message %s not delivered to %s: %s", message_id, agent.name, exc)

        self.daemon.spawn_task(deliver(), f"deliver {message_id}")

    # --- git evidence ----------------------------------------------------------------------

    def schedule_check(self, agent_id: str) -> None:
        """Read the agent's delivery evidence soon (once more if a check is running)."""
        if agent_id in self._checking:
            self._check_again.add(agent_id)
            return
        self._checking.add(agent_id)

        async def loop() -> None:
            try:
                while True:
                    self._check_again.discard(agent_id)
                    await self.check(agent_id)
                    if agent_id not in self._check_again:
                        return
            finally:
                self._checking.discard(agent_id)

        self.daemon.spawn_task(loop(), f"git check {agent_id}")

    async def check(self, agent_id: str) -> Delivery | None:
        """Read and record the agent's evidence; ``checked_at`` is when the check began."""
        began = time.time()
        registry = self.service.current()
        agent = registry.agents.get(agent_id)
        if agent is None:
            return None
        tree = agent.worktree or agent.cwd
        if not tree:
            return None
        mission = registry.missions.get(agent.mission) if agent.mission else None
        previous = agent.delivery
        target = git.Target(
            worktree=tree,
            branch=agent.branch,
            base=(mission.base_branch if mission else None)
            or (previous.base if previous else None),
            unmerged_tip=previous.unmerged_tip if previous else None,
        )
        forge = self.forge_factory()

        def read() -> Delivery:
            found = git.read_delivery(target, began)
            if found.pushed in (PushState.NO_REMOTE,) or not found.branch:
                return found
            remote = git.remote_of(tree, found.branch)
            url = git.remote_url(tree, remote) if remote else None
            known, pr = forge.pull_request(url, found.branch)
            return replace(found, pull_request=pr, pull_request_known=known)

        delivery = await asyncio.to_thread(read)
        if agent_id not in self.service.current().agents:
            return None
        await self.service.commit(
            [ev.DeliveryUpdated(at=time.time(), agent=agent_id, delivery=delivery)]
        )
        return delivery

    # --- merging ---------------------------------------------------------------------------

    def _start_merge(self, mission_id: str) -> None:
        if mission_id in self._merging:
            return
        self._merging.add(mission_id)

        async def run() -> None:
            try:
                await self.merge_all(mission_id)
            finally:
                self._merging.discard(mission_id)

        self.daemon.spawn_task(run(), f"merge {mission_id}")

    async def merge_all(self, mission_id: str) -> None:
        """Merge every worker's branch of an approved mission; back to reporting on failure."""
        registry = self.service.current()
        mission = registry.missions[mission_id]
        if mission.kind is not MissionKind.CHANGE:
            return
        forge = self.forge_factory()
        problems: list[str] = []
        workers = workers_of(registry, mission)
        for worker in workers:
            d = worker.delivery
            if d is None or delivered_by_merge(d) is not None:
                continue
            try:
                await asyncio.to_thread(self._merge_one, mission, worker, d, forge)
            except (git.GitError, ForgeError) as exc:
                problems.append(f"{worker.name}: {exc}")
        for worker in workers:
            await self.check(worker.id)
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
        await self._back_to_reporting(current, f"merging failed: {reason}")

    def _merge_one(self, mission: Mission, worker: Agent, d: Delivery, forge: Forge) -> None:
        branch = d.branch or worker.branch
        if not branch:
            raise git.GitError(f"worker {worker.name} has no branch to merge")
        message = f"Merge {branch} (volee mission: {mission.goal[:60]})"
        pr = d.pull_request_at_tip
        tree = worker.worktree or worker.cwd
        remote = git.remote_of(tree, branch)
        url = git.remote_url(tree, remote) if remote else None
        if pr is not None and pr.state == "open" and forge.token and url:
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

    async def _back_to_reporting(self, mission: Mission, reason: str) -> None:
        registry = self.service.current()
        now = time.time()
        thread, opened = self._mission_thread(registry, mission, now)
        recipients = self._known(registry, (mission.coordinator or HUMAN, HUMAN))
        message_id = fresh(MESSAGE)
        events: list[ev.Event] = [
            ev.MissionUpdated(
                at=now, mission=mission.id, status=MissionStatus.REPORTING, reason=reason
            ),
            *opened,
            ev.MessagePosted(
                at=now,
                message=message_id,
                thread=thread,
                sender=VOLEE,
                recipients=recipients,
                kind=MessageKind.NOTICE,
                body=reason,
            ),
        ]
        await self._commit_own(events)
        for recipient in recipients:
            if recipient in registry.agents:
                self.deliver_later(recipient, f"[volee] {reason}", message_id)

    # --- missions API ----------------------------------------------------------------------

    def _mission(self, params: dict[str, Any], agent: Agent | None = None) -> Mission:
        ref = _param(params, "mission", required=agent is None or agent.mission is None)
        registry = self.service.current()
        if ref is None:
            assert agent is not None
            assert agent.mission is not None
            return registry.missions[agent.mission]
        return resolve_mission(registry, ref)

    def _agent(self, params: dict[str, Any], key: str = "agent") -> Agent:
        return resolve_agent(self.service.current(), _param(params, key) or "")

    async def api_create(self, conn: Connection, params: dict[str, Any]) -> Any:
        goal = (_param(params, "goal") or "").strip()
        try:
            kind = MissionKind(params.get("kind") or "change")
        except ValueError:
            raise Refused(
                f"unknown mission kind {params.get('kind')!r}; use change or analysis"
            ) from None
        repos: list[str] = []
        for given in _strings(params, "repositories"):
            path = Path(given).expanduser().absolute()
            if not path.is_dir():
                raise Refused(f"repository {path} does not exist; pass an existing folder")
            top = await asyncio.to_thread(git.toplevel, path)
            if kind is MissionKind.CHANGE and top is None:
                raise Refused(f"{path} is not a git repository; a change mission needs one")
            repos.append(top or str(path))
        if not repos:
            raise Refused("a mission needs at least one repository: --repo PATH")
        workers = params.get("workers")
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'workers' must be a positive integer")
        base = await asyncio.to_thread(git.current_branch, repos[0])
        mission_id, thread = fresh(MISSION), fresh(THREAD)
        now = time.time()
        await self.service.commit(
            [
                ev.MissionCreated(
                    at=now,
                    mission=mission_id,
                    goal=goal,
                    kind=kind,
                    repositories=tuple(repos),
                    thread=thread,
                    base_branch=base,
                ),
                ev.ThreadOpened(
                    at=now,
                    thread=thread,
                    kind=ThreadKind.MISSION,
                    mission=mission_id,
                    parties=(HUMAN,),
                ),
            ]
        )
        mission = self.service.current().missions[mission_id]
        spawn: dict[str, Any] = {
            "harness": params.get("harness") or "claude",
            "prompt": coordinator_brief(mission, workers),
            "cwd": repos[0],
            "role": "coordinator",
            "mission": mission_id,
            "name": params.get("name") or None,
        }
        for key in ("env", "model", "permission_mode", "argv"):
            if params.get(key) is not None:
                spawn[key] = params[key]
        try:
            coordinator = await self.daemon.agents.api_spawn(conn, spawn)
        except Refused as exc:
            await self.service.commit(
                [
                    ev.MissionUpdated(
                        at=time.time(),
                        mission=mission_id,
                        status=MissionStatus.CANCELLED,
                        reason=f"the coordinator could not start: {exc}",
                    )
                ]
            )
            raise Refused(f"mission {mission_id} cancelled: {exc}") from exc
        if self.service.current().missions[mission_id].coordinator is None:
            await self.service.commit(
                [
                    ev.MissionUpdated(
                        at=time.time(), mission=mission_id, coordinator=coordinator["id"]
                    )
                ]
            )
        registry = self.service.current()
        return mission_view(registry.missions[mission_id], registry)

    async def api_list(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.registry
        missions = sorted(registry.missions.values(), key=lambda m: m.created_at, reverse=True)
        if not params.get("all"):
            missions = [m for m in missions if not m.status.ended] or missions[:10]
        return [mission_view(m, registry) for m in missions]

    async def api_show(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.registry
        mission = resolve_mission(registry, _param(params, "mission") or "")
        data = mission_view(mission, registry)
        threads = [t for t in registry.threads.values() if t.mission == mission.id]
        ids = {t.id for t in threads}
        messages = sorted(
            (m for m in registry.messages.values() if m.thread in ids), key=lambda m: (m.at, m.id)
        )
        data["threads"] = [to_builtins(t) for t in threads]
        data["messages"] = [message_view(registry, m.id) for m in messages]
        return data

    async def api_answer(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.current()
        mission = resolve_mission(registry, _param(params, "mission") or "")
        if mission.status is not MissionStatus.AWAITING_APPROVAL or mission.report is None:
            raise Refused(
                f"mission {mission.id} is {mission.status}: there is no report waiting for "
                "your answer"
            )
        question = registry.messages[mission.report]
        option = _param(params, "option", required=False)
        text = _param(params, "text", required=False)
        if option is None and text is None:
            raise IpcError(ErrorCode.BAD_REQUEST, "answer with an option or a text")
        if option is not None and option not in question.options:
            raise Refused(
                f"{option!r} is not an option of the report; choose one of "
                + ", ".join(repr(o) for o in question.options)
                + " or answer with a text"
            )
        thread = question.thread
        recipients = (question.sender,) if question.sender in registry.agents else (VOLEE,)
        message_id = fresh(MESSAGE)
        await self.service.commit(
            [
                ev.MessagePosted(
                    at=time.time(),
                    message=message_id,
                    thread=thread,
                    sender=HUMAN,
                    recipients=recipients,
                    kind=MessageKind.ANSWER,
                    body=text or option or "",
                    reply_to=question.id,
                    chosen=option,
                ),
                ev.MessageRead(at=time.time(), message=question.id, recipient=HUMAN),
            ]
        )
        # The supervisor answers in the same breath; wait for it so the reply shows the result.
        await self.supervise_now(mission.id)
        registry = self.service.current()
        view = mission_view(registry.missions[mission.id], registry)
        view["answer"] = message_id
        return view

    async def api_request_approval(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        mission = self._mission(params, agent)
        if agent.id != mission.coordinator:
            raise Refused(f"only the coordinator of mission {mission.id} presents its report")
        if mission.status not in (MissionStatus.REPORTING, MissionStatus.AWAITING_APPROVAL):
            raise Refused(
                f"mission {mission.id} is {mission.status}: a report is presented once every "
                "worker delivered (status reporting)"
            )
        body = (_param(params, "body") or "").strip()
        options = _strings(params, "options") or (APPROVING_DEFAULT, "revise")
        approving = _param(params, "approving", required=False) or (
            APPROVING_DEFAULT if APPROVING_DEFAULT in options else options[0]
        )
        if approving not in options:
            raise Refused(f"approving option {approving!r} is not one of {list(options)}")
        registry = self.service.current()
        now = time.time()
        thread, opened = self._mission_thread(registry, mission, now)
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

    async def api_check(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.current()
        if params.get("agent"):
            agents = [self._agent(params)]
        else:
            mission = resolve_mission(registry, _param(params, "mission") or "")
            agents = workers_of(registry, mission)
        out = []
        for agent in agents:
            delivery = await self.check(agent.id)
            out.append({"agent": agent.id, "name": agent.name, "delivery": to_builtins(delivery)})
        return out

    async def api_spawn_worker(self, conn: Connection, params: dict[str, Any]) -> Any:
        coordinator = self._agent(params)
        mission = self._mission(params, coordinator)
        if coordinator.id != mission.coordinator:
            raise Refused(f"only the coordinator of mission {mission.id} spawns its workers")
        if mission.status.ended:
            raise Refused(f"mission {mission.id} is over ({mission.status})")
        task = (_param(params, "prompt") or "").strip()
        repo = _param(params, "repo", required=False) or mission.repositories[0]
        if repo not in mission.repositories:
            raise Refused(f"{repo} is not a repository of mission {mission.id}")
        is_git = await asyncio.to_thread(git.toplevel, repo) is not None
        launch = coordinator.launch
        spawn: dict[str, Any] = {
            "harness": params.get("harness") or str(coordinator.harness),
            "prompt": task if params.get("verbatim") else worker_brief(mission, task),
            "cwd": repo,
            "worktree": is_git,
            "role": "worker",
            "mission": mission.id,
            "parent": coordinator.id,
            "name": params.get("name") or None,
            "env": dict(launch.env) if launch else None,
            "permission_mode": launch.permission_mode if launch else None,
            "argv": params.get("argv"),
        }
        return await self.daemon.agents.api_spawn(
            conn, {k: v for k, v in spawn.items() if v is not None}
        )

    async def api_workers(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.current()
        if params.get("agent"):
            agent = self._agent(params)
            mission = self._mission(params, agent)
        else:
            mission = resolve_mission(registry, _param(params, "mission") or "")
        out = []
        for worker in workers_of(registry, mission):
            view = agent_view(worker)
            assessment = mission.assessments.get(worker.id)
            view["verdict"] = str(assessment.verdict) if assessment else None
            view["verdict_reason"] = assessment.reason if assessment else None
            out.append(view)
        return out

    async def api_join(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        mission = resolve_mission(self.service.current(), _param(params, "mission") or "")
        joined = params.get("joined", True) is not False
        await self.service.commit(
            [
                ev.MembershipChanged(
                    at=time.time(), agent=agent.id, mission=mission.id, joined=joined
                )
            ]
        )
        return agent_view(self.service.current().agents[agent.id])

    # --- messages API ----------------------------------------------------------------------

    def _party(self, registry: Registry, ref: str) -> str:
        if ref in (HUMAN, VOLEE):
            return ref
        return resolve_agent(registry, ref).id

    async def api_post(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.current()
        sender = self._party(registry, _param(params, "sender", required=False) or HUMAN)
        recipients = tuple(self._party(registry, r) for r in _strings(params, "to"))
        if not recipients:
            raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'to' must name a recipient")
        body = _param(params, "body") or ""
        try:
            kind = MessageKind(params.get("kind") or "text")
        except ValueError:
            raise Refused(f"unknown message kind {params.get('kind')!r}") from None
        for recipient in recipients:
            problem = registry.check_route(sender, recipient)
            if problem:
                raise Refused(problem)
        now = time.time()
        events: list[ev.Event] = []
        thread = _param(params, "thread", required=False)
        if thread is None:
            thread, events = self._thread_for(registry, sender, recipients, now)
        message_id = fresh(MESSAGE)
        events.append(
            ev.MessagePosted(
                at=now,
                message=message_id,
                thread=thread,
                sender=sender,
                recipients=recipients,
                kind=kind,
                body=body,
                references=_strings(params, "references"),
                reply_to=_param(params, "reply_to", required=False),
                options=_strings(params, "options"),
                approving=_param(params, "approving", required=False),
            )
        )
        await self.service.commit(events)
        who = _name(registry, sender)
        for recipient in recipients:
            if recipient in registry.agents and recipient != sender:
                text = (
                    f"[message from {who} ({message_id})] {body}\n"
                    "(answer with the volee tool post_message)"
                )
                self.deliver_later(recipient, text, message_id)
        return {"message": message_id, "thread": thread}

    def _thread_for(
        self, registry: Registry, sender: str, recipients: tuple[str, ...], at: float
    ) -> tuple[str, list[ev.Event]]:
        parties = {sender, *recipients}
        members = [registry.agents[p] for p in parties if p in registry.agents]
        missions = {a.mission for a in members}
        if len(missions) == 1 and (mission_id := missions.pop()) is not None:
            mission = registry.missions.get(mission_id)
            if mission is not None:
                return self._mission_thread(registry, mission, at)
        wanted = set(parties)
        for t in registry.threads.values():
            if t.kind is ThreadKind.DIRECT and set(t.parties) == wanted:
                return t.id, []
        thread = fresh(THREAD)
        ordered = tuple(sorted(wanted))
        return thread, [
            ev.ThreadOpened(at=at, thread=thread, kind=ThreadKind.DIRECT, parties=ordered)
        ]

    async def api_read(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.service.current()
        reader = self._party(registry, _param(params, "agent", required=False) or HUMAN)
        unread_only = params.get("unread_only", True) is not False
        mine = sorted(
            (
                m
                for m in registry.messages.values()
                if reader in m.recipients
                and (
                    not unread_only
                    or m.receipts.get(reader) is None
                    or m.receipts[reader].read_at is None
                )
            ),
            key=lambda m: (m.at, m.id),
        )
        limit = params.get("limit")
        if isinstance(limit, int) and limit > 0:
            mine = mine[-limit:]
        views = [message_view(registry, m.id) for m in mine]
        if params.get("mark", True) is not False and mine:
            now = time.time()
            await self.service.commit(
                [
                    ev.MessageRead(at=now, message=m.id, recipient=reader)
                    for m in mine
                    if m.receipts.get(reader) is None or m.receipts[reader].read_at is None
                ]
            )
        return views

    # --- tidy --------------------------------------------------------------------------------

    async def api_tidy(self, _conn: Connection, params: dict[str, Any]) -> Any:
        dry_run = bool(params.get("dry_run"))
        registry = self.service.current()
        candidates = [a for a in registry.agents.values() if a.worktree]
        for candidate in candidates:
            d = candidate.delivery
            last = max(candidate.state_since, candidate.activity_at or 0.0)
            if (d is None or d.checked_at < last) and Path(candidate.worktree or "").is_dir():
                await self.check(candidate.id)
        registry = self.service.current()
        out = []
        for old in candidates:
            agent = registry.agents.get(old.id)
            if agent is None or not agent.worktree:
                continue
            gone = not Path(agent.worktree).is_dir()
            mission = registry.missions.get(agent.mission) if agent.mission else None
            was_reported = mission is not None and reported(registry, mission, agent.id) is not None
            verdict = tidy_check(agent, was_reported)
            entry: dict[str, Any] = {
                "agent": agent.id,
                "name": agent.name,
                "worktree": agent.worktree,
                "branch": agent.branch,
                "removable": verdict.removable and not gone,
                "missing": ["the worktree is already gone"] if gone else list(verdict.missing),
                "removed": False,
            }
            if entry["removable"] and not dry_run:
                try:
                    await asyncio.to_thread(
                        git.remove_worktree, agent.repo or agent.worktree, agent.worktree
                    )
                    entry["removed"] = True
                except git.GitError as exc:
                    entry["missing"] = [str(exc)]
            out.append(entry)
        return out


async def install_missions(daemon: Daemon) -> None:
    """RUNNER_FACTORIES entry: create the missions runner and wire it in."""
    runner = MissionsRunner(daemon)
    runner.install()
    daemon.missions = runner  # type: ignore[attr-defined]


def _register() -> None:
    from .main import RUNNER_FACTORIES

    if install_missions not in RUNNER_FACTORIES:
        RUNNER_FACTORIES.append(install_missions)


_register()

__all__ = [
    "MissionsRunner",
    "coordinator_brief",
    "install_missions",
    "message_view",
    "worker_brief",
]

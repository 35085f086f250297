"""The missions runner: supervision after every commit, and the missions IPC methods.

It listens to the service: events that concern a mission schedule a
supervision round (``core.supervisor.supervise``), whose decision is committed
in one batch, notices included; its own events never trigger another round.
A failure in a round is logged and never fails the request whose events
triggered it.  Its parts: ``evidence`` (when git evidence is read),
``messages`` (threads, notices, delivery, the messages methods), ``approval``
(report, answer, merges) and ``tidy``.  IPC methods: docs/ipc.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from ...core import events as ev
from ...core.ids import MISSION, THREAD
from ...core.model import (
    HUMAN,
    VOLEE,
    Agent,
    Message,
    MessageKind,
    Mission,
    MissionKind,
    MissionStatus,
    Role,
    ThreadKind,
)
from ...core.names import unique_name
from ...core.registry import Registry
from ...core.supervisor import supervise, workers_of
from ...ipc.caller import caller_of
from ...ipc.methods import Method
from ...ipc.server import Connection
from ...store.codec import to_builtins
from .. import git
from ..agents.runner import AgentsRunner
from ..context import Context
from ..errors import Refused
from ..ids import fresh
from ..params import checked_delivery, decoder, mission_of
from ..spawn import SpawnRequest, slug
from ..views import AgentView, MissionView, agent_view, mission_view, resolve_agent, resolve_mission
from .approval import Approval
from .changes import Changes
from .evidence import Evidence
from .messages import Messages, message_view
from .params import (
    AgentOrMission,
    CreateParams,
    EvidenceParams,
    InviteParams,
    JoinParams,
    ListParams,
    MissionParams,
    SpawnWorkerParams,
)
from .results import AssessedView, DeliveryChecked, MissionShown
from .tidy import Tidy

TOOLS = (
    "post_message, read_messages, report, present_report, spawn_worker, list_workers, "
    "invite_to_mission, join_mission"
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


def assessed_view(mission: Mission, agent: Agent) -> AssessedView:
    """An agent of the mission with its verdict and the delivery evidence behind it."""
    assessment = mission.assessments.get(agent.id)
    return {
        **agent_view(agent),
        "verdict": str(assessment.verdict) if assessment else None,
        "verdict_reason": assessment.reason if assessment else None,
        "delivery": to_builtins(agent.delivery) if agent.delivery else None,
    }


def _at(message: Message) -> float:
    return message.at


class MissionsRunner:
    """Supervision rounds and the missions IPC methods; owns evidence, messages, approval, tidy."""

    def __init__(self, ctx: Context, agents: AgentsRunner) -> None:
        self.service = ctx.service
        self.tasks = ctx.tasks
        self.agents = agents
        self.clock = ctx.clock
        self.evidence = Evidence(ctx)
        self.messages = Messages(ctx, agents)
        self.approval = Approval(ctx, self, self.messages, self.evidence)
        self.tidy = Tidy(ctx.service, self.evidence, ctx.methods, agents)
        self.changes = Changes(ctx.service, ctx.methods)
        self._locks: dict[str, asyncio.Lock] = {}
        self._dirty: set[str] = set()
        self._own: set[int] = set()
        self.rounds = 0
        methods = ctx.methods
        methods.add(Method.MISSIONS_CREATE, self.api_create, decoder(CreateParams))
        methods.add(Method.MISSIONS_LIST, self.api_list, decoder(ListParams))
        methods.add(Method.MISSIONS_SHOW, self.api_show, decoder(MissionParams))
        methods.add(Method.MISSIONS_CHECK, self.api_check, decoder(AgentOrMission))
        methods.add(Method.MISSIONS_EVIDENCE, self.api_evidence, decoder(EvidenceParams))
        methods.add(Method.MISSIONS_SPAWN_WORKER, self.api_spawn_worker, decoder(SpawnWorkerParams))
        methods.add(Method.MISSIONS_WORKERS, self.api_workers, decoder(AgentOrMission))
        methods.add(Method.MISSIONS_JOIN, self.api_join, decoder(JoinParams))
        methods.add(Method.MISSIONS_INVITE, self.api_invite, decoder(InviteParams))
        self.service.listen(self._on_event)
        ctx.status.add("missions", self._status)

    def _status(self) -> str:
        registry = self.service.registry
        open_ = sum(1 for m in registry.missions.values() if not m.status.ended)
        return (
            f"{open_} open, {self.rounds} supervision rounds, "
            f"GitHub token: {self.evidence.github_token}"
        )

    async def sweep(self) -> None:
        """At start: read evidence never read, then supervise every open mission."""
        registry = self.service.current()
        for mission in registry.missions.values():
            if mission.status.ended:
                continue
            self.evidence.catch_up(registry, mission)
            self.schedule(mission.id)
            if mission.status is MissionStatus.APPROVED:
                self.approval.start_merge(mission.id)

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
                self.evidence.on_event(registry, event)
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
        self.tasks.spawn(self.supervise_now(mission_id), f"supervise {mission_id}")

    async def supervise_now(self, mission_id: str) -> None:
        """One supervision round: decide on the working registry, commit in one batch."""
        lock = self._locks.setdefault(mission_id, asyncio.Lock())
        async with lock:
            self._dirty.discard(mission_id)
            registry = self.service.current()
            mission = registry.missions.get(mission_id)
            if mission is None:
                return
            now = self.clock.now()
            decision = supervise(registry, mission_id, now)
            if not decision:
                return
            self.rounds += 1
            outbox = self.messages.notices(registry, mission, decision.notices, now)
            before = mission.status
            await self.commit_own([*decision.events, *outbox.events])
            self.messages.deliver(outbox)
            after = self.service.current().missions[mission_id]
            if after.status is MissionStatus.APPROVED and before is not MissionStatus.APPROVED:
                self.approval.start_merge(mission_id)

    async def commit_own(self, events: list[ev.Event]) -> None:
        """Commit events of the runner's own: they trigger no supervision round."""
        ids = {id(e) for e in events}
        self._own |= ids
        try:
            await self.service.commit(events)
        except BaseException:
            self._own -= ids
            raise

    # --- missions API ----------------------------------------------------------------------

    async def api_create(self, conn: Connection, params: CreateParams) -> MissionView:
        goal = params.goal.strip()
        kind = params.kind
        repos: list[str] = []
        for given in params.repositories:
            path = Path(given).expanduser().absolute()
            if not path.is_dir():
                raise Refused(f"repository {path} does not exist; pass an existing folder")
            top = await asyncio.to_thread(git.toplevel, path)
            if kind is MissionKind.CHANGE and top is None:
                raise Refused(
                    f"{path} is not a git repository; a change mission needs one: pass the "
                    "repository's folder, run `git init` there, or use --kind analysis"
                )
            repos.append(top or str(path))
        if not repos:
            raise Refused("a mission needs at least one repository: --repo PATH")
        workers = params.workers
        # The coordinator's launch, read before anything is recorded (its harness is checked
        # when it spawns: a mission whose coordinator cannot start is cancelled, saying why).
        launch = SpawnRequest(
            argv=params.argv,
            env=params.env,
            model=params.model,
            permission_mode=params.permission_mode,
            role=Role.COORDINATOR,
        )
        base = await asyncio.to_thread(git.current_branch, repos[0])
        mission_id, thread = fresh(MISSION), fresh(THREAD)
        now = self.clock.now()
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
        try:
            coordinator = await self.agents.spawn(
                replace(
                    launch,
                    harness=params.harness,
                    prompt=coordinator_brief(mission, workers),
                    cwd=repos[0],
                    mission=mission_id,
                    # Named after the goal: the brief's first words would name every
                    # coordinator alike.
                    name=params.name
                    or unique_name(slug(f"coord {goal}"), self.service.current().agents.values()),
                )
            )
        except Refused as exc:
            await self.service.commit(
                [
                    ev.MissionUpdated(
                        at=self.clock.now(),
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
                        at=self.clock.now(), mission=mission_id, coordinator=coordinator.id
                    )
                ]
            )
        registry = self.service.current()
        return mission_view(registry.missions[mission_id], registry)

    async def api_list(self, _conn: Connection, params: ListParams) -> list[MissionView]:
        registry = self.service.registry
        missions = sorted(registry.missions.values(), key=lambda m: m.created_at, reverse=True)
        if not params.all:
            missions = [m for m in missions if not m.status.ended] or missions[:10]
        return [mission_view(m, registry) for m in missions]

    async def api_show(self, _conn: Connection, params: MissionParams) -> MissionShown:
        registry = self.service.registry
        mission = resolve_mission(registry, params.mission)
        threads = [t for t in registry.threads.values() if t.mission == mission.id]
        ids = {t.id for t in threads}
        # By time, then in log order: ids drawn in the same millisecond are not ordered.
        messages = sorted((m for m in registry.messages.values() if m.thread in ids), key=_at)
        return {
            **mission_view(mission, registry),
            "agents": [
                assessed_view(mission, a)
                for a in registry.by_urgency(registry.mission_agents(mission.id))
            ],
            "threads": [to_builtins(t) for t in threads],
            "messages": [message_view(registry, m.id) for m in messages],
        }

    async def api_check(self, _conn: Connection, params: AgentOrMission) -> list[DeliveryChecked]:
        registry = self.service.current()
        if params.agent:
            agents = [resolve_agent(registry, params.agent)]
        else:
            agents = workers_of(registry, mission_of(registry, params.mission))
        out: list[DeliveryChecked] = []
        for agent in agents:
            delivery = await self.evidence.check(agent.id)
            out.append({"agent": agent.id, "name": agent.name, "delivery": to_builtins(delivery)})
        return out

    async def api_evidence(self, _conn: Connection, params: EvidenceParams) -> DeliveryChecked:
        """Delivery evidence a client read (a daemon without git for it, a forge integration,
        a test): recorded as if git had been read then; the supervisor judges it the same."""
        agent = resolve_agent(self.service.current(), params.agent)
        found = checked_delivery(params.delivery)
        await self.service.commit(
            [ev.DeliveryUpdated(at=self.clock.now(), agent=agent.id, delivery=found)]
        )
        return {"agent": agent.id, "name": agent.name, "delivery": to_builtins(found)}

    async def api_spawn_worker(self, conn: Connection, params: SpawnWorkerParams) -> AgentView:
        coordinator = resolve_agent(self.service.current(), params.agent)
        mission = mission_of(self.service.current(), params.mission, coordinator)
        if coordinator.id != mission.coordinator:
            raise Refused(f"only the coordinator of mission {mission.id} spawns its workers")
        if mission.status.ended:
            raise Refused(f"mission {mission.id} is over ({mission.status})")
        task = params.prompt.strip()
        repo = params.repo or mission.repositories[0]
        if repo not in mission.repositories:
            raise Refused(f"{repo} is not a repository of mission {mission.id}")
        is_git = await asyncio.to_thread(git.toplevel, repo) is not None
        launch = coordinator.launch
        worker = await self.agents.spawn(
            SpawnRequest(
                harness=params.harness or coordinator.harness,
                prompt=(task if params.verbatim else worker_brief(mission, task)) or None,
                argv=params.argv,
                cwd=repo,
                env=dict(launch.env) if launch else None,
                name=params.name,
                worktree=is_git,
                role=Role.WORKER,
                parent=coordinator.id,
                mission=mission.id,
                permission_mode=launch.permission_mode if launch else None,
            )
        )
        return agent_view(worker)

    async def api_workers(self, _conn: Connection, params: AgentOrMission) -> list[AssessedView]:
        registry = self.service.current()
        if params.agent:
            agent = resolve_agent(registry, params.agent)
            mission = mission_of(registry, params.mission, agent)
        else:
            mission = mission_of(registry, params.mission)
        return [assessed_view(mission, worker) for worker in workers_of(registry, mission)]

    async def api_invite(self, conn: Connection, params: InviteParams) -> MissionView:
        """The person, or the mission's coordinator, invites an agent; the agent is told."""
        registry = self.service.current()
        mission = resolve_mission(registry, params.mission)
        agent = resolve_agent(registry, params.agent)
        caller = caller_of(conn)
        by = HUMAN if caller.is_person else caller.agent or HUMAN
        await self.service.commit(
            [ev.MissionInvited(at=self.clock.now(), agent=agent.id, mission=mission.id, by=by)]
        )
        coordinator = self.service.registry.name_of(by) or by
        who = "the person" if by == HUMAN else f"{coordinator}, its coordinator,"
        notice = (
            f"{who} invites you to mission {mission.id} ({mission.goal}). To take part, call "
            f"the volee tool join_mission with mission {mission.id}; you can then write to its "
            "members."
        )
        message_id = await self.agents.post(agent, VOLEE, notice, MessageKind.NOTICE)
        self.messages.deliver_later(agent.id, f"[volee] {notice}", message_id)
        registry = self.service.current()
        return mission_view(registry.missions[mission.id], registry)

    async def api_join(self, conn: Connection, params: JoinParams) -> AgentView:
        if caller_of(conn).is_person:
            # Seed 002: only agents that joined through volee's MCP server change missions.
            raise Refused(
                "an agent joins a mission by itself, with volee's MCP tool join_mission; "
                "invite it with `volee mission invite MISSION AGENT`"
            )
        agent = resolve_agent(self.service.current(), params.agent)
        mission = resolve_mission(self.service.current(), params.mission)
        joined = params.joined
        await self.service.commit(
            [
                ev.MembershipChanged(
                    at=self.clock.now(), agent=agent.id, mission=mission.id, joined=joined
                )
            ]
        )
        return agent_view(self.service.current().agents[agent.id])


__all__ = ["MissionsRunner", "coordinator_brief", "message_view", "worker_brief"]

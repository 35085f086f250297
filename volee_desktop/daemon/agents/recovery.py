"""Recovery: what an agent's end means (``Exits``) and carrying it out (``RecoveryRunner``).

``Exits`` is the end policy the hosts runner is built with: it decides each end
(``core.recovery``) and commits the decision.  ``RecoveryRunner`` decides the agents
interrupted while the daemon was down (ADR 0024), once live hosts were adopted, and owns the
timers of crash restarts (M38).  Every choice comes from ``core.recovery``; this module only
gathers the facts (host records, boot time, settings, the clock), commits the events and
starts hosts.  Timers go through the daemon's ``Clock``, so tests run M38 on a fake clock.

Resumes at start run in the background: the daemon serves while they start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import AgentsConfig
from ...core import events as ev
from ...core import recovery as rules
from ...core.model import VOLEE, Agent, Interruption, MessageKind, Mission
from ...core.states import AgentState
from ...harness.base import Error as HarnessError
from ...hosts.errors import Error as HostsError
from ...hosts.records import HostRecord, host_alive, same_boot
from ..clock import Clock, Timer
from ..context import Context
from ..errors import Refused
from ..service import Service
from .host_io import read_quietly
from .runner import AgentsRunner
from .screens import Screens
from .sessions import launch_settings

log = logging.getLogger(__name__)

#: A start refused because another start of the same agent is under way is tried again after this.
BUSY_RETRY = 1.0


def policy_of(agents: AgentsConfig) -> rules.Policy:
    """The recovery policy from the ``[agents]`` table of ``config.toml``."""
    return rules.Policy(
        resume_after_reboot=agents.resume_after_reboot,
        restart_on_crash=agents.restart_on_crash,
        restart_delays=tuple(float(d) for d in agents.restart_delays),
        resume_max_age=float(agents.resume_max_age),
        resume_cap_per_start=agents.resume_cap_per_start,
    )


@dataclass
class StartReport:
    """What the start-up recovery did, for `volee daemon status`, logs and the bench."""

    found: int = 0
    decided: dict[str, int] = field(default_factory=dict)
    started: int = 0
    failed: int = 0
    seconds: float = 0.0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def summary(self) -> str:
        if not self.found:
            return "no interrupted agents at start"
        outcomes = ", ".join(f"{n} {o}" for o, n in sorted(self.decided.items()))
        return (
            f"{self.found} interrupted at start ({outcomes}); {self.started} started, "
            f"{self.failed} could not start, in {self.seconds:.2f} s"
        )


class Exits:
    """The end policy of the hosts runner: what a program's end, or a host's, leads to.

    Until the start-up recovery ran, hosts found stopped by a signal are only collected
    (``signalled``): the start-up recovery decides them with the others.
    """

    def __init__(
        self, service: Service, clock: Clock, policy: rules.Policy, screens: Screens
    ) -> None:
        self.service = service
        self.clock = clock
        self.policy = policy
        self.screens = screens  # the last screen of a program that failed to launch says why
        self.starting = True
        self.signalled: list[tuple[Agent, HostRecord]] = []

    def _agent(self, agent_id: str) -> Agent | None:
        return self.service.current().agents.get(agent_id)

    def mission(self, agent: Agent) -> Mission | None:
        if agent.mission is None:
            return None
        return self.service.current().missions.get(agent.mission)

    async def on_exit(self, agent: Agent, record: HostRecord) -> None:
        """The program ended (``record.exit`` is set): plain end, interruption, or restart."""
        fresh = self._agent(agent.id)
        status = record.exit
        if fresh is None or status is None:
            return
        if fresh.restart is not None and fresh.pid is None:
            return  # this end was handled already; its restart timer carries on
        if status.host_signal is not None and not status.stop_requested:
            # The host itself was told to stop (logout, shutdown): an interruption, not a crash.
            if self.starting:
                self.signalled.append((fresh, record))
                return
            await self._vanished(fresh, record)
            return
        output = ""
        if fresh.state is AgentState.LAUNCHING and status.code:
            # Exited before it reported anything: what it printed says why (a usage error).
            snapshot = await self.screens.snapshot(fresh.id)
            output = "\n".join(snapshot.tail(20)) if snapshot is not None else ""
        decision = rules.decide_exit(
            fresh,
            code=status.code,
            signal=status.killed_by,
            stop_requested=status.stop_requested,
            now=self.clock.now(),
            policy=self.policy,
            mission=self.mission(fresh),
            output=output,
        )
        await self.commit(decision.events())

    async def on_vanished(self, agent: Agent, record: HostRecord) -> None:
        """The host went away without an exit status while the daemon runs."""
        fresh = self._agent(agent.id)
        if fresh is None or not rules.needs_recovery(fresh):
            return
        await self._vanished(fresh, record)

    async def _vanished(self, agent: Agent, record: HostRecord) -> None:
        decision = rules.decide_vanished(
            agent,
            cause=rules.cause_of_boot(same_boot(record)),
            now=self.clock.now(),
            policy=self.policy,
            mission=self.mission(agent),
        )
        await self.commit(decision.events())

    async def commit(self, events: list[ev.Event]) -> None:
        try:
            await self.service.commit(events)
        except Refused as exc:
            # The agent was forgotten meanwhile (or the like): nothing left to decide.
            log.warning("recovery events refused: %s", exc)


class RecoveryRunner:
    """Decides the agents interrupted at start and carries out recovery; owns restart timers."""

    def __init__(self, ctx: Context, agents: AgentsRunner, exits: Exits) -> None:
        self.service = ctx.service
        self.tasks = ctx.tasks
        self.agents = agents
        self.exits = exits
        self.clock = ctx.clock
        self.min_uptime = rules.BUDGET_UPTIME
        self.timers: dict[str, tuple[float, Timer]] = {}
        self.report = StartReport()
        self._tasks: set[asyncio.Task[Any]] = set()
        ctx.closing.add(self.close)
        ctx.status.add("recovery", self.status)
        self.service.listen(self._on_event)

    @property
    def policy(self) -> rules.Policy:
        return self.exits.policy

    def status(self) -> str:
        waiting = len(self.timers)
        return f"{self.report.summary()}; {waiting} restart(s) waiting"

    async def close(self) -> None:
        for _, timer in self.timers.values():
            timer.cancel()
        self.timers.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = self.tasks.spawn(coro, name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _mission(self, agent: Agent) -> Mission | None:
        return self.exits.mission(agent)

    def _agent(self, agent_id: str) -> Agent | None:
        return self.service.current().agents.get(agent_id)

    async def _commit(self, events: list[ev.Event]) -> None:
        await self.exits.commit(events)

    # --- start-up ---------------------------------------------------------------------------

    async def recover_at_start(self, interrupted: list[tuple[Agent, HostRecord]]) -> None:
        """Re-arm waiting restarts, decide every interrupted agent, start the resumed ones.

        ``interrupted``: the agents whose host was found gone without an exit at start.
        """
        self.exits.starting = False
        began = time.perf_counter()
        registry = self.service.current()
        for agent in registry.agents.values():
            if agent.restart is not None:
                self.arm(agent.id, agent.restart.due_at)
        found: list[tuple[Agent, Interruption]] = []
        seen: set[str] = set()
        for agent, record in [*interrupted, *self.exits.signalled]:
            fresh = registry.agents.get(agent.id)
            if fresh is None or fresh.id in seen or not rules.needs_recovery(fresh):
                continue
            seen.add(fresh.id)
            found.append((fresh, rules.cause_of_boot(same_boot(record))))
        self.exits.signalled.clear()
        self.report.found = len(found)
        if not found:
            self.report.done.set()
            return
        decisions = rules.decide_all(
            found, now=self.clock.now(), policy=self.policy, missions=registry.missions
        )
        at = self.clock.now()
        await asyncio.gather(*(self._commit(d.events(at)) for d in decisions))
        for d in decisions:
            self.report.decided[d.outcome] = self.report.decided.get(d.outcome, 0) + 1
            log.info("recovery: %s -> %s (rule %d): %s", d.agent, d.outcome, d.rule, d.reason)
        starts = [d for d in decisions if d.starts]
        self._spawn(self._start_all(starts, began), "recovery-starts")

    async def _start_all(self, decisions: list[rules.Decision], began: float) -> None:
        try:
            results = await asyncio.gather(*(self._carry_out(d) for d in decisions))
            self.report.started = sum(1 for ok in results if ok)
            self.report.failed = sum(1 for ok in results if not ok)
        finally:
            self.report.seconds = time.perf_counter() - began
            self.report.done.set()
            log.info("recovery: %s", self.report.summary())

    async def _carry_out(self, decision: rules.Decision) -> bool:
        agent = self._agent(decision.agent)
        if agent is None or agent.pid is not None:
            return agent is not None  # forgotten, or someone started it meanwhile
        why = rules.cause_words(decision.cause)
        try:
            if decision.outcome == rules.RELAUNCH:
                await self.relaunch(
                    agent, reason=f"launched again: {why}", how=ev.StartKind.RELAUNCH
                )
            else:
                text = rules.resume_prompt(decision.cause)
                await self.start_with_notice(
                    agent, text, reason=f"resumed: {why}", how=ev.StartKind.RESUME
                )
            return True
        except (HostsError, HarnessError, Refused, OSError) as exc:
            now = self._agent(decision.agent)
            if now is not None and now.pid is not None:
                return True  # another start (a message) won the race: it runs
            await self._commit(
                [
                    ev.StateChanged(
                        at=self.clock.now(),
                        agent=decision.agent,
                        state=AgentState.FAILED,
                        detail=f"could not resume: {exc}",
                        progress=False,
                    )
                ]
            )
            return False

    # --- starting -----------------------------------------------------------------------------

    async def start_with_notice(
        self, agent: Agent, text: str | None, *, reason: str, how: ev.StartKind
    ) -> None:
        """Resume ``agent`` with volee's own notice as its prompt (recorded, never the person's)."""
        message = None
        if text is not None and not await self.agents.can_continue(agent):
            # Nothing of the session was saved: `resume` starts anew with its own neutral
            # notice; "your last turn was cut off" would be untrue there.
            text = None
        if text is not None and agent.harness.can_resume:
            message = await self.agents.post(agent, VOLEE, text, MessageKind.NOTICE)
            agent = self._agent(agent.id) or agent
        else:
            text = None
        await self.agents.resume(agent, prompt=text, automatic=True, reason=reason, how=how)
        if message is not None:
            await self._commit(
                [ev.MessageDelivered(at=self.clock.now(), message=message, recipient=agent.id)]
            )

    async def relaunch(self, agent: Agent, *, reason: str, how: ev.StartKind) -> None:
        """Launch again with the original task, in a new session (the first was never written)."""
        profile = self.agents.profile(agent.harness)
        settings = launch_settings(agent)
        if not Path(settings.cwd).is_dir():
            raise Refused(f"directory {settings.cwd} of agent {agent.name} no longer exists")
        plan = profile.launch(agent.id, settings, self.agents.context(agent.id, agent.harness))
        await self.agents.start_host(agent, plan, how=how, automatic=True, reason=reason)

    # --- M38 timers -----------------------------------------------------------------------

    def arm(self, agent_id: str, due_at: float) -> None:
        """(Re)arm the restart timer of an agent for ``due_at``."""
        old = self.timers.pop(agent_id, None)
        if old is not None:
            old[1].cancel()

        def fire() -> None:
            if self.timers.get(agent_id, (None,))[0] == due_at:
                del self.timers[agent_id]
            self._spawn(self.restart_due(agent_id, due_at), f"restart-{agent_id}")

        self.timers[agent_id] = (due_at, self.clock.call_at(due_at, fire))

    def disarm(self, agent_id: str) -> None:
        old = self.timers.pop(agent_id, None)
        if old is not None:
            old[1].cancel()

    async def restart_due(self, agent_id: str, due_at: float) -> None:
        """A waiting restart fell due: start the agent again, unless something replaced it."""
        agent = self._agent(agent_id)
        if agent is None or agent.restart is None or agent.restart.due_at != due_at:
            return  # forgotten, cancelled, or replaced by another start
        pending = agent.restart
        if not rules.may_restart_automatically(agent, self._mission(agent)):
            await self._commit(
                [ev.RestartCancelled(at=self.clock.now(), agent=agent_id, reason="held")]
            )
            return
        record = self.agents.record_of(agent_id)
        old = await asyncio.to_thread(read_quietly, record)
        if old is not None and old.exit is None and host_alive(old):
            return  # it runs again (a start we did not see yet): HostStarted drops the restart
        if self.agents.is_starting(agent_id):
            self.arm(agent_id, self.clock.now() + BUSY_RETRY)
            return
        reason = f"automatic restart {pending.attempt} of {pending.budget}"
        try:
            if agent.state is AgentState.LAUNCHING or agent.session is None:
                await self.relaunch(agent, reason=reason, how=ev.StartKind.RESTART)
            else:
                text = rules.continue_prompt(pending.reason)
                await self.start_with_notice(agent, text, reason=reason, how=ev.StartKind.RESTART)
        except (HostsError, HarnessError, Refused, OSError) as exc:
            now = self._agent(agent_id)
            if now is None or now.restart is None:
                return
            if self.agents.is_starting(agent_id):
                self.arm(agent_id, self.clock.now() + BUSY_RETRY)
                return
            # Directory gone, session locked, harness missing: fail with why; never again.
            at = self.clock.now()
            await self._commit(
                [
                    ev.RestartCancelled(at=at, agent=agent_id, reason=f"could not restart: {exc}"),
                    ev.StateChanged(
                        at=at,
                        agent=agent_id,
                        state=AgentState.FAILED,
                        detail=f"could not restart: {exc}",
                        progress=False,
                    ),
                ]
            )

    # --- listening ------------------------------------------------------------------------

    def _on_event(self, _seq: int, event: ev.Event) -> None:
        match event:
            case ev.RestartScheduled():
                self.arm(event.agent, event.due_at)
            case ev.RestartCancelled():
                self.disarm(event.agent)
                self._tell_parent(
                    event.agent, f"its automatic restart was called off ({event.reason})"
                )
            case ev.HostStarted() | ev.AgentForgotten():
                self.disarm(event.agent)
            case ev.StateChanged(state=AgentState.DONE):
                agent = self.service.registry.agents.get(event.agent)
                if agent is not None and rules.budget_given_back(
                    agent, turn_ended_at=event.at, min_uptime=self.min_uptime
                ):
                    self._spawn(
                        self._commit([ev.RestartBudgetReset(at=event.at, agent=event.agent)]),
                        "budget-reset",
                    )
            case _:
                pass

    def _tell_parent(self, agent_id: str, what: str) -> None:
        registry = self.service.registry
        agent = registry.agents.get(agent_id)
        parent = registry.agents.get(agent.parent) if agent and agent.parent else None
        if agent is None or parent is None:
            return
        text = f"[volee] {agent.name}: {what}"
        self._spawn(self._post_quietly(parent, text), "tell-parent")

    async def _post_quietly(self, parent: Agent, text: str) -> None:
        try:
            await self.agents.post(parent, VOLEE, text, MessageKind.NOTICE)
        except Refused as exc:
            log.warning("could not tell %s: %s", parent.name, exc)

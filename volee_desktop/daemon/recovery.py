"""The recovery runner: interrupted agents at start (ADR 0024) and crash restarts (M38).

It replaces the agents runner's ``on_exit`` / ``on_vanished`` hooks and runs
after live hosts were adopted.  Every choice comes from ``core.recovery``;
this module only gathers the facts (host records, boot time, settings, the
clock), commits the events and starts hosts.  Timers go through a ``Clock``
seam so tests run M38 on a fake clock.

Resumes at start run in the background: the daemon serves while they start.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core import events as ev
from ..core import recovery as rules
from ..core.model import VOLEE, Agent, MessageKind, Mission
from ..core.states import AgentState
from ..harness.base import Error as HarnessError
from ..hosts.errors import Error as HostsError
from ..hosts.launcher import HostClient
from ..hosts.records import HostRecord, host_alive, same_boot
from .agents import launch_settings
from .errors import Refused

if TYPE_CHECKING:
    from .main import Daemon

log = logging.getLogger(__name__)

#: A start refused because another start of the same agent is under way is tried again after this.
BUSY_RETRY = 1.0


# --- the clock seam ---------------------------------------------------------------------------


class Timer(Protocol):
    """A scheduled call that can be called off."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Wall-clock time and timers (the real loop, or a fake one in tests)."""

    def now(self) -> float: ...

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer: ...


class LoopClock:
    """``time.time`` and the running asyncio loop's timers."""

    def now(self) -> float:
        return time.time()

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.time()), fn)


@dataclass(order=True)
class _FakeTimer:
    when: float
    seq: int
    fn: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told: ``advance(s)`` runs the timers that fall due, in order."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start
        self._timers: list[_FakeTimer] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.t

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        timer = _FakeTimer(when, next(self._seq), fn)
        heapq.heappush(self._timers, timer)
        return timer

    def pending(self) -> list[float]:
        """Due times of the timers not yet run nor cancelled."""
        return sorted(t.when for t in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> int:
        """Move time on, running every timer due by then; returns how many ran."""
        target = self.t + seconds
        ran = 0
        while self._timers and self._timers[0].when <= target:
            timer = heapq.heappop(self._timers)
            self.t = max(self.t, timer.when)
            if not timer.cancelled:
                timer.fn()
                ran += 1
        self.t = target
        return ran


#: Tests replace this to run the daemon's recovery on a fake clock.
CLOCK_FACTORY: Callable[[], Clock] = LoopClock


def policy_of(config: Any) -> rules.Policy:
    """The recovery policy from ``config.Config`` (its ``[agents]`` table)."""
    a = config.agents
    return rules.Policy(
        resume_after_reboot=bool(a.resume_after_reboot),
        restart_on_crash=bool(a.restart_on_crash),
        restart_delays=tuple(float(d) for d in a.restart_delays),
        resume_max_age=float(a.resume_max_age),
        resume_cap_per_start=int(a.resume_cap_per_start),
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


class RecoveryRunner:
    """Decides and carries out recovery; owns the restart timers."""

    def __init__(self, daemon: Daemon, clock: Clock | None = None) -> None:
        self.daemon = daemon
        self.service = daemon.service
        self.agents = daemon.agents
        self.clock: Clock = clock if clock is not None else CLOCK_FACTORY()
        self.policy = policy_of(daemon.config)
        self.min_uptime = rules.BUDGET_UPTIME
        self.timers: dict[str, tuple[float, Timer]] = {}
        self.starting = True
        self.signalled: list[tuple[Agent, HostRecord]] = []
        self.report = StartReport()
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- wiring ------------------------------------------------------------------------------

    def install(self) -> None:
        """Take over the exit hooks, listen to events, run after adoption."""
        self.agents.on_exit = self.on_exit
        self.agents.on_vanished = self.on_vanished
        self.daemon.after_adoption.append(self.recover_at_start)
        self.daemon.on_close.append(self.close)
        self.daemon.status_parts["recovery"] = self.status
        self.service.listen(self._on_event)

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

    def _spawn(self, coro: Any, name: str) -> None:
        task = self.daemon.spawn_task(coro, name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _mission(self, agent: Agent) -> Mission | None:
        if agent.mission is None:
            return None
        return self.service.current().missions.get(agent.mission)

    def _agent(self, agent_id: str) -> Agent | None:
        return self.service.current().agents.get(agent_id)

    # --- ends while the daemon runs (and ends found at start) --------------------------------

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
            output = await asyncio.to_thread(last_output, record)
        decision = rules.decide_exit(
            fresh,
            code=status.code,
            signal=status.killed_by,
            stop_requested=status.stop_requested,
            now=self.clock.now(),
            policy=self.policy,
            mission=self._mission(fresh),
            output=output,
        )
        await self._commit(decision.events())

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
            mission=self._mission(agent),
        )
        await self._commit(decision.events())

    async def _commit(self, events: list[ev.Event]) -> None:
        try:
            await self.service.commit(events)
        except Refused as exc:
            # The agent was forgotten meanwhile (or the like): nothing left to decide.
            log.warning("recovery events refused: %s", exc)

    # --- start-up ---------------------------------------------------------------------------

    async def recover_at_start(self) -> None:
        """Re-arm waiting restarts, decide every interrupted agent, start the resumed ones."""
        self.starting = False
        began = time.perf_counter()
        registry = self.service.current()
        for agent in registry.agents.values():
            if agent.restart is not None:
                self.arm(agent.id, agent.restart.due_at)
        found: list[tuple[Agent, str]] = []
        seen: set[str] = set()
        for agent, record in [*self.daemon.interrupted, *self.signalled]:
            fresh = registry.agents.get(agent.id)
            if fresh is None or fresh.id in seen or not rules.needs_recovery(fresh):
                continue
            seen.add(fresh.id)
            found.append((fresh, rules.cause_of_boot(same_boot(record))))
        self.signalled.clear()
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
                await self.relaunch(agent, reason=f"launched again: {why}", how="relaunch")
            else:
                text = rules.resume_prompt(decision.cause)
                await self.start_with_notice(agent, text, reason=f"resumed: {why}", how="resume")
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
        self, agent: Agent, text: str | None, *, reason: str, how: str
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

    async def relaunch(self, agent: Agent, *, reason: str, how: str) -> None:
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
        from .agents import _read_quietly

        old = await asyncio.to_thread(_read_quietly, record)
        if old is not None and old.exit is None and host_alive(old):
            return  # it runs again (a start we did not see yet): HostStarted drops the restart
        if agent_id in self.agents._starting:
            self.arm(agent_id, self.clock.now() + BUSY_RETRY)
            return
        reason = f"automatic restart {pending.attempt} of {pending.budget}"
        try:
            if agent.state is AgentState.LAUNCHING or agent.session is None:
                await self.relaunch(agent, reason=reason, how="restart")
            else:
                text = rules.continue_prompt(pending.reason)
                await self.start_with_notice(agent, text, reason=reason, how="restart")
        except (HostsError, HarnessError, Refused, OSError) as exc:
            now = self._agent(agent_id)
            if now is None or now.restart is None:
                return
            if agent_id in self.agents._starting:
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


def last_output(record: HostRecord, lines: int = 20) -> str:
    """The last lines the program printed, from its host while it lingers ("" when gone)."""
    if not record.socket:
        return ""
    try:
        return HostClient(record.socket, timeout=2.0).screen(lines)
    except (HostsError, OSError, ValueError, KeyError):
        return ""


async def install(daemon: Daemon) -> None:
    """RUNNER_FACTORIES entry: create the recovery runner and wire it into the daemon."""
    runner = RecoveryRunner(daemon)
    runner.install()
    daemon.recovery = runner  # type: ignore[attr-defined]


def _register() -> None:
    from .main import RUNNER_FACTORIES

    if install not in RUNNER_FACTORIES:
        RUNNER_FACTORIES.append(install)


_register()

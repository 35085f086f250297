"""Recovery rules (docs recovery.md): what comes back by itself after an interruption or a crash.

Pure functions: time, configuration values and counts are passed in; nothing
here reads the clock or touches a file.  Two families:

- ``decide_interrupted`` is the decision table for an agent found interrupted
  when the daemon starts (ADR 0024), rules 1 to 9 in order.
- ``decide_exit`` / ``decide_vanished`` are the crash restarts while the daemon
  runs (M38): a restart after ``restart_delays``, within a budget counted in a
  row; ``budget_given_back`` says when a normal turn end returns the budget.

Each returns a decision whose ``events(at)`` are the events to commit, so the
timeline always holds the interruption, what volee decided and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import events as ev
from .durations import duration
from .model import Agent, Interruption, Mission, RequestKind
from .states import AgentState

MACHINE_RESTARTED = Interruption.MACHINE_RESTARTED
HOST_STOPPED = Interruption.HOST_STOPPED
#: Rule 4: a second interruption within this many seconds fails the agent.
TWICE_WINDOW = 600.0
#: M38: a turn that ends normally after the program was up this long gives the budget back.
BUDGET_UPTIME = 60.0

# Outcomes of RecoveryDecided (resume and relaunch are also the actions offered to people).
RESUME = ev.RecoveryOutcome.RESUME
RELAUNCH = ev.RecoveryOutcome.RELAUNCH
STOPPED = ev.RecoveryOutcome.STOPPED
HELD = ev.RecoveryOutcome.HELD
FAILED = ev.RecoveryOutcome.FAILED

CONTINUE_TEXT = "Continue where you left off."


@dataclass(frozen=True, kw_only=True)
class Policy:
    """The ``[agents]`` settings the rules read (built from ``config.AgentsConfig``)."""

    resume_after_reboot: bool = True
    restart_on_crash: bool = True
    restart_delays: tuple[float, ...] = (1.0, 5.0, 15.0)
    resume_max_age: float = 6 * 3600.0
    resume_cap_per_start: int = 10

    @property
    def budget(self) -> int:
        """Automatic restarts allowed in a row: the length of ``restart_delays``."""
        return len(self.restart_delays)


def cause_of_boot(same_boot: bool | None) -> Interruption:
    """Why the host is gone, from whether its record is of this boot (None: nothing says)."""
    return MACHINE_RESTARTED if same_boot is False else HOST_STOPPED


def cause_words(cause: Interruption) -> str:
    """The cause for people: "the machine restarted" / "volee's host was stopped"."""
    return "the machine restarted" if cause == MACHINE_RESTARTED else "volee's host was stopped"


def resume_prompt(cause: Interruption) -> str:
    """volee's own resume prompt (recovery.md): labelled, says what happened and what to check."""
    if cause == MACHINE_RESTARTED:
        what = "The machine restarted while you were working"
    elif cause == Interruption.CRASHED:
        what = "Your process ended without closing the session while you were working"
    else:
        what = "volee's host for your session was stopped while you were working"
    return (
        f"[volee] {what}, and your last turn was cut off: a command may not have finished "
        "and your last reply may be missing. Check the state of the work before repeating "
        "anything with side effects, then continue."
    )


def continue_prompt(why: str) -> str:
    """The prompt of an automatic restart (M38), labelled as volee's."""
    return f"[volee] Your last turn was cut off ({why}). {CONTINUE_TEXT}"


def _delay_words(seconds: float) -> str:
    return f"{seconds:g} s"


# --- start-up: the decision table ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Decision:
    """What to do with one interrupted agent: the rule that matched and the state it implies."""

    agent: str
    cause: Interruption
    was: AgentState
    rule: int
    outcome: ev.RecoveryOutcome
    reason: str
    action: str | None
    state: AgentState
    detail: str

    @property
    def starts(self) -> bool:
        """Whether volee starts the agent again now (rule 9)."""
        return self.outcome in (RESUME, RELAUNCH)

    def events(self, at: float) -> list[ev.Event]:
        """InterruptionDetected, RecoveryDecided, then the StateChanged it implies."""
        return [
            ev.InterruptionDetected(at=at, agent=self.agent, cause=self.cause, state=self.was),
            ev.RecoveryDecided(
                at=at,
                agent=self.agent,
                outcome=self.outcome,
                rule=self.rule,
                reason=self.reason,
                action=self.action,
            ),
            # Nothing progressed: rule 7 must keep seeing the age of the last real progress.
            ev.StateChanged(
                at=at, agent=self.agent, state=self.state, detail=self.detail, progress=False
            ),
        ]


def held_by_stop(agent: Agent) -> bool:
    """Rule 1: a person stopped it (or left the harness); a message lifts it."""
    return agent.held is not None and not agent.held_for_good


def mission_over(agent: Agent, mission: Mission | None) -> bool:
    """Rule 2: its mission ended (closed or cancelled): held for good."""
    return agent.held_for_good or (mission is not None and mission.status.ended)


def interrupted_twice(interruptions: Iterable[float], now: float) -> bool:
    """Rule 4: an earlier interruption within ``TWICE_WINDOW`` of this one (at ``now``)."""
    return any(now - t < TWICE_WINDOW for t in interruptions if t <= now)


def was_working(state: AgentState) -> bool:
    """Rules 5 and 9: only a turn in progress (or a launch) is carried on by itself."""
    return state in (AgentState.WORKING, AgentState.LAUNCHING)


def pending_ask(agent: Agent) -> str | None:
    """What a needs-input agent waited for in the middle of its turn (a permission or a
    question: the turn goes on once answered), in words; None otherwise.

    A kill then ends a run like a kill while working (M38; docs/recovery-design.md): it is
    restarted, and the restart says the permission must be asked for again."""
    request = agent.request
    if agent.state is not AgentState.NEEDS_INPUT or request is None or request.answered:
        return None
    if request.kind not in (RequestKind.PERMISSION, RequestKind.QUESTION):
        return None
    return request.summary or request.tool or str(request.kind)


def too_old(last_progress_at: float, now: float, max_age: float) -> bool:
    """Rule 7: the last progress is older than ``resume_max_age``."""
    return now - last_progress_at > max_age


def over_cap(resumed_in_this_start: int, cap: int) -> bool:
    """Rule 8: this start already resumed ``cap`` agents."""
    return resumed_in_this_start >= cap


def decide_interrupted(
    agent: Agent,
    *,
    cause: Interruption,
    now: float,
    policy: Policy,
    mission: Mission | None = None,
    resumed_in_this_start: int = 0,
    session_written: bool = True,
) -> Decision:
    """The first rule of recovery.md's table that matches ``agent`` decides.

    ``agent`` is as the registry holds it before the interruption is recorded;
    ``session_written`` is False when the harness never reported its session
    (interrupted while launching), so a resume has nothing to continue.
    """
    words = cause_words(cause)
    was = agent.state

    def make(
        rule: int,
        outcome: ev.RecoveryOutcome,
        reason: str,
        state: AgentState,
        detail: str,
        action: str | None = None,
    ) -> Decision:
        return Decision(
            agent=agent.id,
            cause=cause,
            was=was,
            rule=rule,
            outcome=outcome,
            reason=reason,
            action=action,
            state=state,
            detail=detail,
        )

    def waiting(rule: int, reason: str) -> Decision:
        return make(
            rule, STOPPED, reason, AgentState.STOPPED, f"interrupted: {reason}", action=RESUME
        )

    if held_by_stop(agent):
        return make(
            1,
            HELD,
            f"{words}; it was stopped ({agent.held}): it comes back only when someone writes to it",
            AgentState.STOPPED,
            agent.held or "stopped by you",
        )
    if mission_over(agent, mission):
        return make(
            2,
            HELD,
            f"{words}; its mission is over, so it stays stopped for good",
            AgentState.STOPPED,
            "mission over",
        )
    if not agent.harness.can_resume:
        reason = f"{words}; its harness ({agent.harness}) cannot resume a conversation"
        return make(
            3, STOPPED, reason, AgentState.STOPPED, f"interrupted: {reason}", action=RELAUNCH
        )
    if interrupted_twice(agent.interruptions, now):
        reason = "interrupted twice within 10 minutes; not resumed"
        return make(4, FAILED, reason, AgentState.FAILED, reason)
    if not was_working(was):
        reason = f"{words} while it was {was}; a message to it resumes it"
        return make(5, STOPPED, reason, AgentState.STOPPED, f"interrupted: {words}")
    if not policy.resume_after_reboot:
        return waiting(6, f"{words}; resume_after_reboot is off")
    if too_old(agent.last_progress_at, now, policy.resume_max_age):
        age = duration(now - agent.last_progress_at)
        limit = duration(policy.resume_max_age)
        return waiting(
            7, f"{words}; its last progress was {age} ago, older than resume_max_age ({limit})"
        )
    if over_cap(resumed_in_this_start, policy.resume_cap_per_start):
        return waiting(
            8,
            f"{words}; over the per-start cap ({policy.resume_cap_per_start} already resumed "
            "in this start)",
        )
    if was is AgentState.LAUNCHING and not session_written:
        reason = (
            f"{words} while it was launching; its harness never wrote its session, so it is "
            "launched again with its original task"
        )
        return make(9, RELAUNCH, reason, AgentState.LAUNCHING, f"relaunched: {words}")
    reason = f"{words} while it was {was}: resumed with volee's resume prompt"
    return make(9, RESUME, reason, AgentState.WORKING, f"resumed: {words}")


def recovery_order(agents: Sequence[Agent]) -> list[Agent]:
    """Rule 8's order: the most recent work first (then the id, for a total order)."""
    return sorted(agents, key=lambda a: (-a.last_progress_at, a.id))


def decide_all(
    interrupted: Sequence[tuple[Agent, Interruption]],
    *,
    now: float,
    policy: Policy,
    missions: dict[str, Mission] | None = None,
) -> list[Decision]:
    """Decisions for every agent found interrupted at one start, in rule 8's order."""
    causes = {agent.id: cause for agent, cause in interrupted}
    known = missions or {}
    out: list[Decision] = []
    resumed = 0
    for agent in recovery_order([a for a, _ in interrupted]):
        decision = decide_interrupted(
            agent,
            cause=causes[agent.id],
            now=now,
            policy=policy,
            mission=known.get(agent.mission) if agent.mission else None,
            resumed_in_this_start=resumed,
            session_written=session_written(agent),
        )
        if decision.starts:
            resumed += 1
        out.append(decision)
    return out


def session_written(agent: Agent) -> bool:
    """Whether the harness reported its session: it left ``launching`` (SessionStart came)."""
    return agent.state is not AgentState.LAUNCHING


def needs_recovery(agent: Agent) -> bool:
    """Whether a gone host of ``agent`` is an interruption still to decide (not done already).

    After a decision the agent has no program pid (InterruptionDetected clears
    it) or a new host; a waiting restart is the restart timer's business.
    """
    if agent.restart is not None:
        return False
    return agent.pid is not None or (agent.state.live and agent.interrupted is None)


# --- while the daemon runs: crash restarts (M38) -----------------------------------------


@dataclass(frozen=True, kw_only=True)
class ExitDecision:
    """What follows a program's end or a host's disappearance while the daemon runs."""

    agent: str
    events_before: tuple[ev.ProgramExited | ev.InterruptionDetected]
    restart: ev.RestartScheduled | None
    state: AgentState
    detail: str

    def events(self) -> list[ev.Event]:
        """The events to commit, in order: the end, the restart if any, the state it implies."""
        (end,) = self.events_before
        out: list[ev.Event] = [end]
        if self.restart is not None:
            out.append(self.restart)
        # Nothing progressed: the age rule must keep seeing the last real progress.
        out.append(
            ev.StateChanged(
                at=end.at, agent=self.agent, state=self.state, detail=self.detail, progress=False
            )
        )
        return out


def launch_failed_words(why: str, output: str) -> str:
    """ "could not start: exited with code 2: error: invalid value 'untrusted' for …": the last
    line of ``output`` that names an error, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    said = (errors or lines or [""])[-1]
    return f"could not start: {why}: {said}" if said else f"could not start: {why}"


def restart_words(why: str, delay: float, attempt: int, budget: int) -> str:
    """ "killed by SIGKILL; continuing in 5 s (automatic restart 2 of 3)"."""
    return f"{why}; continuing in {_delay_words(delay)} (automatic restart {attempt} of {budget})"


def budget_spent_words(budget: int) -> str:
    """The reason of a run that is not restarted again."""
    restarts = "restart" if budget == 1 else "restarts"
    return f"not restarted again after {budget} automatic {restarts} in a row (reply to continue)"


def _schedule(
    agent: Agent, why: str, *, now: float, policy: Policy
) -> tuple[ev.RestartScheduled | None, AgentState, str]:
    budget = policy.budget
    attempt = agent.restarts_in_row + 1
    if attempt > budget:
        return None, AgentState.FAILED, f"{why}; {budget_spent_words(budget)}"
    delay = policy.restart_delays[attempt - 1]
    words = restart_words(why, delay, attempt, budget)
    scheduled = ev.RestartScheduled(
        at=now, agent=agent.id, due_at=now + delay, attempt=attempt, budget=budget, reason=why
    )
    # The run stays on while it waits (no "finished" meanwhile); a launch stays a launch.
    state = AgentState.LAUNCHING if agent.state is AgentState.LAUNCHING else AgentState.WORKING
    return scheduled, state, words


def decide_exit(
    agent: Agent,
    *,
    code: int | None,
    signal: str | None,
    stop_requested: bool,
    now: float,
    policy: Policy,
    mission: Mission | None = None,
    output: str = "",
) -> ExitDecision:
    """A program ended while the daemon runs: a plain end, or a crash that is restarted (M38).

    A program that exits with an error code before it ever reported anything (still
    ``launching``: a usage error, a bad flag, a missing login) failed to launch: it would
    fail the same way again, so it is not restarted, and ``output`` (its last line) says why.
    """
    pending = pending_ask(agent)
    during = was_working(agent.state) or pending is not None
    exited = ev.ProgramExited(at=now, agent=agent.id, code=code, signal=signal, during_turn=during)
    held = agent.held is not None or stop_requested or mission_over(agent, mission)
    if not held and agent.state is AgentState.LAUNCHING and signal is None and code:
        return ExitDecision(
            agent=agent.id,
            events_before=(exited,),
            restart=None,
            state=AgentState.FAILED,
            detail=launch_failed_words(exited.description, output),
        )
    if held:
        detail = agent.detail if agent.state is AgentState.STOPPED and agent.detail else None
        return ExitDecision(
            agent=agent.id,
            events_before=(exited,),
            restart=None,
            state=AgentState.STOPPED,
            detail=detail or agent.held or "stopped by you",
        )
    if exited.crashed and during and policy.restart_on_crash:
        why = exited.description
        if pending is not None:
            why = f"{why} while it waited for you ({pending}); that was never answered: ask again"
        restart, state, detail = _schedule(agent, why, now=now, policy=policy)
        return ExitDecision(
            agent=agent.id, events_before=(exited,), restart=restart, state=state, detail=detail
        )
    if exited.crashed:
        return ExitDecision(
            agent=agent.id,
            events_before=(exited,),
            restart=None,
            state=AgentState.FAILED,
            detail=exited.description,
        )
    detail = agent.detail if agent.state is AgentState.STOPPED else "exited"
    return ExitDecision(
        agent=agent.id,
        events_before=(exited,),
        restart=None,
        state=AgentState.STOPPED,
        detail=detail,
    )


def decide_vanished(
    agent: Agent,
    *,
    cause: Interruption,
    now: float,
    policy: Policy,
    mission: Mission | None = None,
) -> ExitDecision:
    """A host gone under the running daemon with no exit status (M38, resume_after_reboot)."""
    words = cause_words(cause)
    interrupted = ev.InterruptionDetected(at=now, agent=agent.id, cause=cause, state=agent.state)
    before = (interrupted,)

    def plain(state: AgentState, detail: str) -> ExitDecision:
        return ExitDecision(
            agent=agent.id, events_before=before, restart=None, state=state, detail=detail
        )

    if mission_over(agent, mission):
        return plain(AgentState.STOPPED, "mission over")
    if held_by_stop(agent):
        return plain(AgentState.STOPPED, agent.held or "stopped by you")
    if not was_working(agent.state):
        return plain(AgentState.STOPPED, f"interrupted: {words}")
    if not policy.resume_after_reboot:
        return plain(AgentState.STOPPED, f"interrupted: {words}; resume_after_reboot is off")
    restart, state, detail = _schedule(agent, words, now=now, policy=policy)
    return ExitDecision(
        agent=agent.id, events_before=before, restart=restart, state=state, detail=detail
    )


def restart_due(agent: Agent, now: float) -> bool:
    """Whether the agent's waiting restart is due (and still waits)."""
    return agent.restart is not None and agent.restart.due_at <= now


def budget_given_back(
    agent: Agent, *, turn_ended_at: float, min_uptime: float = BUDGET_UPTIME
) -> bool:
    """M38: a normal turn end after ``min_uptime`` of the program gives the budget back."""
    if agent.restarts_in_row == 0 or agent.host_started_at is None:
        return False
    return turn_ended_at - agent.host_started_at >= min_uptime


def may_restart_automatically(agent: Agent, mission: Mission | None = None) -> bool:
    """Never for a held agent nor one whose mission is over (a waiting restart is dropped)."""
    return not held_by_stop(agent) and not mission_over(agent, mission)

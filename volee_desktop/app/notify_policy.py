"""When the tray app pops up a notification: pure rules plus a throttle on a given clock.

Qt-free and clock-free: ``candidates`` turns one applied event (with the
agents and mission before and after it) into the notifications it deserves;
``Throttle`` decides when they are shown, given ``now``:

- once per transition: only an agent *entering* needs-input (or asking
  another thing while it waits), failed or lost, or finishing a turn (done,
  off by default); a mission *entering* awaiting-approval; a
  ``recovery-decided`` whose outcome is not a resume (interrupted agents that
  were not brought back);
- a needs-input notification names the request (what, where, since when) and
  offers its answers; it holds only while that very request is open;
- never for the person's own stop (the agent is held), nor for an agent whose
  output view or reply box the person has in front of them (``focused``);
- each kind can be turned off (``[notifications]`` in config.toml) or all paused;
- at most one per agent (or mission) per ``PER_SUBJECT`` seconds: a later one
  waits and is dropped if it no longer holds when its turn comes (a new request
  of the agent does not wait: the person answered, and it asks the next thing);
- a burst becomes one summary: more than ``BURST_COUNT`` within
  ``BURST_WINDOW`` seconds are shown as one ("5 agents need you").
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from volee_desktop.core import events as ev
from volee_desktop.core import limits
from volee_desktop.core.events import RecoveryOutcome
from volee_desktop.core.model import Agent, MissionStatus, RequestKind
from volee_desktop.core.registry import Registry
from volee_desktop.core.requests import unseen
from volee_desktop.core.states import AgentState

from .attention import choices_of, project_of
from .live import Change

BURST_COUNT = 3
BURST_WINDOW = 2.0
PER_SUBJECT = 10.0
SETTLE = 0.1  # events pushed together are released together (and may become a summary)
STALE = 600.0  # facts replayed after a reconnect that are older than this are not news

NOT_NEWS_OUTCOMES = frozenset({RecoveryOutcome.RESUME, RecoveryOutcome.RELAUNCH})
BUSY = frozenset({AgentState.WORKING, AgentState.NEEDS_INPUT, AgentState.LAUNCHING})


class Kind(StrEnum):
    """What a notification is about; the values are the keys of ``[notifications]``."""

    NEEDS_INPUT = "needs_input"
    FAILED = "failed"
    LOST = "lost"
    INTERRUPTED = "interrupted"
    MISSION = "mission"
    DONE = "done"  # an agent finished its turn (off by default)
    LIMIT = "limit"  # agents stopped by a usage limit: one notification for all (limits.md)


class Action(StrEnum):
    """The button of a notification."""

    OPEN = "Open"  # open the agent (or the list, for a summary)
    REVIEW = "Review"  # open the mission's approval dialog


@dataclass(frozen=True)
class NotifySettings:
    """Which kinds are on, and whether the person paused notifications."""

    needs_input: bool = True
    failed: bool = True
    lost: bool = True
    interrupted: bool = True
    mission: bool = True
    done: bool = False
    limit: bool = True
    paused: bool = False

    def allows(self, kind: Kind) -> bool:
        return not self.paused and bool(getattr(self, kind.value))


@dataclass(frozen=True)
class Notice:
    """A notification to show: title, body, its actions, and what it is about.

    ``action`` is the default one (a click on the notification); ``choices`` are the
    answers it offers as buttons (``(answer, label)``: allow, deny, option:N) and ``reply``
    whether it has a reply field; ``request`` is the id of the request it names: once that
    request is no longer open, the notification no longer holds.
    """

    kind: Kind | None  # None: a summary of several
    title: str
    body: str
    action: Action
    agent: str | None = None
    mission: str | None = None
    subjects: tuple[str, ...] = ()
    state: AgentState | None = None  # the state it announces (checked again before showing)
    request: str | None = None
    choices: tuple[tuple[str, str], ...] = ()
    reply: bool = False
    name: str = ""  # the agent's name (a summary lists them)

    @property
    def subject(self) -> str:
        return self.agent or self.mission or (LIMIT_SUBJECT if self.kind is Kind.LIMIT else "")


REVIEW_CHOICE = "review"  # a done agent's notification: open its Changes view
LIMIT_SUBJECT = "limits"  # the one limit notification replaces the one before


def limit_notice(registry: Registry, now: float) -> Notice | None:
    """ "Usage limit reached" — "27 agents wait; resets 16:20 (in 2 h 13 min)", for every agent
    that waits on a limit (core.limits.notice), or None when none waits."""
    agents = [a for a in registry.agents.values() if not a.held]
    notice = limits.notice(agents, now, clock_time)
    if notice is None:
        return None
    waiting = tuple(a.id for a in agents if limits.waits(a))
    return Notice(Kind.LIMIT, notice.title, notice.body, Action.OPEN, subjects=waiting)


def clock_time(at: float) -> str:
    """``10:42`` (local time): "waiting since" stays true however long the card stays up."""
    return time.strftime("%H:%M", time.localtime(at))


def request_title(agent: Agent) -> str:
    """``api-fixer asks to run Bash``, ``api-fixer asks a question``, ``api-fixer needs you``."""
    request = agent.request
    if request is not None and request.kind is RequestKind.PERMISSION and request.tool:
        return f"{agent.name} asks to use {request.tool}"
    if request is not None and request.kind is RequestKind.QUESTION:
        return f"{agent.name} asks a question"
    return f"{agent.name} needs you"


def request_body(agent: Agent) -> str:
    """What it asks (one line; what that line leaves out, when it does), then where and since
    when: the project and the time."""
    request = agent.request
    what = (request.summary if request is not None else "") or agent.detail or "needs your input"
    hidden = unseen(request)
    if hidden is not None:
        what = f"{what}\n{hidden}"
    where = project_of(agent)
    since = request.at if request is not None and request.at else agent.state_since
    tail = " · ".join(
        p for p in (f"in {where}" if where else "", f"waiting since {clock_time(since)}") if p
    )
    return f"{what}\n{tail}"


def needs_input_notice(agent: Agent) -> Notice:
    """The notification of an agent that needs you: its request, its answers, Open; only Open
    when its one line does not show all of it (the person reads it all in the agent's window
    before answering)."""
    request = agent.request
    kind = request.kind if request is not None else RequestKind.DIALOG
    options = tuple(request.options) if request is not None else ()
    hidden = unseen(request) is not None
    return Notice(
        Kind.NEEDS_INPUT,
        request_title(agent),
        request_body(agent),
        Action.OPEN,
        agent=agent.id,
        state=AgentState.NEEDS_INPUT,
        request=request.id if request is not None else None,
        choices=() if hidden else choices_of(kind, options),
        reply=kind is not RequestKind.PERMISSION and not hidden,
        name=agent.name,
    )


def _state_notice(agent: Agent) -> Notice | None:
    state = agent.state
    if state is AgentState.NEEDS_INPUT:
        return needs_input_notice(agent)
    if state is AgentState.FAILED:
        return Notice(
            Kind.FAILED,
            f"{agent.name} failed",
            agent.detail or "the agent failed",
            Action.OPEN,
            agent=agent.id,
            state=state,
        )
    if state is AgentState.LOST:
        return Notice(
            Kind.LOST,
            f"{agent.name} was lost",
            agent.detail or "its program is gone",
            Action.OPEN,
            agent=agent.id,
            state=state,
        )
    return None


def done_notice(agent: Agent, message: str) -> Notice:
    """An agent finished its turn: its last message (``last_assistant_message`` of Stop)."""
    where = project_of(agent)
    body = message or agent.detail or "finished its turn"
    # An agent with a branch or worktree of its own has a change to review (its Changes view).
    review = ((REVIEW_CHOICE, "Review"),) if agent.worktree or agent.branch else ()
    return Notice(
        Kind.DONE,
        f"{agent.name} is done" + (f" in {where}" if where else ""),
        body,
        Action.OPEN,
        agent=agent.id,
        state=AgentState.DONE,
        choices=review,
    )


def candidates(
    change: Change,
    settings: NotifySettings,
    focused: frozenset[str] = frozenset(),
    now: float | None = None,
    registry: Registry | None = None,
) -> list[Notice]:
    """The notifications one applied event deserves (before throttling); with the
    ``registry``, one for all the agents that wait on a limit when one more does."""
    event = change.event
    if settings.paused or isinstance(event, ev.StopRequested):
        return []
    if now is not None and event.at < now - STALE:
        return []
    found: list[Notice] = []
    for before, after in change.agents:
        if after is None or after.id in focused or after.held:
            continue  # forgotten, in front of the person, or stopped by the person
        if registry is not None and limits.waits(after) and not (before and limits.waits(before)):
            notice = limit_notice(registry, event.at if now is None else now)
            if notice is not None:
                found.append(notice)
            continue
        if isinstance(event, ev.RecoveryDecided) and event.agent == after.id:
            if event.outcome not in NOT_NEWS_OUTCOMES:
                found.append(
                    Notice(
                        Kind.INTERRUPTED,
                        f"{after.name} was interrupted",
                        f"{event.reason} (not resumed)",
                        Action.OPEN,
                        agent=after.id,
                    )
                )
            continue
        if before is not None and before.state is after.state:
            if (
                after.state is AgentState.NEEDS_INPUT
                and after.request is not None
                and before.request is not None
                and after.request.summary != before.request.summary
                and not before.request.answered
            ):
                found.append(needs_input_notice(after))  # another dialog, still waiting
            continue  # not a transition
        if after.state is AgentState.DONE:
            if before is not None and before.state in BUSY:
                found.append(done_notice(after, after.detail))
            continue
        notice = _state_notice(after)
        if notice is not None:
            found.append(notice)
    if change.mission is not None:
        old, new = change.mission
        if (
            new is not None
            and new.status is MissionStatus.AWAITING_APPROVAL
            and (old is None or old.status is not MissionStatus.AWAITING_APPROVAL)
        ):
            found.append(
                Notice(
                    Kind.MISSION,
                    "A mission waits for your approval",
                    new.goal,
                    Action.REVIEW,
                    mission=new.id,
                )
            )
    return [n for n in found if n.kind is not None and settings.allows(n.kind)]


def still_holds(notice: Notice, registry: Registry, focused: frozenset[str]) -> bool:
    """Whether a waiting notification is still true when its turn comes."""
    if notice.agent is not None:
        agent = registry.agents.get(notice.agent)
        if agent is None or agent.id in focused or agent.held:
            return False
        if notice.kind is Kind.INTERRUPTED:
            return agent.interrupted is not None and not agent.live
        if notice.kind is Kind.NEEDS_INPUT:
            return agent.state is AgentState.NEEDS_INPUT and open_request(agent) == notice.request
        return agent.state is notice.state
    if notice.mission is not None:
        mission = registry.missions.get(notice.mission)
        return mission is not None and mission.status is MissionStatus.AWAITING_APPROVAL
    if notice.kind is Kind.LIMIT:  # withdrawn when the limit lifts (or all were continued)
        return any(_still_limited(registry.agents.get(s)) for s in notice.subjects)
    if notice.subjects:  # a summary holds while any of its agents still waits
        return any(_still_waiting(registry.agents.get(s)) for s in notice.subjects)
    return True


def open_request(agent: Agent) -> str | None:
    """The id of the agent's request while it is open (None when answered or when none)."""
    request = agent.request
    return request.id if request is not None and not request.answered else None


def _still_limited(agent: Agent | None) -> bool:
    return agent is not None and not agent.held and limits.waits(agent)


def _still_waiting(agent: Agent | None) -> bool:
    return agent is not None and not agent.held and agent.state is AgentState.NEEDS_INPUT


def summary_of(notices: list[Notice]) -> Notice:
    """One notification standing for several."""
    n = len(notices)
    kinds = {x.kind for x in notices}
    names = [x.title for x in notices]
    if kinds == {Kind.NEEDS_INPUT}:
        # Each with what it asks: "api-fixer: Bash: rm -rf build/".
        names = [f"{x.name or x.title}: {x.body.splitlines()[0]}" for x in notices]
    if kinds == {Kind.NEEDS_INPUT}:
        title = f"{n} agents need you"
    elif kinds == {Kind.INTERRUPTED}:
        title = f"{n} interrupted agents were not resumed"
    elif kinds <= {Kind.FAILED, Kind.LOST}:
        title = f"{n} agents failed or were lost"
    else:
        title = f"{n} things need your attention"
    sep = "\n" if kinds == {Kind.NEEDS_INPUT} else ", "
    body = sep.join(names[:5]) + (f"{sep}and {n - 5} more" if n > 5 else "")
    return Notice(None, title, body, Action.OPEN, subjects=tuple(x.subject for x in notices))


@dataclass
class _Waiting:
    notice: Notice
    due: float


class Throttle:
    """Spaces notifications out on a clock given by the caller (a fake one in tests)."""

    def __init__(self) -> None:
        self._waiting: dict[str, _Waiting] = {}  # by subject: the latest replaces an older one
        self._held: list[Notice] = []  # ready, but a burst window is open
        self._hold_until = 0.0
        self._shown: deque[float] = deque()
        self._last: dict[str, float] = {}
        self._last_request: dict[str, str] = {}  # the request each subject's last one named
        self._batch_due: float | None = None

    def offer(self, notices: Iterable[Notice], now: float) -> None:
        """Queue notifications; ``flush`` shows them once due."""
        for notice in notices:
            last = self._last.get(notice.subject)
            # Join the batch still settling, so that events pushed together leave together
            # (a timer set for the first must not release only part of them).
            if self._batch_due is None or self._batch_due <= now:
                self._batch_due = now + SETTLE
            due = self._batch_due
            # A new request is news however soon it follows the last one (the person just
            # answered and the agent asks the next thing); other repeats wait PER_SUBJECT.
            new_request = notice.request is not None and notice.request != self._last_request.get(
                notice.subject
            )
            if last is not None and not new_request:
                due = max(due, last + PER_SUBJECT)
            self._waiting[notice.subject] = _Waiting(notice, due)

    def clear(self) -> None:
        """Forget everything waiting (notifications were paused)."""
        self._waiting.clear()
        self._held.clear()

    def next_due(self) -> float | None:
        """When ``flush`` has something to do next, or None."""
        times = [w.due for w in self._waiting.values()]
        if self._held:
            times.append(self._hold_until)
        return min(times) if times else None

    def flush(
        self, now: float, registry: Registry, focused: frozenset[str] = frozenset()
    ) -> list[Notice]:
        """The notifications to show now."""
        ready = [w.notice for w in self._waiting.values() if w.due <= now]
        for notice in ready:
            del self._waiting[notice.subject]
        batch = [n for n in (*self._held, *ready) if still_holds(n, registry, focused)]
        self._held = []
        if not batch:
            return []
        if now < self._hold_until:
            self._held = batch
            return []
        while self._shown and self._shown[0] <= now - BURST_WINDOW:
            self._shown.popleft()
        room = BURST_COUNT - len(self._shown)
        if len(batch) <= room:
            out = batch
        elif len(batch) == 1:
            # The window is full: wait until it has room, collecting whatever else comes.
            self._held = batch
            self._hold_until = self._shown[0] + BURST_WINDOW
            return []
        else:
            out = [summary_of(batch)]
            self._hold_until = now + BURST_WINDOW
        self._shown.extend(now for _ in out)
        for notice in batch:
            self._last[notice.subject] = now
            if notice.request is not None:
                self._last_request[notice.subject] = notice.request
        return out


def subjects_of(notice: Notice) -> tuple[str, ...]:
    """The agents or missions a notification is about."""
    return notice.subjects if notice.kind is None else (notice.subject,)


__all__ = [
    "Action",
    "Kind",
    "Notice",
    "NotifySettings",
    "Throttle",
    "candidates",
    "still_holds",
    "subjects_of",
    "summary_of",
]

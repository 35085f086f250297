"""When a plan's usage limit stops agents: who waits, when each is continued, what is said.

Pure rules (docs/limits.md): time comes in as ``now``, clock times as a formatter the
daemon gives (the core never reads the clock or the time zone).

- An agent *waits on a limit* when it is alive at its prompt (``idle``) and its last turn
  ended on a limit (``Agent.limit.ended``).  While its harness still retries, the limit is
  only a detail ("retrying: 5-hour limit, attempt 4/10").
- It is *continued by volee* at the limit's reset plus a margin, staggered, only when
  nobody stopped or held it, its mission has not ended (both hold it), volee has not
  continued it for this limit already, and its automatic continues since its last finished
  turn are under the budget (the restart bounds of M38: ``restart_delays``' length).
- Rate limits and overload that the harness retries by itself change only the detail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import events as ev
from .durations import duration
from .model import Agent, Limit, LimitKind
from .states import AgentState

#: How each kind reads in a row, a notification or a prompt.
KIND_TEXT = {
    LimitKind.FIVE_HOUR: "5-hour limit",
    LimitKind.SEVEN_DAY: "weekly limit",
    LimitKind.RATE: "rate limit",
    LimitKind.OVERLOADED: "overloaded",
}

Clock = Callable[[float], str]  # epoch seconds -> "16:20" (local time, given by the daemon)


@dataclass(frozen=True)
class LimitPolicy:
    """``[limits]`` of config.toml, in seconds."""

    resume: bool = True
    margin: float = 60.0  # after the reset, before the first agent is continued
    stagger: float = 5.0  # between two agents continued at the same reset
    unknown_wait: float = 900.0  # after the turn ended, when the harness gave no reset time
    budget: int = 3  # automatic continues since the agent's last finished turn


@dataclass(frozen=True)
class Due:
    """An agent volee continues at ``at``."""

    agent: str
    at: float


def limit_of(hit: ev.LimitHit) -> Limit:
    """The agent's limit after ``limit-hit``."""
    return Limit(
        kind=hit.kind,
        at=hit.at,
        resets_at=hit.resets_at,
        ended=hit.ended,
        attempt=hit.attempt,
        attempts=hit.attempts,
        message=hit.message,
    )


def waits(agent: Agent) -> bool:
    """Whether the agent's turn ended on a limit and it waits at its prompt."""
    limit = agent.limit
    return agent.state is AgentState.IDLE and limit is not None and limit.ended


def retrying(agent: Agent) -> bool:
    """Whether the agent's harness is retrying a limit in the turn that runs."""
    limit = agent.limit
    return agent.state is AgentState.WORKING and limit is not None and not limit.ended


def lifts_at(limit: Limit, unknown_wait: float) -> float:
    """When the limit is taken to lift: its reset time, or (none given, or one already past
    when the turn ended: it was hit again) ``unknown_wait`` after the turn ended."""
    if limit.resets_at is not None and limit.resets_at > limit.at:
        return limit.resets_at
    return limit.at + unknown_wait


def why_not(agent: Agent, policy: LimitPolicy) -> str | None:
    """Why volee does not continue a waiting agent on its own (None: it does)."""
    if not policy.resume:
        return "automatic continue is off ([limits] resume)"
    if agent.held_for_good:
        return "its mission ended"
    if agent.held:
        return "you stopped it"
    limit = agent.limit
    if limit is not None and agent.limit_continued == limit.at:
        return "volee continued it for this limit already"
    if agent.limit_continues >= policy.budget:
        return f"the limit stopped it again after {agent.limit_continues} continues"
    return None


def schedule(agents: Iterable[Agent], policy: LimitPolicy) -> list[Due]:
    """When volee continues each waiting agent: reset + margin, then one agent per
    ``stagger`` among those of the same reset (oldest limit first)."""
    ready = [a for a in agents if waits(a) and why_not(a, policy) is None]
    keyed = sorted(
        ready,
        key=lambda a: (lifts_at(_limit(a), policy.unknown_wait), _limit(a).at, a.id),
    )
    out: list[Due] = []
    place: dict[float, int] = {}
    for agent in keyed:
        lift = lifts_at(_limit(agent), policy.unknown_wait)
        index = place.get(lift, 0)
        place[lift] = index + 1
        out.append(Due(agent.id, lift + policy.margin + index * policy.stagger))
    return out


def _limit(agent: Agent) -> Limit:
    assert agent.limit is not None  # only waiting agents are scheduled
    return agent.limit


def continue_prompt(limit: Limit, clock: Clock, now: float) -> str:
    """volee's labelled prompt that continues an agent after its limit."""
    reached = clock(limit.at)
    what = "your plan's usage limit" if limit.kind.plan else f"the API's {KIND_TEXT[limit.kind]}"
    lifted = clock(limit.resets_at if limit.resets_at is not None else now)
    return (
        f"[volee] {what} was reached at {reached} and reset at {lifted}; "
        "continue where you left off"
    )


def detail(limit: Limit) -> str:
    """The row's detail for a limit seen while the harness retries."""
    text = KIND_TEXT[limit.kind]
    if limit.attempt is not None and limit.attempts is not None:
        return f"retrying: {text}, attempt {limit.attempt}/{limit.attempts}"
    return f"retrying: {text}"


def limited_text(limit: Limit, clock: Clock) -> str:
    """What a waiting agent's row says: "limited — resets 16:20"."""
    if limit.resets_at is None:
        return f"limited — {KIND_TEXT[limit.kind]}, reset time not known"
    return f"limited — resets {clock(limit.resets_at)}"


@dataclass(frozen=True)
class Notice:
    """The one notification for every agent a limit stopped."""

    key: float  # the reset it is about (0: not known): a new reset is a new notice
    title: str
    body: str
    count: int

    @property
    def text(self) -> str:
        return f"{self.title} — {self.body}"


def notice(agents: Iterable[Agent], now: float, clock: Clock) -> Notice | None:
    """ "Usage limit reached — 27 agents wait; resets 16:20 (in 2 h 13 min)", or None when no
    agent waits (the notice is withdrawn).  The reset named is the earliest."""
    waiting = [a for a in agents if waits(a)]
    if not waiting:
        return None
    limits = [_limit(a) for a in waiting]
    plan = any(limit.kind.plan for limit in limits)
    title = "Usage limit reached" if plan else "Rate limit reached"
    count = len(waiting)
    who = "1 agent waits" if count == 1 else f"{count} agents wait"
    resets = [limit.resets_at for limit in limits if limit.resets_at is not None]
    if resets:
        first = min(resets)
        when = f"resets {clock(first)} (in {duration(first - now)})"
    else:
        first = 0.0
        when = "reset time not known"
    return Notice(key=first, title=title, body=f"{who}; {when}", count=count)

"""What the tray icon shows: counts by state, kept incrementally, and the tooltip text.

Qt-free so that the rules (which mark, which words) are unit-tested without a
display.  ``tray.py`` draws what ``TraySummary`` says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from volee_desktop.core import limits
from volee_desktop.core.model import Agent
from volee_desktop.core.states import AgentState


class Mark(StrEnum):
    """The one mark the tray icon carries, besides the needs-input badge."""

    PLAIN = "plain"  # nothing live
    QUIET = "quiet"  # agents live but none working
    WORKING = "working"
    LIMITED = "limited"  # agents wait for a usage limit's reset (core.limits.waits)
    WARNING = "warning"  # something failed or was lost


class StateCounts:
    """How many agents are in each state, and how many are marked interrupted."""

    def __init__(self) -> None:
        self.states: Counter[AgentState] = Counter()
        self.interrupted = 0
        self.limited = 0  # waiting on a usage limit (core.limits.waits)
        self.denied = 0  # resting after a turn that ended on a denial (rows say "denied")
        # done / idle agents another count already names (denied, interrupted, limited)
        self.named: Counter[AgentState] = Counter()

    @classmethod
    def of(cls, agents: Iterable[Agent]) -> StateCounts:
        counts = cls()
        for agent in agents:
            counts.move(None, agent)
        return counts

    def move(self, before: Agent | None, after: Agent | None) -> None:
        """Account for one agent changing from ``before`` to ``after`` (None: absent)."""
        if before is not None:
            self.states[before.state] -= 1
            if before.interrupted:
                self.interrupted -= 1
            self.limited -= limits.waits(before)
            self.named[before.state] -= _named_otherwise(before)
            self.denied -= before.outcome == "denied"
        if after is not None:
            self.states[after.state] += 1
            if after.interrupted:
                self.interrupted += 1
            self.limited += limits.waits(after)
            self.named[after.state] += _named_otherwise(after)
            self.denied += after.outcome == "denied"

    def __getitem__(self, state: AgentState) -> int:
        return self.states[state]

    def resting(self, state: AgentState) -> int:
        """The agents in ``state`` (done, idle) no other count names."""
        return self.states[state] - self.named[state]


def _named_otherwise(agent: Agent) -> bool:
    """Done or idle, but denied, interrupted or waiting on a limit (said by those counts)."""
    return agent.state in (AgentState.DONE, AgentState.IDLE) and bool(
        agent.outcome == "denied" or agent.interrupted or limits.waits(agent)
    )


@dataclass(frozen=True)
class TraySummary:
    """The badge count, the mark and the tooltip of the tray icon.

    ``needs`` (the badge) counts the agents that need you and the missions that wait for
    your approval (``missions``): both wait on the person.
    """

    needs: int
    mark: Mark
    tooltip: str
    missions: int = 0

    @property
    def icon_key(self) -> tuple[int, str]:
        """What the rendered icon depends on (the icon cache's key)."""
        return (min(self.needs, 100), self.mark.value)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summarize(
    counts: StateCounts,
    connected: bool = True,
    detail: str = "",
    paused: bool = False,
    missions: int = 0,
    limited: str = "",
    plan: str = "",
    unreachable: tuple[str, ...] = (),
) -> TraySummary:
    """The tray's badge, mark and tooltip for these counts (``paused``: notifications are;
    ``missions``: how many wait for the person's approval; ``unreachable``: the other
    machines that are, as "devbox unreachable since 14:02")."""
    needs = counts[AgentState.NEEDS_INPUT]
    working = counts[AgentState.WORKING] + counts[AgentState.LAUNCHING]
    failed = counts[AgentState.FAILED]
    lost = counts[AgentState.LOST]
    live = sum(n for state, n in counts.states.items() if state.live)
    parts = []
    if needs:
        parts.append(_plural(needs, "needs you", "need you"))
    if working:
        parts.append(f"{working} working")
    if failed:
        parts.append(f"{failed} failed")
    if lost:
        parts.append(f"{lost} lost")
    if counts.denied:
        parts.append(f"{counts.denied} denied")
    if counts.interrupted:
        parts.append(f"{counts.interrupted} interrupted")
    if limited:  # "3 limited, resets 16:20 (in 2 h)": agents a usage limit stopped
        parts.append(limited)
    # The rows' own words ("done", "idle"), never "7 agents idle" over rows saying done; said
    # beside the others too, so the counts add up to the rows (issue 26's trial).
    for state in (AgentState.DONE, AgentState.IDLE):
        if counts.resting(state):
            parts.append(f"{counts.resting(state)} {state.value}")
    if plan:  # "plan: 5 h 72 % · week 31 %", as the harness reports it
        parts.append(plan)
    if failed or lost:
        mark = Mark.WARNING
    elif counts.limited:  # the wait is what the person would not see otherwise (issue 29)
        mark = Mark.LIMITED
    elif working:
        mark = Mark.WORKING
    elif live:
        mark = Mark.QUIET
    else:
        mark = Mark.PLAIN
    if not parts:
        parts.append("no agents running")
    if missions:
        parts.insert(0, _plural(missions, "mission to approve", "missions to approve"))
    parts.extend(unreachable)  # their agents are listed as they were, greyed
    if unreachable:
        mark = Mark.WARNING
    if paused:
        # Said where the person looks: a paused app is otherwise silent with no sign of it.
        parts.append("notifications paused")
    tooltip = " · ".join(parts)
    if not connected:
        tooltip = f"volee: {detail or 'not connected to the daemon'}\n{tooltip}"
        mark = Mark.WARNING
    return TraySummary(needs + missions, mark, tooltip, missions)

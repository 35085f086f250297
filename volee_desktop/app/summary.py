"""What the tray icon shows: counts by state, kept incrementally, and the tooltip text.

Qt-free so that the rules (which mark, which words) are unit-tested without a
display.  ``tray.py`` draws what ``TraySummary`` says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from volee_desktop.core.model import Agent
from volee_desktop.core.states import AgentState


class Mark(StrEnum):
    """The one mark the tray icon carries, besides the needs-input badge."""

    PLAIN = "plain"  # nothing live
    QUIET = "quiet"  # agents live but none working
    WORKING = "working"
    WARNING = "warning"  # something failed or was lost


class StateCounts:
    """How many agents are in each state, and how many are marked interrupted."""

    def __init__(self) -> None:
        self.states: Counter[AgentState] = Counter()
        self.interrupted = 0

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
        if after is not None:
            self.states[after.state] += 1
            if after.interrupted:
                self.interrupted += 1

    def __getitem__(self, state: AgentState) -> int:
        return self.states[state]


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
) -> TraySummary:
    """The tray's badge, mark and tooltip for these counts (``paused``: notifications are;
    ``missions``: how many wait for the person's approval)."""
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
    if counts.interrupted:
        parts.append(f"{counts.interrupted} interrupted")
    if failed or lost:
        mark = Mark.WARNING
    elif working:
        mark = Mark.WORKING
    elif live:
        mark = Mark.QUIET
    else:
        mark = Mark.PLAIN
    if not parts:
        parts.append(_plural(live, "agent idle", "agents idle") if live else "no agents running")
    if missions:
        parts.insert(0, _plural(missions, "mission to approve", "missions to approve"))
    if paused:
        # Said where the person looks: a paused app is otherwise silent with no sign of it.
        parts.append("notifications paused")
    tooltip = " · ".join(parts)
    if not connected:
        tooltip = f"volee: {detail or 'not connected to the daemon'}\n{tooltip}"
        mark = Mark.WARNING
    return TraySummary(needs + missions, mark, tooltip, missions)

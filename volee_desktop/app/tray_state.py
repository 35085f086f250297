"""What the tray and the list's header say of the whole registry: the summary (counts,
connection, limits, plan, unreachable machines), the missions awaiting the person, and the
agents that need the person, in the order the tray's menu lists them."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from volee_desktop.core.states import AgentState

from .attention import MENU_AGENTS, AgentLine, MissionLine, agent_line, awaiting_missions
from .summary import TraySummary, summarize
from .texts import limits_line, plan_line
from .tray import failed_line

if TYPE_CHECKING:
    from .agent_model import AgentListModel
    from .live import LiveRegistry


def summary_of(
    live: LiveRegistry, paused: bool, warn_at: float | None, now: float
) -> tuple[TraySummary, list[MissionLine]]:
    """The tray's summary and the missions awaiting the person."""
    conn = live.connection
    agents = live.registry.agents.values()
    missions = awaiting_missions(live.registry, live.machine_label)
    summary = summarize(
        live.counts,
        conn.connected,
        conn.detail,
        paused,
        missions=len(missions),
        limited=limits_line(agents, now) if live.counts.limited else "",
        plan=plan_line(agents, warn_at),
        unreachable=tuple(m.label() for m in live.machines.values() if not m.reachable),
    )
    return summary, missions


def needing(model: AgentListModel, live: LiveRegistry, limit: int = MENU_AGENTS) -> list[AgentLine]:
    """The agents that need you, then the failed ones, most urgent first (the list's own
    order): what the tray menu lists."""
    out: list[AgentLine] = []
    for row in range(min(model.rowCount(), limit)):
        agent = model.agent_at(row)
        if agent is None or agent.state not in (AgentState.NEEDS_INPUT, AgentState.FAILED):
            break  # the list puts them first
        line = agent_line(agent) if agent.state.live else failed_line(agent)
        machine = live.machine(agent.id)
        if machine is not None:  # another machine's: devbox:api-fixer, as the CLI says
            line = replace(line, name=f"{machine.name}:{line.name}")
        out.append(line)
    return out

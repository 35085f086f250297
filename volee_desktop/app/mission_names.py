"""A mission worker's notification names its mission (Qt-free): "api-fixer asks to use Bash"
alone does not say which of three missions' workers asks."""

from __future__ import annotations

from dataclasses import replace

from volee_desktop.core.registry import Registry

from .attention import short
from .notify_policy import Notice

GOAL = 50  # characters of the mission's goal in a notification's title


def named_mission(notice: Notice, registry: Registry) -> Notice:
    """``notice`` with its agent's mission in its title ("… · mission “Fix the login
    bug”"), or as it is when the agent is in none (or it is not about one agent)."""
    agent = registry.agents.get(notice.agent) if notice.agent is not None else None
    if agent is None or agent.mission is None:
        return notice
    mission = registry.missions.get(agent.mission)
    goal = short(mission.goal, GOAL) if mission is not None and mission.goal.strip() else ""
    words = f"mission “{goal}”" if goal else f"mission {agent.mission}"
    if words in notice.title:
        return notice
    return replace(notice, title=f"{notice.title} · {words}")

"""Words and colours the app shows for agents: state labels, durations, markers (Qt-free)."""

from __future__ import annotations

from volee_desktop.core.model import Agent, Mission
from volee_desktop.core.states import AgentState

STATE_LABEL: dict[AgentState, str] = {
    AgentState.NEEDS_INPUT: "needs you",
    AgentState.FAILED: "failed",
    AgentState.WORKING: "working",
    AgentState.LAUNCHING: "launching",
    AgentState.DONE: "done",
    AgentState.IDLE: "idle",
    AgentState.STOPPED: "stopped",
    AgentState.LOST: "lost",
}

# Readable on a light and a dark list background alike.
STATE_COLOUR: dict[AgentState, str] = {
    AgentState.NEEDS_INPUT: "#e8590c",
    AgentState.FAILED: "#e03131",
    AgentState.WORKING: "#1c7ed6",
    AgentState.LAUNCHING: "#4dabf7",
    AgentState.DONE: "#2f9e44",
    AgentState.IDLE: "#868e96",
    AgentState.STOPPED: "#868e96",
    AgentState.LOST: "#ae3ec9",
}


def markers(agent: Agent) -> list[str]:
    """Short flags shown next to the name: held, interrupted, restart pending."""
    out = []
    if agent.held:
        out.append(f"held: {agent.held}")
    if agent.interrupted:
        cause = agent.interrupted.replace("-", " ")
        out.append(f"interrupted ({cause})" if cause else "interrupted")
    if agent.restart is not None:
        out.append(f"restart {agent.restart.attempt} of {agent.restart.budget}")
    return out


def action_label(agent: Agent) -> str:
    """The label of the resume button: "Relaunch" when volee offers a relaunch."""
    return "Relaunch" if agent.action == "relaunch" else "Resume"


def can_stop(agent: Agent) -> bool:
    return agent.state.live and not agent.held


def can_resume(agent: Agent) -> bool:
    return not agent.state.live or agent.interrupted is not None or agent.action is not None


def mission_label(mission: Mission | None, mission_id: str | None) -> str:
    if mission_id is None:
        return ""
    if mission is None:
        return mission_id
    goal = mission.goal.strip().splitlines()[0] if mission.goal.strip() else mission.id
    return goal if len(goal) <= 60 else goal[:57] + "…"


def search_text(agent: Agent, mission: Mission | None) -> str:
    """What the filter box matches against (lower case)."""
    parts = [
        agent.name,
        agent.id,
        STATE_LABEL[agent.state],
        agent.state.value,
        agent.detail,
        agent.activity,
        agent.cwd,
        agent.branch or "",
        agent.harness.value,
        mission.goal if mission is not None else (agent.mission or ""),
        *markers(agent),
    ]
    return "\n".join(parts).lower()

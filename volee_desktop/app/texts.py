"""Words and colours the app shows for agents: state labels, durations, markers (Qt-free)."""

from __future__ import annotations

from volee_desktop.core.durations import duration
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
        agent.request.summary if agent.request is not None else "",
        agent.activity,
        agent.cwd,
        agent.branch or "",
        agent.harness.value,
        mission.goal if mission is not None else (agent.mission or ""),
        *markers(agent),
    ]
    return "\n".join(parts).lower()


def detail_text(agent: Agent) -> str:
    """The row's second line: what a needs-input agent asks (its request), else the detail."""
    request = agent.request
    if agent.state is AgentState.NEEDS_INPUT and request is not None and request.summary:
        return request.summary
    return agent.detail


def tooltip_text(agent: Agent, now: float) -> str:
    """A row's tooltip: who, state, what it asks (with the project and how long it waits)."""
    lines = [f"{agent.name} ({agent.id})"]
    request = agent.request
    if agent.state is AgentState.NEEDS_INPUT and request is not None:
        lines.append(f"needs you: {request.summary or agent.detail}")
        if request.question and request.question not in request.summary:
            lines.append(request.question)
        if request.options:
            lines.append("options: " + " / ".join(request.options))
        since = request.at or agent.state_since
        lines.append(f"waiting {duration(now - since)}")
    else:
        lines.append(f"{STATE_LABEL[agent.state]}: {agent.detail}")
    if agent.activity:
        lines.append(f"last: {agent.activity}")
    folder = agent.worktree or agent.cwd
    if folder:
        lines.append(folder + (f" ({agent.branch})" if agent.branch else ""))
    lines.extend(markers(agent))
    return "\n".join(lines)

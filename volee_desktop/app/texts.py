"""Words and colours the app shows for agents: state labels, durations, markers (Qt-free)."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterable

from volee_desktop.core import limits
from volee_desktop.core.durations import duration
from volee_desktop.core.model import Agent, Location, Mission
from volee_desktop.core.requests import unseen
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


#: A turn that ended on a denial or an interruption: said so, in amber (never a green done).
OUTCOME_COLOUR = "#f08c00"


def outcome(agent: Agent) -> str:
    """ "denied" or "interrupted" when the agent rests after a turn that ended so, else ""
    (core's ``Agent.outcome``: ``volee ls`` says the same)."""
    return agent.outcome or ""


def state_label(agent: Agent) -> str:
    """The word a row, the tooltip and the agent's window say for its state."""
    return outcome(agent) or STATE_LABEL[agent.state]


#: How many agents in a state, in words: "2 need you", "1 failed" (the header's words).
_PLURAL: dict[AgentState, tuple[str, str]] = {
    AgentState.NEEDS_INPUT: ("needs you", "need you"),
}


def plural_state(n: int, state: AgentState) -> str:
    one, many = _PLURAL.get(state, (STATE_LABEL[state], STATE_LABEL[state]))
    return f"{n} {one if n == 1 else many}"


#: The share of its context window from which an agent is marked as near its limit.
CONTEXT_LIMIT = 0.85


def context_text(agent: Agent) -> str:
    """ "context 42 %" (and its cost when known), or "" when volee knows nothing of it."""
    if agent.context_share is None:
        return ""
    text = f"context {round(agent.context_share * 100)} %"
    if agent.cost_usd is not None:
        text += f" · ${agent.cost_usd:.2f}"
    return text


def near_limit(agent: Agent, limit: float = CONTEXT_LIMIT) -> bool:
    return agent.context_share is not None and agent.context_share >= limit


#: The one-character mark of a state in compact rows (its colour says it too).
STATE_MARK: dict[AgentState, str] = {
    AgentState.NEEDS_INPUT: "●",
    AgentState.FAILED: "✕",
    AgentState.WORKING: "▶",
    AgentState.LAUNCHING: "▷",
    AgentState.DONE: "✓",
    AgentState.IDLE: "○",
    AgentState.STOPPED: "■",
    AgentState.LOST: "?",
}


def markers(agent: Agent) -> list[str]:
    """Short flags shown next to the name: held, interrupted, restart pending.

    A flag never repeats what the row's state and detail already say ("held: stopped by
    you" beside "stopped · by you" is "held")."""
    out = []
    if agent.held:
        said = agent.held.lower() in agent.detail.lower() or agent.held == STATE_LABEL[agent.state]
        out.append("held" if said else f"held: {agent.held}")
    if agent.interrupted:
        cause = agent.interrupted.replace("-", " ")
        out.append(f"interrupted ({cause})" if cause else "interrupted")
    if agent.restart is not None:
        out.append(f"restart {agent.restart.attempt} of {agent.restart.budget}")
    return out


def action_label(agent: Agent) -> str:
    """The label of the resume button: "Relaunch" when volee offers a relaunch, "Move into
    volee" for a session running in the person's own terminal."""
    if takes_over(agent):
        return "Move into volee"
    if limits.waits(agent):
        return "Continue"
    return "Relaunch" if agent.action == "relaunch" else "Resume"


def takes_over(agent: Agent) -> bool:
    """Whether resuming means taking over a session that runs in the person's own terminal
    (once they quit it there, volee carries it on in a host of its own)."""
    return (
        agent.state.live
        and agent.location is Location.TERMINAL
        and agent.session is not None
        and agent.harness.can_resume
    )


def can_stop(agent: Agent) -> bool:
    return agent.state.live and not agent.held


def can_resume(agent: Agent) -> bool:
    return (
        limits.waits(agent)  # "Continue": now, rather than after its limit's reset
        or not agent.state.live
        or agent.interrupted is not None
        or agent.action is not None
        or takes_over(agent)
    )


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
        state_label(agent),
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
    """The row's second line: what a needs-input agent asks (its request, led by what its line
    leaves out: "12 lines — open to read it all"), "limited — resets 16:20" for one that waits
    on a usage limit, else the detail."""
    request = agent.request
    if agent.state is AgentState.NEEDS_INPUT and request is not None and request.summary:
        hidden = unseen(request)
        return f"{hidden}: {request.summary}" if hidden else request.summary
    if limits.waits(agent) and agent.limit is not None:
        return limits.limited_text(agent.limit, _clock)
    if outcome(agent) == "denied":
        return f"denied: {agent.denied}"
    return agent.detail


#: The row style of an agent that waits on a usage limit (neither idle grey nor failed red).
LIMITED_COLOUR = "#f08c00"
LIMITED_MARK = "⏸"


def state_colour(agent: Agent) -> str:
    """The colour of the agent's row: the limited one, an outcome's amber, or its state's."""
    if limits.waits(agent):
        return LIMITED_COLOUR
    return OUTCOME_COLOUR if outcome(agent) else STATE_COLOUR[agent.state]


def state_mark(agent: Agent) -> str:
    """The mark of a compact row: the limited one, an outcome's "!", or its state's."""
    if limits.waits(agent):
        return LIMITED_MARK
    return "!" if outcome(agent) else STATE_MARK[agent.state]


def _clock(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def limits_line(agents: Iterable[Agent], now: float) -> str:
    """The tray tooltip's and the list header's part for the agents a limit stopped:
    "3 limited, resets 16:20" ("" when none waits)."""
    notice = limits.notice(agents, now, _clock)
    if notice is None:
        return ""
    when = notice.body.split("; ", 1)[1] if "; " in notice.body else ""
    return f"{notice.count} limited" + (f", {when}" if when else "")


def state_and_detail(agent: Agent) -> tuple[str, str]:
    """The state's label and the rest of the detail, never saying the state twice
    ("stopped" and "stopped by you" is "stopped" and "by you")."""
    label = state_label(agent)
    detail = detail_text(agent)
    if detail.lower().startswith(label):
        rest = detail[len(label) :].lstrip(" :·-")
        return label, rest
    return label, detail


def activity_text(agent: Agent, now: float) -> str:
    """The last thing the agent did in its current turn, with how long ago ("" if none)."""
    if not agent.activity:
        return ""
    if agent.activity_at is None:
        return agent.activity
    return f"{agent.activity} ({duration(now - agent.activity_at)} ago)"


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
        label, rest = state_and_detail(agent)
        lines.append(f"{label}: {rest}" if rest else label)
        clock = time.strftime("%H:%M", time.localtime(agent.state_since))
        lines.append(f"{label} for {duration(now - agent.state_since)} (since {clock})")
    if agent.activity:
        lines.append(f"last: {agent.activity}")
    folder = agent.worktree or agent.cwd
    if folder:
        lines.append(folder + (f" ({agent.branch})" if agent.branch else ""))
    if agent.context_share is not None:
        lines.append(context_text(agent))
    lines.extend(markers(agent))
    return "\n".join(lines)


#: Which state a count of the header filters to (its words as ``summary.summarize`` says).
_COUNT = re.compile(r"^(\d+) (needs you|need you|working|failed|lost|done|idle)$")
_COUNT_STATE = {
    "needs you": AgentState.NEEDS_INPUT,
    "need you": AgentState.NEEDS_INPUT,
    "working": AgentState.WORKING,
    "failed": AgentState.FAILED,
    "lost": AgentState.LOST,
    "done": AgentState.DONE,
    "idle": AgentState.IDLE,
}


_LEADING_COUNT = re.compile(r"^(\d+) ")


def summary_links(text: str, active: AgentState | None = None) -> str:
    """The header's summary as rich text: each count of agents in a state is a link
    (``state:<state>``) that filters the list to it; the active filter's count is bold."""
    lines = []
    for line in text.splitlines():
        parts = []
        for part in line.split(" · "):
            match = _COUNT.match(part)
            if match is None:
                # A wrapped header breaks between parts, never between a count and its word.
                parts.append(_LEADING_COUNT.sub("\\1&nbsp;", html.escape(part)))
                continue
            state = _COUNT_STATE[match.group(2)]
            words = html.escape(part).replace(" ", "&nbsp;")
            if state is active:
                words = f"<b>{words}</b>"
            parts.append(f'<a href="state:{state.value}">{words}</a>')
        lines.append(" · ".join(parts))
    return "<br>".join(lines)


def activity_line(agent: Agent, now: float) -> str:
    """A full row's third line: the last thing done in this turn, else the folder; never the
    words of the line above again (a permission's request names the tool call it asks for)."""
    activity = activity_text(agent, now)
    if agent.activity and agent.activity in detail_text(agent):
        activity = ""
    return activity or agent.worktree or agent.cwd


def plan_line(agents: Iterable[Agent], warn_at: float | None = None) -> str:
    """The plan's use as the harness last reported it (the freshest report of any agent):
    "plan: 5 h 72 % · week 31 %", with "⚠" from ``warn_at`` ([limits] warn_at); "" when no
    harness reports it (API keys never do).  Nothing is estimated."""
    reports = [a.plan for a in agents if a.plan is not None]
    if not reports:
        return ""
    plan = max(reports, key=lambda p: p.at)
    parts = []
    for label, share in (("5 h", plan.five_hour), ("week", plan.seven_day)):
        if share is not None:
            parts.append(f"{label} {round(share * 100)} %")
    if not parts:
        return ""
    shares = [x for x in (plan.five_hour, plan.seven_day) if x is not None]
    warn = warn_at is not None and max(shares) >= warn_at
    return ("⚠ " if warn else "") + "plan: " + " · ".join(parts)


def readable_screen(text: str) -> str:
    """An agent's screen as the agent window shows it: a run of blank rows between rows of
    text is one blank row, and the blank rows after the last text go.

    Claude Code draws 40 rows: its banner and the command it runs at the top, its spinner,
    prompt and mode line at the bottom, and 20 blank rows between; a window of 29 rows that
    follows the end showed the blank rows and the spinner, not the command (the trial of issue
    28 on X11).  The rows' text is unchanged; only their spacing is not the terminal's.
    """
    shown: list[str] = []
    blank = False
    for line in text.splitlines():
        if line.strip():
            if blank and shown:
                shown.append("")
            shown.append(line)
            blank = False
        else:
            blank = True
    return "\n".join(shown)

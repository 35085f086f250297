"""What waits on the person, in words: missions to approve and agents that need you (Qt-free).

The tray menu, the list's top section and the notifications all show these
lines, so they say the same thing everywhere: a mission by its goal, its
workers and how long its report has waited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from volee_desktop.core.answer import Answer, AnswerError, AnswerKind
from volee_desktop.core.durations import duration
from volee_desktop.core.model import Agent, Mission, MissionStatus, RequestKind
from volee_desktop.core.registry import Registry
from volee_desktop.core.requests import unseen
from volee_desktop.core.states import AgentState

from .choices import choices

GOAL_LIMIT = 60
MENU_AGENTS = 10  # the tray menu lists at most this many agents that need you


@dataclass(frozen=True)
class MissionLine:
    """A mission that waits for approval, as the tray and the list show it."""

    id: str
    goal: str  # its first line, cut to GOAL_LIMIT
    workers: int
    since: float  # when it started to wait
    machine: str = ""  # another machine's (``devbox``), or empty for this one's

    def text(self, now: float) -> str:
        workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        where = f"{self.machine}: " if self.machine else ""
        return f"{where}{self.goal} — {workers}, waiting {duration(now - self.since)}"


def short(text: str, limit: int) -> str:
    """``text``'s first line, cut with an ellipsis to ``limit`` characters."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def label(text: str) -> str:
    """``text`` for a menu entry or a button: Qt reads a lone ``&`` as a shortcut mark
    (``rm -rf build/ && pytest`` showed as ``rm -rf build/ & pytest``)."""
    return text.replace("&", "&&")


def awaiting_missions(
    registry: Registry, machine: Callable[[str], str] = lambda _mission: ""
) -> list[MissionLine]:
    """Missions waiting for the person's approval, the longest waiting first; ``machine``
    names the other machine a mission is on."""
    out = []
    for mission in registry.missions.values():
        if mission.status is not MissionStatus.AWAITING_APPROVAL:
            continue
        out.append(
            MissionLine(
                id=mission.id,
                goal=short(mission.goal, GOAL_LIMIT) or mission.id,
                workers=_workers(registry, mission),
                since=mission.updated_at,
                machine=machine(mission.id),
            )
        )
    out.sort(key=lambda m: (m.since, m.id))
    return out


def _workers(registry: Registry, mission: Mission) -> int:
    ids = set(mission.assessments)
    ids.update(a.id for a in registry.mission_agents(mission.id) if a.id != mission.coordinator)
    return len(ids)


class LineKind(StrEnum):
    """What an ``AgentLine`` is about: a request's kind (``core.model.RequestKind``), or an
    agent that failed (the tray menu's Resume)."""

    PERMISSION = RequestKind.PERMISSION.value
    QUESTION = RequestKind.QUESTION.value
    DIALOG = RequestKind.DIALOG.value
    FAILED = "failed"


@dataclass(frozen=True)
class AgentLine:
    """An agent that needs you, with what it asks: the tray menu's entry and its actions."""

    id: str
    name: str
    request: str  # one line: "Bash: rm -rf build/", a question, the dialog's text
    kind: LineKind
    options: tuple[str, ...] = ()  # a question's options
    project: str = ""  # folder (branch)
    since: float = 0.0
    request_id: str | None = None  # the request shown: an answer names it, never a newer one
    hidden: str | None = None  # what its one line leaves out: then it is opened, not answered

    def text(self) -> str:
        return f"{self.name} — {self.request}" if self.request else self.name


def project_of(agent: Agent) -> str:
    """The agent's project in a few words: its folder's (or repository's) name and branch,
    as ``volee ls --json``'s ``project`` names it."""
    folder = agent.worktree or agent.cwd
    name = folder.rstrip("/").rsplit("/", 1)[-1] if folder else ""
    if agent.repo and agent.worktree:
        name = agent.repo.rstrip("/").rsplit("/", 1)[-1]
    if agent.branch and name:
        return f"{name} ({agent.branch})"
    return name or agent.branch or ""


def choices_of(kind: str, options: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The answers offered for a request: ``(answer, label)``; the answer names are those of
    ``request-answered`` (allow, deny, option:N)."""
    return tuple((choice.name, choice.text) for choice in choices(kind, options))


def agent_line(agent: Agent) -> AgentLine:
    """What the tray menu says of an agent that needs you."""
    request = agent.request
    if request is not None:
        return AgentLine(
            id=agent.id,
            name=agent.name,
            request=request.summary or agent.detail,
            kind=LineKind(request.kind),
            options=tuple(request.options),
            project=project_of(agent),
            since=request.at or agent.state_since,
            request_id=request.id,
            hidden=unseen(request),
        )
    return AgentLine(
        id=agent.id,
        name=agent.name,
        request=agent.detail or "needs your input",
        # No request recorded (an agent found running): its state's words say which.
        kind=LineKind.PERMISSION if agent.detail.startswith("permission") else LineKind.DIALOG,
        project=project_of(agent),
        since=agent.state_since,
    )


def needing_agents(registry: Registry, limit: int = MENU_AGENTS) -> list[AgentLine]:
    """The agents that need you, most urgent first (the list's order), at most ``limit``."""
    out = []
    for agent in registry.by_urgency():
        if agent.state is not AgentState.NEEDS_INPUT:
            break  # by_urgency puts them first
        out.append(agent_line(agent))
        if len(out) == limit:
            break
    return out


def answer_call(
    agent_id: str, request_id: str, choice: str, text: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The daemon call that gives ``choice`` as the answer to request ``request_id``.

    ``choice`` is an answer's word (``core.answer``): ``allow`` / ``allow-always`` / ``deny``
    (``text``: the reason), ``option:N`` or ``reply`` (``text``); the request id makes the
    daemon refuse an answer that would reach another dialog (docs/answers.md).  Not an
    answer: ValueError (an ``AnswerError``) saying what one is.
    """
    return Answer.parse(choice, text).call(agent_id, request_id)


def choice_label(choice: str, options: tuple[str, ...] = ()) -> str:
    """An answer in words: "allowed", "denied", the option's label."""
    try:
        answer = Answer.parse(choice)
    except AnswerError:
        return choice
    if answer.kind is AnswerKind.OPTION:
        n = answer.option
        return options[n - 1] if n <= len(options) else f"option {n}"
    return {
        AnswerKind.ALLOW: "allowed",
        AnswerKind.ALLOW_ALWAYS: "allowed always",
        AnswerKind.DENY: "denied",
    }[answer.kind]


def is_answer(name: str) -> bool:
    """Whether an action name is an answer given at once (allow, deny, option:N); a reply
    is an action of its own (its text is asked for first)."""
    try:
        Answer.parse(name)
    except AnswerError:
        return False
    return True

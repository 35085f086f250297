"""What the app says after an action that changes something (Qt-free): stop, resume, forget,
an answer, a mission's approval.

Each finished call gets one line in the list's status area ("Asked api-fixer to stop.");
one that failed says what did not happen and why, in the status area and as a
notification, so an action never ends in silence (issue 26: "the dialog vanishes").  One
that went through but took long (stopping twenty agents) is a notification too: the person
may have turned to something else meanwhile.
"""

from __future__ import annotations

from typing import Any

from volee_desktop.core.durations import duration
from volee_desktop.core.registry import Registry

from ..ipc.methods import Method
from .attention import short

#: An action that took longer than this (seconds) is also told by a notification.
LONG_ACTION_S = 10.0

#: method -> (words once done, words when it failed), ``{name}`` the agent's or mission's.
WORDS: dict[str, tuple[str, str]] = {
    Method.AGENTS_STOP: ("Asked {name} to stop.", "{name} was not stopped"),
    Method.AGENTS_RESUME: ("Resumed {name}.", "{name} was not resumed"),
    Method.AGENTS_FORGET: ("Forgot {name}.", "{name} was not forgotten"),
    Method.AGENTS_ALLOW: ("Allowed {name}: {request}.", "{name} was not answered"),
    Method.AGENTS_DENY: ("Denied {name}: {request}.", "{name} was not answered"),
    Method.AGENTS_ANSWER: ("Answered {name}: {request}.", "{name} was not answered"),
    Method.MISSIONS_ANSWER: (
        "Answered the mission “{name}”: {answer}.",
        "The mission was not answered",
    ),
}


def changes(method: str) -> bool:
    """Whether ``method`` changes something the person should hear about."""
    return method in WORDS


def _names(method: str, params: dict[str, Any], registry: Registry) -> dict[str, str]:
    if method.startswith("missions."):
        mission = registry.missions.get(str(params.get("mission")))
        goal = mission.goal if mission is not None else str(params.get("mission", ""))
        answer = str(params.get("option") or params.get("text") or "")
        return {"name": short(goal, 50), "answer": short(answer, 60) or "sent"}
    agent_id = str(params.get("agent", ""))
    agent = registry.agents.get(agent_id)
    request = agent.request.summary if agent is not None and agent.request is not None else ""
    return {
        # Another machine's agent is in ``agents`` but not in this registry's ``names``.
        "name": registry.name_of(agent_id) or (agent.name if agent is not None else agent_id),
        "request": short(request, 60) or "its request",
    }


def done_text(method: str, params: dict[str, Any], registry: Registry) -> str:
    """The status line once ``method`` went through ("Asked api-fixer to stop.")."""
    done, _failed = WORDS.get(method, ("Done: {name}.", ""))
    return done.format(**_names(method, params, registry))


def failed_text(method: str, params: dict[str, Any], registry: Registry) -> str:
    """The title of what did not happen ("api-fixer was not stopped")."""
    _done, failed = WORDS.get(method, ("", "{name}: the action failed"))
    return failed.format(**_names(method, params, registry))


def counted(method: str, n: int) -> str:
    """The status line of an action on ``n`` agents at once ("Asked 12 agents to stop.")."""
    words: dict[str, str] = {
        Method.AGENTS_STOP: "Asked {n} agents to stop.",
        Method.AGENTS_RESUME: "Resumed {n} agents.",
        Method.AGENTS_FORGET: "Forgot {n} agents.",
    }
    return words.get(method, "Done for {n} agents.").format(n=n)


def took_long(seconds: float) -> bool:
    """Whether an action that took ``seconds`` is told by a notification too."""
    return seconds > LONG_ACTION_S


def took_text(seconds: float) -> str:
    """The notification's body for an action that took long ("It took 23 s.")."""
    return f"It took {duration(seconds)}."

"""One action on several agents at once (the list's multi-selection), planned Qt-free.

Stop, resume and forget apply to the selected agents they fit (a stopped agent is not
stopped again); the confirmation counts them and says how many were left out and why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from volee_desktop.core.model import Agent

from ..ipc.methods import Method
from .texts import can_resume, can_stop, takes_over

#: action -> (daemon method, whether an agent fits, the verb, why one does not fit)
ACTIONS: dict[str, tuple[str, Callable[[Agent], bool], str, str]] = {
    "stop": (Method.AGENTS_STOP, can_stop, "Stop", "not running"),
    "resume": (
        Method.AGENTS_RESUME,
        lambda a: can_resume(a) and not takes_over(a),
        "Resume",
        "running, or in your own terminal",
    ),
    "forget": (Method.AGENTS_FORGET, lambda a: True, "Forget", ""),
}


@dataclass(frozen=True)
class Plan:
    """What an action on a selection does: the call, the agents it reaches, what it says."""

    method: str
    agents: tuple[Agent, ...]
    skipped: int
    title: str
    message: str


def plan(action: str, agents: Sequence[Agent]) -> Plan | None:
    """The plan of ``action`` on ``agents`` (None: not an action on several agents)."""
    entry = ACTIONS.get(action)
    if entry is None:
        return None
    method, fits, verb, why = entry
    chosen = tuple(a for a in agents if fits(a))
    skipped = len(agents) - len(chosen)
    n = len(chosen)
    title = f"{verb} {n} agent{'s' if n != 1 else ''}?"
    names = ", ".join(a.name for a in chosen[:8]) + (f" and {n - 8} more" if n > 8 else "")
    message = f"{verb} {names}."
    if skipped:
        message += f" {skipped} of the {len(agents)} selected left out ({why})."
    if action == "forget":
        message += (
            " volee stops tracking them; their sessions are ignored from then on. Their files "
            "and branches stay as they are."
        )
    return Plan(method, chosen, skipped, title, message)

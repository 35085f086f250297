"""Allow on several agents at once (the list's multi-selection), planned Qt-free.

Allow is offered on a selection only when every selected agent asks a permission (the same
kind of request: a question's options differ from one agent to the next), none answered yet
and each one's line whole: a request whose line hides part of it (core/requests.py
``unseen``) offers Open, never Allow, so the person reads all of it first.  Otherwise Allow
is off and the plan says why.  Each answer names the request it answers and is verified on
that agent's screen by the daemon, as a single Allow is (docs/answers.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from volee_desktop.core.model import Agent, RequestKind
from volee_desktop.core.requests import unseen
from volee_desktop.core.states import AgentState

from .attention import short

#: How a kind of request is said in a refusal ("2 permissions and 1 question").
_KIND_WORDS: dict[RequestKind, tuple[str, str]] = {
    RequestKind.PERMISSION: ("permission", "permissions"),
    RequestKind.QUESTION: ("question", "questions"),
    RequestKind.DIALOG: ("dialog", "dialogs"),
}


@dataclass(frozen=True)
class AllowPlan:
    """Allow on a selection: the answers it sends, or why it is off (``refusal``)."""

    calls: tuple[tuple[str, str], ...]  # (agent id, the id of the request it allows)
    title: str
    message: str
    refusal: str | None = None

    @property
    def offered(self) -> bool:
        return self.refusal is None


def _off(why: str) -> AllowPlan:
    return AllowPlan((), "", "", f"Allow is off for this selection: {why}.")


def _kinds(agents: Sequence[Agent]) -> str:
    counts: dict[RequestKind, int] = {}
    for agent in agents:
        if agent.request is not None:
            counts[agent.request.kind] = counts.get(agent.request.kind, 0) + 1
    words = [f"{counts[k]} {_KIND_WORDS[k][counts[k] != 1]}" for k in _KIND_WORDS if k in counts]
    return " and ".join(words)


def allow_plan(agents: Sequence[Agent]) -> AllowPlan | None:
    """Allow on ``agents`` (several selected), or None when none of them asks anything."""
    asking = [a for a in agents if a.state is AgentState.NEEDS_INPUT and a.request is not None]
    if not asking:
        return None
    if len(asking) < len(agents):
        ids = {a.id for a in asking}
        quiet = [a.name for a in agents if a.id not in ids]
        return _off(f"{short(', '.join(quiet), 60)} {'asks' if len(quiet) == 1 else 'ask'} nothing")
    kinds = {a.request.kind for a in asking if a.request is not None}
    if len(kinds) > 1:
        return _off(f"the requests are of different kinds ({_kinds(asking)})")
    if kinds != {RequestKind.PERMISSION}:
        return _off(f"they ask {_kinds(asking)}, not permissions: answer each from its row")
    for agent in asking:
        request = agent.request
        assert request is not None
        if request.answered:
            return _off(f"{agent.name}'s request was answered already ({request.answered})")
        hidden = unseen(request)
        if hidden is not None:
            return _off(f"{agent.name}'s line does not show all of it ({hidden})")
    n = len(asking)
    lines = "\n".join(f"{a.name}: {a.request.summary}" for a in asking if a.request is not None)
    return AllowPlan(
        tuple((a.id, a.request.id) for a in asking if a.request is not None),
        f"Allow {n} requests?",
        f"Allow what {n} agents ask:\n{lines}",
    )

"""What the missions' IPC methods answer (docs/ipc.md), as mypy sees it.

TypedDicts, not Structs: these results are the dicts the wire carries (``ipc/protocol.py``
writes them with the stdlib's json) and the dicts the MCP tools read in-process, so typing
them changes nothing that is sent; a key a handler forgets or misspells is mypy's error.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from ..views import AgentView, ChangeSummary, MissionFields, MissionView, OutcomeView
from .pulls import Pull


class BranchChange(ChangeSummary):
    """``review.change_of``: the change, with the base it is against and its commits."""

    base: str | None
    commits: int


class AssessedView(AgentView):
    """An agent of a mission with its verdict and the delivery evidence behind it."""

    verdict: str | None
    verdict_reason: str | None
    delivery: dict[str, object] | None


class MessageView(TypedDict):
    """A message (its fields as ``core.model.Message`` has them) with its parties' names."""

    id: str
    thread: str
    sender: str
    recipients: list[str]
    kind: str
    body: str
    references: list[str]
    reply_to: str | None
    options: list[str]
    approving: str | None
    chosen: str | None
    at: float
    receipts: dict[str, dict[str, object]]
    sender_name: str
    recipient_names: list[str]


class MissionShown(MissionFields):
    """``missions.show``: the mission, its agents assessed, its threads and messages."""

    agents: list[AssessedView]
    threads: list[dict[str, object]]
    messages: list[MessageView]


class MissionAnswered(MissionView):
    """``missions.answer``: the mission after the answer, and the answer's message id."""

    answer: str


class Posted(TypedDict):
    """``messages.post``: the message and the thread it went to."""

    message: str
    thread: str


class ReportPresented(TypedDict):
    """``missions.request_approval``: the report's message and the options offered."""

    message: str
    mission: str
    options: list[str]


class DeliveryChecked(TypedDict):
    """``missions.check`` (one a worker) and ``missions.evidence``: the evidence recorded."""

    agent: str
    name: str
    delivery: dict[str, object] | None


ChangedFile = TypedDict(
    "ChangedFile",
    {"path": str, "added": int | None, "removed": int | None, "from": NotRequired[str]},
)


class ChangesResult(TypedDict):
    """``agents.changes``: what the agent's branch brings over its base."""

    base: str
    branch: str
    files: list[ChangedFile]
    added: int
    removed: int
    uncommitted: list[str]
    base_moved: int
    truncated: NotRequired[bool]
    diff: NotRequired[str]
    agent: NotRequired[str]


class Merged(TypedDict):
    """``agents.merge``: merged (how, the commit), or not (the conflicts); in words too."""

    merged: bool
    base: str
    branch: str
    base_moved: int
    conflicts: list[str]
    text: str
    how: NotRequired[str]
    commit: NotRequired[str]
    commits: NotRequired[int]
    uncommitted: NotRequired[bool]
    agent: NotRequired[str]


class Loss(TypedDict):
    """What removing an agent's worktree and branch loses."""

    worktree: str
    worktree_gone: bool
    branch: str | None
    base: str | None
    commits: list[str]
    uncommitted: list[str]


class Discarded(TypedDict):
    """``agents.discard``: what was (or, in a dry run, would be) lost."""

    agent: str
    name: str
    discarded: bool
    lost: Loss
    text: str


class Log(TypedDict):
    """``agents.log``: a page of the agent's transcript entries."""

    agent: str
    name: str
    harness: str
    paths: list[str]
    total: int
    start: int
    next: int | None
    entries: list[dict[str, object]]
    plan: dict[str, object] | None
    unreadable: int
    partial: bool
    notice: str | None


class Tidied(TypedDict):
    """``tidy``: one worktree, whether it can go, what it misses, whether it went."""

    agent: str
    name: str
    worktree: str
    branch: str | None
    removable: bool
    missing: list[str]
    removed: bool


class AgentOutcome(OutcomeView):
    """``agents.outcome``: the agent's plan, change and last reply."""

    agent: str


class OpenedPr(Pull):
    """``agents.open_pr``: the agent, the pull request's title, and what was done."""

    agent: str
    title: str

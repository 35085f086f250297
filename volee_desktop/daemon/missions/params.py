"""The parameters of the missions' IPC methods (docs/ipc.md), as their handlers receive them.

Decoded once by the method table (``daemon/params.py``): what is absent takes the default
written here, a wrong type is a ``bad_request`` naming the parameter.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from msgspec import Meta

from ...core.model import DEFAULT_HARNESS, Delivery, Harness, MessageKind, MissionKind
from ..params import AgentParams, Parameters


class MissionParams(Parameters, frozen=True, kw_only=True):
    """A method on one mission: its id, an id prefix or its goal's name."""

    mission: str


class CreateParams(Parameters, frozen=True, kw_only=True):
    """``missions.create``: the goal, its repositories and the coordinator's launch."""

    one_or_many: ClassVar[frozenset[str]] = frozenset({"repositories"})

    goal: str
    kind: MissionKind = MissionKind.CHANGE
    repositories: tuple[str, ...] = ()
    #: How many workers the coordinator is told it may run at once; None: its own judgement.
    workers: Annotated[int, Meta(ge=1)] | None = None
    harness: Harness = DEFAULT_HARNESS
    argv: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    model: str | None = None
    permission_mode: str | None = None
    name: str | None = None


class ListParams(Parameters, frozen=True, kw_only=True):
    """``missions.list``: ``all`` lists the missions that ended too."""

    all: bool = False


class AgentOrMission(Parameters, frozen=True, kw_only=True):
    """``missions.check`` and ``missions.workers``: one agent, else a mission."""

    agent: str | None = None
    mission: str | None = None


class EvidenceParams(AgentParams, frozen=True, kw_only=True):
    """``missions.evidence``: delivery evidence for ``agent``, read at ``checked_at``."""

    nouns: ClassVar[dict[str, str]] = {"delivery": "delivery evidence"}

    delivery: Delivery


class SpawnWorkerParams(AgentParams, frozen=True, kw_only=True):
    """``missions.spawn_worker``: ``agent`` is the coordinator; the worker's task and launch."""

    mission: str | None = None
    prompt: str
    repo: str | None = None
    #: None: the coordinator's harness.
    harness: Harness | None = None
    #: The task as the worker's prompt, without the mission's brief around it.
    verbatim: bool = False
    argv: tuple[str, ...] = ()
    name: str | None = None


class InviteParams(AgentParams, frozen=True, kw_only=True):
    """``missions.invite``: the agent invited to the mission."""

    mission: str


class JoinParams(InviteParams, frozen=True, kw_only=True):
    """``missions.join``: the agent joins the mission (or leaves it: ``joined`` false)."""

    joined: bool = True


class ReportParams(Parameters, frozen=True, kw_only=True):
    """``missions.request_approval``: the coordinator ``agent`` presents the report ``body``
    with the options the person answers with (``approving`` the one that approves)."""

    one_or_many: ClassVar[frozenset[str]] = frozenset({"options"})

    agent: str
    mission: str | None = None
    body: str
    options: tuple[str, ...] = ()
    approving: str | None = None


class AnswerParams(MissionParams, frozen=True, kw_only=True):
    """``missions.answer``: the person answers the report with an option or a text."""

    option: str | None = None
    text: str | None = None


class PostParams(Parameters, frozen=True, kw_only=True):
    """``messages.post``: a message from ``sender`` (the person unless an agent) to ``to``."""

    one_or_many: ClassVar[frozenset[str]] = frozenset({"to", "references", "options"})

    sender: str | None = None
    to: tuple[str, ...] = ()
    body: str
    kind: MessageKind = MessageKind.TEXT
    #: None: the thread volee picks (the mission's, else the direct one of its parties).
    thread: str | None = None
    references: tuple[str, ...] = ()
    reply_to: str | None = None
    options: tuple[str, ...] = ()
    approving: str | None = None


class ReadParams(Parameters, frozen=True, kw_only=True):
    """``messages.read``: the messages to ``agent`` (the person unless an agent reads)."""

    agent: str | None = None
    unread_only: bool = True
    #: The last ``limit`` of them only.
    limit: Annotated[int, Meta(ge=1)] | None = None
    #: Mark those read.
    mark: bool = True


class LogParams(AgentParams, frozen=True, kw_only=True):
    """``agents.log``: a page of the conversation, from ``start`` or the last ``tail``."""

    tail: Annotated[int, Meta(ge=0)] | None = None
    start: Annotated[int, Meta(ge=0)] | None = None
    limit: Annotated[int, Meta(ge=0)] | None = None


class ChangesParams(AgentParams, frozen=True, kw_only=True):
    """``agents.changes``: the agent's branch against its base, with the diff if asked."""

    diff: bool = False


class MergeParams(AgentParams, frozen=True, kw_only=True):
    """``agents.merge``: merge (or ``squash``) the agent's branch, with ``message``."""

    squash: bool = False
    message: str | None = None


class DiscardParams(AgentParams, frozen=True, kw_only=True):
    """``agents.discard``: remove the agent's worktree and branch (``dry_run``: say what)."""

    dry_run: bool = False


class OpenPrParams(AgentParams, frozen=True, kw_only=True):
    """``agents.open_pr``: push the branch, open its pull request (``dry_run``: say what)."""

    title: str | None = None
    body: str | None = None
    dry_run: bool = False


class TidyParams(Parameters, frozen=True, kw_only=True):
    """``tidy``: remove the worktrees whose work is delivered (``dry_run``: say which)."""

    dry_run: bool = False


__all__ = [
    "AgentOrMission",
    "AnswerParams",
    "ChangesParams",
    "CreateParams",
    "DiscardParams",
    "EvidenceParams",
    "InviteParams",
    "JoinParams",
    "ListParams",
    "LogParams",
    "MergeParams",
    "MissionParams",
    "OpenPrParams",
    "PostParams",
    "ReadParams",
    "ReportParams",
    "SpawnWorkerParams",
    "TidyParams",
]

"""Entities of the domain: Agent, Session key, Mission, Thread, Message and their parts.

All are frozen dataclasses: the registry replaces an entity when an event
changes it, so a copy of the registry's dicts is a cheap, safe fork.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .states import AgentState

HUMAN = "human"
VOLEE = "volee"


class Harness(StrEnum):
    """The harness profiles volee knows."""

    CLAUDE = "claude"
    CODEX = "codex"
    PI = "pi"
    GENERIC = "generic"

    @property
    def can_resume(self) -> bool:
        """Whether the harness keeps a conversation that a new process can continue."""
        return self is not Harness.GENERIC


#: The harness of an agent when none is named (``volee spawn``, a mission's coordinator, a hook).
DEFAULT_HARNESS = Harness.CLAUDE


class Role(StrEnum):
    """What an agent is for."""

    AGENT = "agent"
    COORDINATOR = "coordinator"
    WORKER = "worker"
    INDEPENDENT = "independent"


class Location(StrEnum):
    """Where the agent's program runs."""

    HOST = "host"
    TERMINAL = "terminal"
    BACKGROUND = "background"


@dataclass(frozen=True, kw_only=True)
class LaunchSettings:
    """How volee launched an agent, recorded so a resume uses the same settings."""

    harness: Harness
    argv: tuple[str, ...] = ()
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    permission_mode: str | None = None
    prompt: str | None = None


class Interruption(StrEnum):
    """Why an agent was interrupted (``InterruptionDetected.cause``)."""

    MACHINE_RESTARTED = "machine-restarted"  # its host's record is of an earlier boot
    HOST_STOPPED = "host-stopped"  # volee's host went away on this boot
    CRASHED = "crashed"  # a session volee did not launch: its process ended mid-turn


class PushState(StrEnum):
    """Whether a branch's commits are on its remote."""

    PUSHED = "pushed"
    UNPUSHED = "unpushed"
    NO_REMOTE = "no-remote"
    UNKNOWN = "unknown"


class PullState(StrEnum):
    """Where a pull request stands (merged is a state of its own, not a closed one)."""

    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"


@dataclass(frozen=True, kw_only=True)
class PullRequest:
    """A pull request of the agent's branch, with the commit it points at."""

    number: int
    state: PullState
    head: str
    url: str = ""


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """Delivery evidence of an agent's branch, read from git and the forge (seed 002)."""

    branch: str | None = None
    base: str | None = None
    commits: int = 0
    tip: str | None = None
    unmerged_tip: str | None = None
    merged_into_base: bool = False
    pushed: PushState = PushState.UNKNOWN
    clean: bool | None = None
    pull_request: PullRequest | None = None
    pull_request_known: bool = False
    checked_at: float = 0.0

    @property
    def pull_request_at_tip(self) -> PullRequest | None:
        """The pull request only when its head is the branch's tip: else it proves nothing."""
        pr = self.pull_request
        if pr is not None and self.tip is not None and pr.head == self.tip:
            return pr
        return None


class LimitKind(StrEnum):
    """Which limit stopped (or slows) an agent's turn (docs/limits.md)."""

    FIVE_HOUR = "five_hour"  # the plan's 5-hour (session) usage limit
    SEVEN_DAY = "seven_day"  # the plan's weekly limit (any 7-day claim)
    RATE = "rate"  # a rate limit that is not the plan's (an API key's 429)
    OVERLOADED = "overloaded"  # the API is overloaded (529)

    @property
    def plan(self) -> bool:
        """Whether it is the plan's usage limit (a reset time to wait for)."""
        return self in (LimitKind.FIVE_HOUR, LimitKind.SEVEN_DAY)


@dataclass(frozen=True, kw_only=True)
class Limit:
    """A limit an agent met: seen while its harness retries, or the one its turn ended on."""

    kind: LimitKind
    at: float  # when volee saw it (for an ended turn: when the turn ended)
    resets_at: float | None = None  # when the harness says it lifts, if it says
    ended: bool = False  # the turn ended on it (False: the harness still retries)
    attempt: int | None = None  # the harness's retry, "attempt 4/10"
    attempts: int | None = None
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class PlanUse:
    """The plan's use its harness last reported (0..1 of each window, None: not reported)."""

    at: float
    five_hour: float | None = None
    five_hour_resets_at: float | None = None
    seven_day: float | None = None
    seven_day_resets_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class PendingRestart:
    """An automatic restart that waits for its due time (M38)."""

    due_at: float
    attempt: int
    budget: int
    reason: str


class RequestKind(StrEnum):
    """What an agent that needs input asks for."""

    PERMISSION = "permission"  # to run a tool: allow or deny
    QUESTION = "question"  # a question with options (AskUserQuestion): an option or a reply
    DIALOG = "dialog"  # anything else the harness shows (an elicitation, a notice)


@dataclass(frozen=True, kw_only=True)
class Request:
    """What a needs-input agent asks, in words (``core/requests.py`` builds it from hooks).

    ``id`` names this one request (an answer names the request it answers, so it can never
    reach another); ``input`` is the tool's input as the harness gave it (None: not given);
    ``answered`` is how it was answered through volee (``allow``, ``allow-always``,
    ``deny``, ``option:N``, ``reply``) once it was, so an answer never goes in twice.
    """

    id: str
    kind: RequestKind
    tool: str | None = None
    summary: str = ""
    input: dict[str, Any] | None = None
    question: str = ""
    options: tuple[str, ...] = ()
    reason: str = ""
    at: float = 0.0
    answered: str | None = None
    answered_by: str | None = None
    answered_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class Agent:
    """One agent: a program volee launched or watches, with its lineage of sessions."""

    id: str
    name: str
    harness: Harness
    role: Role = Role.AGENT
    parent: str | None = None
    mission: str | None = None
    launched_by_volee: bool = True
    launch: LaunchSettings | None = None
    cwd: str = ""
    worktree: str | None = None
    repo: str | None = None
    branch: str | None = None
    location: Location | None = None
    pid: int | None = None
    model: str | None = None
    context_share: float | None = None
    cost_usd: float | None = None
    state: AgentState = AgentState.LAUNCHING
    detail: str = ""
    state_since: float = 0.0
    created_at: float = 0.0
    activity: str = ""
    activity_at: float | None = None
    last_progress_at: float = 0.0
    sessions: tuple[str, ...] = ()
    worked: bool = False
    held: str | None = None
    held_for_good: bool = False
    interrupted: Interruption | None = None
    # The request denied through volee that the current turn ended on ("Bash: rm -rf build"):
    # a turn that stopped on a denial is not a done one. A new request or turn clears it.
    denied: str | None = None
    # Nothing told the agent of that denial yet: the first word it gets after it (volee's
    # "carry on without it" notice, or the reason the person typed) is the denial's own.
    denied_untold: bool = False
    # That word was sent: the turn it starts keeps ``denied`` (it ends on the denial).
    denied_follow_up: bool = False
    action: str | None = None
    interruptions: tuple[float, ...] = ()
    restart: PendingRestart | None = None
    restarts_in_row: int = 0
    limit: Limit | None = None
    limit_continues: int = 0  # automatic continues after a limit since the last finished turn
    limit_continued: float | None = None  # ``Limit.at`` of the limit last continued
    plan: PlanUse | None = None
    host_started_at: float | None = None
    delivery: Delivery | None = None
    request: Request | None = None

    @property
    def session(self) -> str | None:
        """The current session: the last one linked."""
        return self.sessions[-1] if self.sessions else None

    @property
    def live(self) -> bool:
        return self.state.live

    @property
    def outcome(self) -> str | None:
        """``denied`` or ``interrupted`` when it rests (done or idle) after a turn that ended
        so, else None: the word the list and ``volee ls`` say instead of its state."""
        if self.state not in (AgentState.DONE, AgentState.IDLE):
            return None
        if self.denied is not None:
            return "denied"
        return "interrupted" if self.interrupted else None


class MissionKind(StrEnum):
    """What a mission delivers: changes to merge, or an analysis report."""

    CHANGE = "change"
    ANALYSIS = "analysis"


class MissionStatus(StrEnum):
    """Where a mission is (seed 002, "The end of a mission")."""

    RUNNING = "running"
    REPORTING = "reporting"
    AWAITING_APPROVAL = "awaiting-approval"
    APPROVED = "approved"
    CLOSED = "closed"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        return self in (MissionStatus.CLOSED, MissionStatus.CANCELLED)


class Verdict(StrEnum):
    """The supervisor's verdict on one worker."""

    DELIVERED = "delivered"
    NOT_DELIVERED = "not-delivered"
    NEEDS_HUMAN = "needs-human"
    FAILED = "failed"
    LOST = "lost"


@dataclass(frozen=True, kw_only=True)
class Assessment:
    """A worker's current verdict, with the evidence it was drawn from."""

    verdict: Verdict
    reason: str
    at: float
    evidence: Delivery | None = None


@dataclass(frozen=True, kw_only=True)
class Mission:
    """A goal handed to a coordinator and its workers, ended by the human's decision."""

    id: str
    goal: str
    kind: MissionKind
    repositories: tuple[str, ...] = ()
    requested_by: str = HUMAN
    coordinator: str | None = None
    status: MissionStatus = MissionStatus.RUNNING
    report: str | None = None
    reason: str = ""
    thread: str | None = None
    base_branch: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    assessments: dict[str, Assessment] = field(default_factory=dict)
    report_requested: bool = False
    # Agents the person or the coordinator invited (mission-invited): only they may join.
    invited: tuple[str, ...] = ()


class ThreadKind(StrEnum):
    """A mission thread, a direct thread between two parties, or the inbox."""

    MISSION = "mission"
    DIRECT = "direct"
    INBOX = "inbox"


@dataclass(frozen=True, kw_only=True)
class Thread:
    """A conversation."""

    id: str
    kind: ThreadKind
    mission: str | None = None
    parties: tuple[str, ...] = ()
    created_at: float = 0.0


class MessageKind(StrEnum):
    """What a message is."""

    TEXT = "text"
    QUESTION = "question"
    ANSWER = "answer"
    REPORT = "report"
    NOTICE = "notice"


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """Delivery and reading of a message by one recipient."""

    delivered_at: float | None = None
    read_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class Message:
    """A message in a thread, with one receipt per recipient."""

    id: str
    thread: str
    sender: str
    recipients: tuple[str, ...]
    kind: MessageKind = MessageKind.TEXT
    body: str = ""
    references: tuple[str, ...] = ()
    reply_to: str | None = None
    options: tuple[str, ...] = ()
    approving: str | None = None
    chosen: str | None = None
    at: float = 0.0
    receipts: dict[str, Receipt] = field(default_factory=dict)


def session_key(harness: str, session_id: str) -> str:
    """The registry's key for a session: harness and the harness's own id."""
    return f"{harness}:{session_id}"

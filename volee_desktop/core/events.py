"""Every event of the domain: past-tense facts with a type name and a schema version.

Events are frozen, keyword-only dataclasses.  ``TYPE`` is the stable name in
the log and on the wire; ``VERSION`` the schema version of the fields (the
store upcasts older records on read).  ``at`` is when the fact happened, in
seconds since the epoch, passed in by whoever produced the event (the core
never reads the clock).  The codec lives in ``store/codec.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from .model import (
    Delivery,
    Harness,
    Interruption,
    LaunchSettings,
    LimitKind,
    Location,
    MessageKind,
    MissionKind,
    MissionStatus,
    Request,
    Role,
    ThreadKind,
    Verdict,
)
from .states import AgentState

# --- closed sets of event fields (stored as their strings: old logs decode as they are) ----


class LinkKind(StrEnum):
    """How a session joined its agent (``SessionLinked.how``)."""

    STARTED = "started"  # a new conversation of the agent
    RESUMED = "resumed"  # the agent's conversation, resumed
    CONTINUED = "continued"  # a follow-up session (/clear, a new or forked session)
    MOVED = "moved"  # the agent's program moved to another session file
    DISCOVERED = "discovered"  # found by discovery, not started by volee


class StartKind(StrEnum):
    """How a host started the agent's program (``HostStarted.how``)."""

    LAUNCH = "launch"
    RESUME = "resume"
    RESTART = "restart"
    RELAUNCH = "relaunch"


class RecoveryOutcome(StrEnum):
    """What recovery decided for an interrupted agent (``RecoveryDecided.outcome``)."""

    RESUME = "resume"
    RELAUNCH = "relaunch"
    STOPPED = "stopped"
    HELD = "held"
    FAILED = "failed"


class Stopper(StrEnum):
    """Who stopped an agent (``StopRequested.by``)."""

    HUMAN = "human"


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of all events."""

    TYPE: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1
    at: float


@dataclass(frozen=True, kw_only=True)
class AgentEvent(Event):
    """An event about one agent."""

    agent: str


# --- agents -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AgentRegistered(AgentEvent):
    """A new agent, in state launching."""

    TYPE = "agent-registered"
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
    state: AgentState = AgentState.LAUNCHING
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class SessionLinked(AgentEvent):
    """A session joins an agent and becomes current (started, resumed, forked, discovered)."""

    TYPE = "session-linked"
    session: str
    how: LinkKind = LinkKind.STARTED


@dataclass(frozen=True, kw_only=True)
class StateChanged(AgentEvent):
    """New state and detail; ``state_since`` moves only when the state really changes.

    ``request`` is what a needs-input agent asks, when the event knows it (the fold keeps
    the open request, or derives one from the detail: ``core.requests.request_after``).
    """

    TYPE = "state-changed"
    state: AgentState
    detail: str = ""
    progress: bool = True
    request: Request | None = None


@dataclass(frozen=True, kw_only=True)
class RequestAnswered(AgentEvent):
    """The agent's open request was answered through volee (``answer``: allow,
    allow-always, deny, option:N, reply); a second answer to it is refused."""

    TYPE = "request-answered"
    request: str
    answer: str
    by: str = "human"


@dataclass(frozen=True, kw_only=True)
class ActivityRecorded(AgentEvent):
    """The last thing the agent did, in one line."""

    TYPE = "activity-recorded"
    activity: str


@dataclass(frozen=True, kw_only=True)
class WorkspaceUpdated(AgentEvent):
    """Better knowledge of the agent's directory, worktree and branch."""

    TYPE = "workspace-updated"
    cwd: str | None = None
    worktree: str | None = None
    repo: str | None = None
    branch: str | None = None


@dataclass(frozen=True, kw_only=True)
class LocationChanged(AgentEvent):
    """Where the agent's program runs, and its pid."""

    TYPE = "location-changed"
    location: Location
    pid: int | None = None


@dataclass(frozen=True, kw_only=True)
class ModelChanged(AgentEvent):
    """The model the agent uses."""

    TYPE = "model-changed"
    model: str


@dataclass(frozen=True, kw_only=True)
class ContextUsed(AgentEvent):
    """The share of its context window the agent's conversation uses (0..1), and what the
    conversation has cost so far (US dollars) when the harness says."""

    TYPE = "context-used"
    share: float
    cost_usd: float | None = None


@dataclass(frozen=True, kw_only=True)
class LimitHit(AgentEvent):
    """The agent met a usage, rate or overload limit: its harness retries (``ended`` false),
    or its turn ended on it (docs/limits.md)."""

    TYPE: ClassVar[str] = "limit-hit"
    kind: LimitKind
    resets_at: float | None = None
    ended: bool = False
    attempt: int | None = None
    attempts: int | None = None
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class PlanUsed(AgentEvent):
    """The plan's use the agent's harness reported changed (its status line; limits.md)."""

    TYPE: ClassVar[str] = "plan-used"
    five_hour: float | None = None
    five_hour_resets_at: float | None = None
    seven_day: float | None = None
    seven_day_resets_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class LimitContinued(AgentEvent):
    """volee (``automatic``) or the person continued an agent whose turn ended on a limit."""

    TYPE: ClassVar[str] = "limit-continued"
    automatic: bool = True
    prompt: str = ""


@dataclass(frozen=True, kw_only=True)
class DeliveryUpdated(AgentEvent):
    """New delivery evidence from git or the forge."""

    TYPE = "delivery-updated"
    delivery: Delivery


@dataclass(frozen=True, kw_only=True)
class AgentForgotten(AgentEvent):
    """The agent is removed; its sessions are ignored from then on; its name stays known."""

    TYPE = "agent-forgotten"


@dataclass(frozen=True, kw_only=True)
class AgentRenamed(AgentEvent):
    """The harness renamed the session of an agent volee only watches."""

    TYPE = "agent-renamed"
    name: str


@dataclass(frozen=True, kw_only=True)
class SessionReleased(AgentEvent):
    """A session no longer belongs to the agent, and is not ignored."""

    TYPE = "session-released"
    session: str


@dataclass(frozen=True, kw_only=True)
class AgentExpired(AgentEvent):
    """An agent volee only watched is gone with its session; its sessions are not ignored."""

    TYPE = "agent-expired"


@dataclass(frozen=True, kw_only=True)
class StopRequested(AgentEvent):
    """The human stopped the agent: it is held and volee does not resume it on its own."""

    TYPE = "stop-requested"
    by: Stopper = Stopper.HUMAN
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class MembershipChanged(AgentEvent):
    """An agent that joined through volee's MCP server takes part in a mission, or leaves."""

    TYPE = "membership-changed"
    mission: str
    joined: bool = True


@dataclass(frozen=True, kw_only=True)
class MissionInvited(AgentEvent):
    """The person or a mission's coordinator invites an agent to join it (docs/trust-model.md).

    Only an invited agent may join a mission (``membership-changed``), by itself.
    """

    TYPE = "mission-invited"
    mission: str
    by: str = "human"


@dataclass(frozen=True, kw_only=True)
class RequestRefused(AgentEvent):
    """The daemon refused an agent a request only the person may make (an audit record)."""

    TYPE = "request-refused"
    method: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class HookSpooled(AgentEvent):
    """The next ``events`` events of this agent came from a spooled hook payload, which no
    connection vouched for: anyone of the person's user could have written it (an audit
    record; the timeline marks them "unverified (from the spool)")."""

    TYPE = "hook-spooled"
    hook: str
    events: int
    written_at: float | None = None


# --- hosts and recovery -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HostStarted(AgentEvent):
    """A host started the agent's program (launch, resume, restart or relaunch)."""

    TYPE = "host-started"
    host_pid: int
    program_pid: int | None = None
    automatic: bool = False
    how: StartKind = StartKind.LAUNCH
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class HostAdopted(AgentEvent):
    """The daemon found the agent's host alive at start and took it back."""

    TYPE = "host-adopted"
    host_pid: int


@dataclass(frozen=True, kw_only=True)
class HostSuspect(AgentEvent):
    """The agent's host record points at a process that is not its host (another program, or
    a volee host of another agent, or one that does not answer for it): it was set aside,
    and that process was neither signalled nor talked to (docs/faults.md)."""

    TYPE = "host-suspect"
    host_pid: int
    reason: str
    set_aside: str = ""


@dataclass(frozen=True, kw_only=True)
class ProgramExited(AgentEvent):
    """The agent's program ended: a code, or the signal that killed it (never success)."""

    TYPE = "program-exited"
    code: int | None = None
    signal: str | None = None
    during_turn: bool = False

    @property
    def crashed(self) -> bool:
        return self.signal is not None or (self.code is not None and self.code != 0)

    @property
    def description(self) -> str:
        if self.signal is not None:
            return f"killed by {self.signal}"
        return f"exited with code {self.code}"


@dataclass(frozen=True, kw_only=True)
class InterruptionDetected(AgentEvent):
    """A host record without exit status whose host is gone: the agent was interrupted."""

    TYPE = "interruption-detected"
    cause: Interruption
    state: AgentState = AgentState.WORKING


@dataclass(frozen=True, kw_only=True)
class RecoveryDecided(AgentEvent):
    """What volee decided for an interrupted agent, and why (recovery.md's table)."""

    TYPE = "recovery-decided"
    outcome: RecoveryOutcome
    rule: int
    reason: str
    action: str | None = None  # resume | relaunch: offered to the person


@dataclass(frozen=True, kw_only=True)
class RestartScheduled(AgentEvent):
    """A crashed run will restart at ``due_at`` (M38)."""

    TYPE = "restart-scheduled"
    due_at: float
    attempt: int
    budget: int
    reason: str


@dataclass(frozen=True, kw_only=True)
class RestartCancelled(AgentEvent):
    """A waiting restart was called off or replaced."""

    TYPE = "restart-cancelled"
    reason: str


@dataclass(frozen=True, kw_only=True)
class RestartBudgetReset(AgentEvent):
    """A normal turn end after a minute of uptime gives the restart budget back."""

    TYPE = "restart-budget-reset"


# --- missions and conversations -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MissionCreated(Event):
    """A new mission."""

    TYPE = "mission-created"
    mission: str
    goal: str
    kind: MissionKind
    repositories: tuple[str, ...] = ()
    requested_by: str = "human"
    coordinator: str | None = None
    thread: str | None = None
    base_branch: str | None = None


@dataclass(frozen=True, kw_only=True)
class MissionUpdated(Event):
    """A mission's progress: status, coordinator, report; unset fields stay as they are."""

    TYPE = "mission-updated"
    mission: str
    status: MissionStatus | None = None
    coordinator: str | None = None
    report: str | None = None
    reason: str = ""
    report_requested: bool | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerAssessed(Event):
    """The supervisor's verdict on a worker of a mission, with its evidence."""

    TYPE = "worker-assessed"
    mission: str
    agent: str
    verdict: Verdict
    reason: str = ""
    evidence: Delivery | None = None


@dataclass(frozen=True, kw_only=True)
class ThreadOpened(Event):
    """A conversation begins."""

    TYPE = "thread-opened"
    thread: str
    kind: ThreadKind
    mission: str | None = None
    parties: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MessagePosted(Event):
    """A message in a thread, addressed to its recipients."""

    TYPE = "message-posted"
    message: str
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


@dataclass(frozen=True, kw_only=True)
class MessageDelivered(Event):
    """A message reached a recipient (typed into its session, or shown to the person)."""

    TYPE = "message-delivered"
    message: str
    recipient: str


@dataclass(frozen=True, kw_only=True)
class MessageRead(Event):
    """A recipient read a message."""

    TYPE = "message-read"
    message: str
    recipient: str


# --- settings ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SettingsConfirmed(Event):
    """The person confirmed the settings of ``config.toml`` that lower safety (config/safety.py's
    ``SAFETY_LOWERING``): ``settings`` maps each such key to the value confirmed, as TOML
    (``{"claude.permission_mode": '"bypassPermissions"'}``); a key left out is confirmed at
    no lowering value.  Only the daemon writes it, on the person's ``config.confirm``."""

    TYPE = "settings-confirmed"
    settings: dict[str, str] = field(default_factory=dict)


EVENT_CLASSES: tuple[type[Event], ...] = (
    AgentRegistered,
    SessionLinked,
    StateChanged,
    RequestAnswered,
    ActivityRecorded,
    WorkspaceUpdated,
    LocationChanged,
    ModelChanged,
    ContextUsed,
    LimitHit,
    LimitContinued,
    PlanUsed,
    DeliveryUpdated,
    AgentForgotten,
    AgentRenamed,
    SessionReleased,
    AgentExpired,
    StopRequested,
    MembershipChanged,
    MissionInvited,
    RequestRefused,
    HookSpooled,
    HostStarted,
    HostAdopted,
    HostSuspect,
    ProgramExited,
    InterruptionDetected,
    RecoveryDecided,
    RestartScheduled,
    RestartCancelled,
    RestartBudgetReset,
    MissionCreated,
    MissionUpdated,
    WorkerAssessed,
    ThreadOpened,
    MessagePosted,
    MessageDelivered,
    MessageRead,
    SettingsConfirmed,
)

EVENT_TYPES: dict[str, type[Event]] = {cls.TYPE: cls for cls in EVENT_CLASSES}

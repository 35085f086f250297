"""What every harness profile offers: pure argv builders and a pure hook-payload parser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..core import events as ev
from ..core.events import Event
from ..core.model import Agent, LaunchSettings
from ..core.states import AgentState


class Error(Exception):
    """Root of the harness package's errors."""


class PayloadError(Error):
    """A hook payload that cannot be read: the message says which field and why."""


@dataclass(frozen=True)
class LaunchPlan:
    """What the host runs for an agent, and the files volee writes beside it."""

    argv: tuple[str, ...]
    env: dict[str, str]
    files: dict[str, str]  # path -> text, written before the program starts
    session_id: str | None  # when volee chose the id upfront


class Profile(Protocol):
    """One harness: how to launch and resume it, and how its hooks become events."""

    name: str
    can_resume: bool
    #: The oldest version of the harness binary volee works with (None: no binary to check).
    min_version: str | None

    def launch(self, agent_id: str, settings: LaunchSettings, ctx: LaunchContext) -> LaunchPlan:
        """The argv for a fresh session with the agent's first task."""
        ...

    def resume(
        self,
        agent_id: str,
        settings: LaunchSettings,
        session: str,
        prompt: str | None,
        ctx: LaunchContext,
    ) -> LaunchPlan:
        """The argv that continues ``session`` (with ``prompt`` as the next message)."""
        ...

    def hook_events(
        self, agent: Agent, hook: str, payload: dict[str, Any], at: float
    ) -> list[Event]:
        """The events a hook payload means for ``agent`` (pure; may be empty)."""
        ...


@runtime_checkable
class ConversationProbe(Protocol):
    """A profile that can tell whether a session left anything for its resume to continue."""

    def has_conversation(self, session: str, settings: LaunchSettings) -> bool:
        """False when resuming ``session`` would fail for want of a conversation (reads disk)."""
        ...


@runtime_checkable
class ModeCheck(Protocol):
    """A profile whose permission modes depend on the release of its binary."""

    def check_modes(self, settings: LaunchSettings, help_text: str, version: str) -> None:
        """Raise Error when the binary whose ``--help`` is ``help_text`` refuses the mode."""
        ...


@dataclass(frozen=True)
class LaunchContext:
    """Facts a profile needs from the daemon: where volee is and where to write files."""

    volee: tuple[str, ...]  # argv prefix that runs `volee` (e.g. [python, -m, volee_desktop.cli])
    files_dir: str  # a private folder for this agent's generated files
    session_id: str  # a fresh UUID the daemon drew, for harnesses that take it upfront
    binary: str | None = None  # the harness executable, when configured
    # argv prefix of the hook shim, before the event name (default: `volee hook`); the daemon
    # gives the lean form that skips the interpreter's site start-up (docs/decisions.md D5).
    hook: tuple[str, ...] = ()
    # argv of the MCP relay (default: `volee mcp`); the daemon gives the lean `-I -S` form.
    mcp: tuple[str, ...] = ()
    # The daemon's MCP endpoint for this agent over HTTP, when it serves one (Claude Code then
    # needs no relay process; daemon/serving/mcphttp.py).
    mcp_url: str | None = None
    # argv of the status-line wrapper (cli/statusline.py, lean), before its arguments; empty:
    # volee sets no status line.
    statusline: tuple[str, ...] = ()

    @property
    def hook_argv(self) -> tuple[str, ...]:
        """The command a harness hook runs, without the event name."""
        return self.hook or (*self.volee, "hook")

    @property
    def mcp_argv(self) -> tuple[str, ...]:
        """The command a harness runs for volee's MCP tools (a relay to the daemon)."""
        return self.mcp or (*self.volee, "mcp")


def require_str(payload: dict[str, Any], key: str) -> str:
    """A required string field of a payload."""
    value = payload.get(key)
    if not isinstance(value, str) or not value:
        raise PayloadError(f"hook payload has no {key!r} string (got {value!r})")
    return value


def one_line(text: str, limit: int = 100) -> str:
    """The first line of ``text``, shortened to ``limit`` characters."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def session_ended(agent: Agent, at: float, *, left: str | None, why: object = None) -> list[Event]:
    """The events of the end of an agent's session (every harness's last hook): the person
    left it themselves (``left``, the detail saying so, and a stop the person asked for), a
    stop volee or the person asked for ended it (``held``: its detail kept), or it ended on
    its own (``why``, when the harness says)."""
    if left is not None:
        detail = left
    elif agent.held:
        detail = agent.detail if agent.state is AgentState.STOPPED else "stopped by you"
    else:
        detail = f"session ended ({why})" if why else "session ended"
    out: list[Event] = []
    if agent.state is not AgentState.STOPPED or detail != agent.detail:
        out.append(ev.StateChanged(at=at, agent=agent.id, state=AgentState.STOPPED, detail=detail))
    if left is not None:
        out.append(ev.StopRequested(at=at, agent=agent.id, by=ev.Stopper.HUMAN, reason=left))
    return out

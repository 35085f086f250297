"""Who is calling: the person, or one agent (docs/trust-model.md).

The daemon decides it per connection, from the kernel's word on the peer's pid
and that process's ancestry, never from what a request says; a caller it cannot
identify (its process gone, its pid reused, its ``/proc`` unreadable) is
``unknown``, never the person: it may read the agent list and nothing else
(``daemon/serving/access.py``).  This module is
only the answer's type, so that any handler (the API, the MCP protocol in the
daemon) can ask ``caller_of(conn)``; the daemon's ``identity`` module computes
it and the IPC server stores it on the connection when it accepts it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .transport import PeerCredentials


class CallerKind(StrEnum):
    """The kinds of callers: the person, an agent, or one the daemon cannot identify."""

    PERSON = "person"
    AGENT = "agent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Caller:
    """Who a connection speaks for, and how the daemon knows it (in words, for logs)."""

    kind: CallerKind
    agent: str | None = None
    pid: int | None = None
    how: str = ""
    #: What the process's environment claims instead (``VOLEE_AGENT`` naming another agent or
    #: the person): never believed, recorded as refused in the agent's timeline.
    claim: str | None = None

    @classmethod
    def person(cls, pid: int | None = None, how: str = "") -> Caller:
        return cls(CallerKind.PERSON, None, pid, how)

    @classmethod
    def of_agent(cls, agent: str, pid: int | None = None, how: str = "") -> Caller:
        return cls(CallerKind.AGENT, agent, pid, how)

    @classmethod
    def unknown(cls, pid: int | None = None, how: str = "") -> Caller:
        """A caller the daemon cannot identify: never the person, less than an agent."""
        return cls(CallerKind.UNKNOWN, None, pid, how)

    @property
    def is_person(self) -> bool:
        return self.kind is CallerKind.PERSON

    @property
    def is_agent(self) -> bool:
        return self.kind is CallerKind.AGENT

    def __str__(self) -> str:
        if self.kind is CallerKind.UNKNOWN:
            who = "a caller volee cannot identify"
        else:
            who = "the person" if self.is_person else f"agent {self.agent}"
        pid = f"pid {self.pid}" if self.pid is not None else "no pid"
        return f"{who} ({pid}{': ' + self.how if self.how else ''})"


#: What the daemon gives the IPC server to identify the peer of each accepted connection.
Identify = Callable[["PeerCredentials"], Caller]

#: The daemon's own code calling a handler directly (no connection) speaks for the person.
IN_PROCESS = Caller.person(None, "the daemon's own code")


class _HasCaller(Protocol):
    @property
    def caller(self) -> Caller: ...


def caller_of(conn: _HasCaller | None) -> Caller:
    """The caller of a connection; ``None`` (a call from inside the daemon) is the person."""
    if conn is None:
        return IN_PROCESS
    return conn.caller


__all__ = ["IN_PROCESS", "Caller", "CallerKind", "Identify", "caller_of"]

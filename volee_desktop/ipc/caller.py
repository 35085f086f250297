"""Who is calling: the person, or one agent (docs/trust-model.md).

The daemon decides it per connection, from the kernel's word on the peer's pid
and that process's ancestry, never from what a request says.  This module is
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
    """The two kinds of callers."""

    PERSON = "person"
    AGENT = "agent"


@dataclass(frozen=True)
class Caller:
    """Who a connection speaks for, and how the daemon knows it (in words, for logs)."""

    kind: CallerKind
    agent: str | None = None
    pid: int | None = None
    how: str = ""

    @classmethod
    def person(cls, pid: int | None = None, how: str = "") -> Caller:
        return cls(CallerKind.PERSON, None, pid, how)

    @classmethod
    def of_agent(cls, agent: str, pid: int | None = None, how: str = "") -> Caller:
        return cls(CallerKind.AGENT, agent, pid, how)

    @property
    def is_person(self) -> bool:
        return self.kind is CallerKind.PERSON

    def __str__(self) -> str:
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

"""The daemon's own methods: ``hook`` (handed to intake), ``daemon.status``, ``caller`` and
``daemon.stop``.  What each reads is given to the constructor; none reaches into the daemon."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypedDict

from ... import __version__
from ...ipc.caller import Caller, caller_of
from ...ipc.methods import Method
from ...ipc.server import Connection, MethodTable, Reply
from ...paths import Dirs
from ..agents.intake import HookResult, Intake
from ..compaction import LogStatus
from ..context import StatusBoard
from ..params import HookCall, NoParameters, decoder
from ..service import Service
from ..snapshots import StartupFacts


@dataclass(frozen=True)
class Reads:
    """What ``daemon.status`` reports from the other rooms, each read when asked."""

    suspect_hosts: Callable[[], dict[str, str]]
    unconfirmed: Callable[[], list[str]]
    #: The log's records and its last compaction (daemon/compaction.py).
    log: Callable[[], Awaitable[LogStatus]]


class Status(TypedDict):
    """``daemon.status``: the daemon's process, its log, its hooks, and each runner's part."""

    pid: int
    version: str
    started_at: float
    startup_seconds: float
    socket: str
    events_db: str
    seq: int
    #: How many records the log holds, its base and when it was last compacted.
    log: LogStatus
    agents: int
    live_agents: int
    snapshot_seq: int
    replayed: int
    spooled: int
    hooks_accepted: int
    hooks_rejected: int
    broken: str | None
    failing: str | None
    suspect_hosts: dict[str, str]
    config_problems: list[str]
    unconfirmed_settings: list[str]
    #: One part per runner (``StatusBoard``), each of its own shape.
    extra: dict[str, object]


class CallerView(TypedDict):
    """Who a connection (``caller``) or a desktop peer (``desktop.peer``) speaks for."""

    kind: str
    agent: str | None
    name: str | None
    pid: int | None
    how: str


def caller_view(caller: Caller, name: str | None) -> CallerView:
    """``caller``, with the name of its agent (None: the person, or not an agent)."""
    return {
        "kind": str(caller.kind),
        "agent": caller.agent,
        "name": name,
        "pid": caller.pid,
        "how": caller.how,
    }


class Stopping(TypedDict):
    """``daemon.stop``: the daemon stops once this is written."""

    stopping: bool


class DaemonMethods:
    def __init__(
        self,
        methods: MethodTable,
        service: Service,
        intake: Intake,
        dirs: Dirs,
        facts: StartupFacts,
        started_at: float,
        board: StatusBoard,
        reads: Reads,
        stop: Callable[[], None],
    ) -> None:
        self.service = service
        self.intake = intake
        self.dirs = dirs
        self.facts = facts
        self.started_at = started_at
        self.board = board
        self.reads = reads
        self.stop = stop
        methods.add(Method.HOOK, self.api_hook, HookCall)
        methods.add(Method.DAEMON_STATUS, self.api_status, decoder(NoParameters))
        methods.add(Method.CALLER, self.api_caller, decoder(NoParameters))
        methods.add(Method.DAEMON_STOP, self.api_stop, decoder(NoParameters))

    async def api_hook(self, _conn: Connection, params: HookCall) -> HookResult:
        return await self.intake.hook(params.raw)

    async def api_status(self, _conn: Connection, _params: NoParameters) -> Status:
        registry = self.service.registry
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.started_at,
            "startup_seconds": self.facts.seconds,
            "socket": str(self.dirs.socket),
            "events_db": str(self.dirs.events_db),
            "seq": registry.seq,
            "log": await self.reads.log(),
            "agents": len(registry.agents),
            "live_agents": sum(1 for a in registry.agents.values() if a.state.live),
            "snapshot_seq": self.facts.snapshot_seq,
            "replayed": self.facts.replayed,
            "spooled": self.facts.spooled,
            "hooks_accepted": self.intake.accepted,
            "hooks_rejected": self.intake.rejected_count,
            "broken": self.service.broken,
            "failing": self.service.failing,
            "suspect_hosts": self.reads.suspect_hosts(),
            "config_problems": self.facts.config_problems,
            "unconfirmed_settings": self.reads.unconfirmed(),
            "extra": self.board.read(),
        }

    async def api_caller(self, conn: Connection, _params: NoParameters) -> CallerView:
        """Who this connection speaks for, as the daemon decided it (docs/trust-model.md)."""
        who = caller_of(conn)
        name = self.service.registry.name_of(who.agent) if who.agent else None
        return caller_view(who, name)

    async def api_stop(self, _conn: Connection, _params: NoParameters) -> Reply[Stopping]:
        return Reply({"stopping": True}, after=self.stop)

"""Who is on the other end of a connection: the person, or an agent (docs/trust-model.md).

Every agent runs as the person's own user, so the peer's uid says nothing.  The
kernel also gives the peer's pid (SO_PEERCRED / LOCAL_PEERPID, read by the IPC
transport); a process that descends from an agent's program is that agent,
whatever its requests say.  In order, the first that matches decides:

1. an ancestor (or the peer itself) is the program of a live agent: the
   program pid of its host record (checked against the record's start time, so
   a reused pid is not taken for it), or the pid of a live agent volee only
   watches (found by discovery); or the agent's host, which on Linux adopts
   the orphans of its program's tree (a subreaper: ``hosts/spawn.py``);
2. the peer's session is the session of such a program (the host makes the
   program a session leader: a process that double-forked away from the tree
   without ``setsid`` keeps it);
3. an ancestor is volee's host of an agent (its command line names the agent),
   for the moment between the program's start and its host record;
4. the peer's own environment has ``VOLEE_AGENT`` naming a known agent (volee
   sets it for every agent it launches; a process that left the tree without
   clearing it is still known).

Anything else is the person, but only once it is known for sure (fail closed):
the process that connected still runs (the pidfd the transport took at accept
says so, or its start time is the same before and after), it started before
the connection was accepted (a later one only got its pid), and its whole
ancestry up to init was read, each parent older than its child.  A peer that
is gone, reused, a zombie, unreadable, or whose chain breaks is ``unknown``:
never the person, less than an agent (``daemon/serving/access.py``).  The rules only
ever *lower* what a caller may do, so a claim in the environment or the command
line is believed when nothing stronger says otherwise.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from ...core.model import Location
from ...core.registry import Registry
from ...hosts.errors import RecordError
from ...hosts.recordio import command_line
from ...hosts.records import HostRecord, host_alive, program_alive, read_record
from ...ipc.caller import Caller
from ...ipc.transport import PeerCredentials, peer_alive
from ..agents.leftovers import adopted_by, environ_agent

log = logging.getLogger(__name__)

#: Deeper than any real process tree; a loop in a broken table stops here.
MAX_DEPTH = 64
#: How a volee host's command line names its module (launcher.py's boot line), or the native
#: host's binary (hosts/native).
HOST_MODULES = (
    "volee_desktop.hosts.main",
    "volee_desktop.hosts.host",
    "volee_desktop/hosts/native/volee-host",
)


@dataclass(frozen=True)
class ProcStat:
    """What the process table says of one live process."""

    parent: int
    #: When it started, on ``process_clock`` (None when the OS does not say).
    started: float | None
    #: It ended and waits for its parent to reap it (a zombie): it will read no reply.
    ended: bool = False


class ProcessTable(Protocol):
    """What identification reads about processes (/proc or psutil; a dict in tests)."""

    def stat(self, pid: int) -> ProcStat | None:
        """Its parent and start, or None when the process is gone or cannot be read."""

    def exists(self, pid: int) -> bool:
        """Whether a process has this pid (readable or not)."""

    def session(self, pid: int) -> int | None:
        """The session id, or None when unknown."""

    def cmdline(self, pid: int) -> list[str]:
        """The command line ([] when unreadable)."""

    def env_agent(self, pid: int) -> str | None:
        """``VOLEE_AGENT`` of the process's environment, if readable and set."""


class PsutilTable:
    """The machine's process table (``/proc`` on Linux, psutil elsewhere)."""

    def __init__(self) -> None:
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def stat(self, pid: int) -> ProcStat | None:
        if sys.platform.startswith("linux"):
            # /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and ")".
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rindex(b")") + 2 :].split()
                # fields[0] is the state (stat field 3), [1] the ppid, [19] the start in ticks.
                return ProcStat(
                    parent=int(fields[1]),
                    started=int(fields[19]) / self._ticks,
                    ended=fields[0] in (b"Z", b"X"),
                )
            except (OSError, ValueError, IndexError):
                return None
        import psutil

        try:
            process = psutil.Process(pid)
            return ProcStat(
                parent=int(process.ppid()),
                started=float(process.create_time()),
                ended=process.status() == psutil.STATUS_ZOMBIE,
            )
        except (psutil.Error, OSError):
            return None

    def exists(self, pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True  # EPERM: it exists, another user's
        return True

    def session(self, pid: int) -> int | None:
        try:
            return os.getsid(pid)
        except OSError:
            return None

    def cmdline(self, pid: int) -> list[str]:
        if sys.platform.startswith("linux"):
            # Read on every connection (the app's own link too): psutil's import alone is
            # about 10 ms of the app's start, before its list answers (issue 27).
            return command_line(pid) or []
        import psutil

        try:
            return [str(part) for part in psutil.Process(pid).cmdline()]
        except (psutil.Error, OSError):
            return []

    def env_agent(self, pid: int) -> str | None:
        if sys.platform.startswith("linux"):
            return environ_agent(pid)
        import psutil

        try:
            return psutil.Process(pid).environ().get("VOLEE_AGENT") or None
        except (psutil.Error, OSError):
            return None


def host_agent(cmdline: list[str]) -> str | None:
    """The agent of a volee host's command line (``… volee_desktop.hosts.host … --agent AG``)."""
    head = cmdline[: cmdline.index("--")] if "--" in cmdline else cmdline
    if not any(module in part for part in head for module in HOST_MODULES):
        return None
    try:
        return head[head.index("--agent") + 1]
    except (ValueError, IndexError):
        return None


@dataclass(frozen=True)
class Program:
    """A live agent's program (or its host), as identification knows it."""

    agent: str
    pid: int
    record: HostRecord | None  # None for an agent volee only watches
    what: str = "the program"  # or "volee's host", which adopts the program's orphans


@dataclass(frozen=True)
class _HostFound:
    agent: str
    host_pid: int

    def caller(self, pid: int, name: Callable[[str], str]) -> Caller:
        how = f"descends from volee's host (pid {self.host_pid}) of agent {name(self.agent)}"
        return Caller.of_agent(self.agent, pid, how)


class HostRecords:
    """The host records of ``folder``, re-read only when a file changed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: dict[str, tuple[int, HostRecord | None]] = {}

    def running(self) -> Iterator[HostRecord]:
        seen: set[str] = set()
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            entries = []
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            seen.add(entry.name)
            try:
                mtime = entry.stat().st_mtime_ns
            except OSError:
                continue
            cached = self._cache.get(entry.name)
            if cached is None or cached[0] != mtime:
                try:
                    record = read_record(entry.path)
                except RecordError:
                    record = None
                cached = self._cache[entry.name] = (mtime, record)
            if cached[1] is not None and cached[1].running:
                yield cached[1]
        for gone in self._cache.keys() - seen:
            del self._cache[gone]


class Identifier:
    """``identify(peer)`` for the IPC server: the caller of a new connection."""

    def __init__(
        self,
        registry: Callable[[], Registry],
        records: HostRecords,
        table: ProcessTable | None = None,
        own_pid: int | None = None,
        alive: Callable[[HostRecord], bool] = program_alive,
        host_alive: Callable[[HostRecord], bool] = host_alive,
        adopts: bool = False,
    ) -> None:
        self._registry = registry
        self._records = records
        self._table = table or PsutilTable()
        self._own_pid = os.getpid() if own_pid is None else own_pid
        self._alive = alive
        self._host_alive = host_alive
        #: This daemon is the subreaper of its hosts (the headless one, ``agents/leftovers.py``):
        #: a process that reaches it through a child outside its own session is a leftover of a
        #: killed host it has not ended yet, never the person.
        self._adopts = adopts

    def programs(self, registry: Registry) -> dict[int, Program]:
        """The program pid of every live agent."""
        found: dict[int, Program] = {}
        for record in self._records.running():
            # A forgotten agent whose program still runs is still that agent, not the person.
            if record.agent in registry.names and record.program_pid is not None:
                found[record.program_pid] = Program(record.agent, record.program_pid, record)
                # On Linux the host is the subreaper of its program's tree: what daemonized
                # away from the program (setsid and all) is re-parented to it.
                found.setdefault(
                    record.host_pid, Program(record.agent, record.host_pid, record, "volee's host")
                )
        for agent in registry.agents.values():
            # Agents volee only watches: their pid from discovery, while they live.
            if (
                agent.pid is not None
                and agent.state.live
                and agent.location is not Location.HOST
                and agent.pid not in found
            ):
                found[agent.pid] = Program(agent.id, agent.pid, None)
        return found

    def _verified(self, program: Program | None) -> bool:
        if program is None:
            return False
        if program.record is None:
            return True
        if program.pid == program.record.host_pid:
            return self._host_alive(program.record)
        return self._alive(program.record)

    def _host_in(self, chain: list[int], registry: Registry) -> _HostFound | None:
        """The nearest ancestor of ``chain`` that is volee's host of a known agent."""
        for ancestor in chain:
            agent_id = host_agent(self._table.cmdline(ancestor))
            if agent_id is not None and agent_id in registry.agents:
                return _HostFound(agent_id, ancestor)
        return None

    def ancestors(self, pid: int) -> Iterator[int]:
        """``pid`` and its ancestors, nearest first (up to, not including, pid 0/1)."""
        chain: list[int] = []
        self._walk(pid, chain)
        yield from chain

    def _walk(self, pid: int, chain: list[int]) -> str | None:
        """Fill ``chain`` with ``pid`` and its ancestors, nearest first, up to (not including)
        pid 0/1; None when the walk reached it, else why the chain is not known whole."""
        current = pid
        younger: float | None = None
        while current > 1:
            if current in chain:
                return f"its ancestry loops at pid {current}"
            if len(chain) >= MAX_DEPTH:
                return f"its ancestry is deeper than {MAX_DEPTH} processes"
            stat = self._table.stat(current)
            if stat is None:
                return f"its ancestor pid {current} is gone or cannot be read"
            if younger is not None and stat.started is not None and stat.started > younger:
                # The parent ended and its pid went to a later process: not an ancestor.
                return f"its parent's pid {current} belongs to a later process now"
            if stat.ended and current != pid:
                return f"its ancestor pid {current} has ended"
            chain.append(current)
            younger = stat.started if stat.started is not None else younger
            current = stat.parent
        return None

    def _live(self, peer: PeerCredentials) -> ProcStat | Caller:
        """What the table says of the process that connected; an ``unknown`` caller when it
        cannot be the one at its pid now (gone, reused, a zombie, unreadable)."""
        pid = peer.pid
        assert pid is not None
        if peer_alive(peer) is False:
            return Caller.unknown(pid, f"the process that connected (pid {pid}) has ended")
        stat = self._table.stat(pid)
        if stat is None:
            if self._table.exists(pid):
                return Caller.unknown(pid, f"its process (pid {pid}) cannot be read in /proc")
            return Caller.unknown(pid, f"its process (pid {pid}) is gone")
        if stat.ended:
            return Caller.unknown(pid, f"its process (pid {pid}) has ended")
        if peer.accepted is not None and stat.started is not None and stat.started > peer.accepted:
            return Caller.unknown(
                pid,
                f"pid {pid} is another process now: it started after the connection was accepted",
            )
        return stat

    def _still_there(self, peer: PeerCredentials, first: ProcStat) -> bool:
        """After identification: the process read is still the one that connected."""
        assert peer.pid is not None
        if peer_alive(peer) is False:
            return False
        now = self._table.stat(peer.pid)
        return now is not None and not now.ended and now.started == first.started

    def __call__(self, peer: PeerCredentials) -> Caller:
        pid = peer.pid
        if pid is None:
            # No platform volee runs on says nothing; a Windows pipe would give the pid too.
            return Caller.unknown(None, "the OS does not say which process connected")
        if pid == self._own_pid:
            return Caller.person(pid, "the daemon's own process")
        first = self._live(peer)
        if isinstance(first, Caller):
            return first  # fail closed: never the person
        caller = self._identify(pid)
        if caller.is_agent:
            claimed = self._table.env_agent(pid)
            if claimed is not None and claimed != caller.agent:
                # Inside agent A with VOLEE_AGENT=B (or human): A, and the claim is recorded.
                caller = replace(caller, claim=claimed)
        if not self._still_there(peer, first):
            # It ended (and maybe its pid went to another process) while it was being read.
            return Caller.unknown(pid, f"its process (pid {pid}) ended while volee identified it")
        return caller

    def _identify(self, pid: int) -> Caller:
        registry = self._registry()
        programs = self.programs(registry)

        def name(agent_id: str) -> str:
            return registry.name_of(agent_id) or agent_id

        chain: list[int] = []
        broken = self._walk(pid, chain)
        for index, ancestor in enumerate(chain):
            program = programs.get(ancestor)
            if self._verified(program):
                assert program is not None
                if program.record is not None and ancestor == program.record.host_pid:
                    # An orphan this host adopted, unless a nearer ancestor is another agent's
                    # host with no record yet (a daemon the host adopted started that host).
                    nearer = self._host_in(chain[:index], registry)
                    if nearer is not None:
                        return nearer.caller(pid, name)
                what = "is" if ancestor == pid else "descends from"
                return Caller.of_agent(
                    program.agent,
                    pid,
                    f"{what} {program.what} (pid {ancestor}) of agent {name(program.agent)}",
                )
        session = self._table.session(pid)
        program = programs.get(session) if session is not None else None
        if self._verified(program):
            assert program is not None
            return Caller.of_agent(
                program.agent,
                pid,
                f"runs in the session of agent {name(program.agent)}'s program (pid {session})",
            )
        host = self._host_in(chain, registry)
        if host is not None:
            return host.caller(pid, name)
        claimed = self._table.env_agent(pid)
        if claimed is not None and claimed in registry.agents:
            return Caller.of_agent(claimed, pid, f"its environment says VOLEE_AGENT={claimed}")
        if broken is not None:
            # The person only on a positive identification: an ancestry read in full.
            return Caller.unknown(pid, f"{broken}, so volee cannot tell whose process it is")
        if self._adopts and adopted_by(chain, self._own_pid, self._table.session):
            return Caller.unknown(
                pid, "it is what a killed host left behind (the daemon adopted it to end it)"
            )
        return Caller.person(pid, "descends from no agent volee knows")


__all__ = ["HostRecords", "Identifier", "ProcStat", "ProcessTable", "PsutilTable", "host_agent"]

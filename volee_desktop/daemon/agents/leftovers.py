"""Leftovers: what a host that went away left of its agent's tree, ended by the daemon.

An agent's processes must never outlive its host as someone else (issue 22, finding 3;
docs/trust-model.md).  The host ends what its program left before it exits
(``hosts/host.py``).  A host killed outright (SIGKILL, the OOM killer) ends nothing: its
orphans go to the nearest *subreaper* above it, and the daemon ends them when it sees the
host gone (``AgentHosts``).  Linux only (``/proc``); elsewhere nothing is found.

The headless daemon (``volee daemon run``) makes itself that subreaper (``run_foreground``).
A host is launched detached (its own session) but stays the daemon's descendant, so the
orphans of a killed host become children of the daemon, which no fork, ``setsid`` or
cleared environment undoes.  What is chosen (``choose``), each with its descendants:

a. a child of the daemon outside the daemon's own session that is not a live host (the
   daemon's own subprocesses are in its session, and no process of a host's tree can ever
   join that session);
b. every process in the session of the dead host's program (a session is never joined, and
   its id is not reused while a member lives; ``setsid`` leaves it, see a), when the program
   still runs or its host was seen going just now;
c. every process whose environment names the dead host's agent (``VOLEE_AGENT``; a process
   can clear it, so this is for a host of an earlier daemon, or the app's daemon, which is
   no subreaper: its orphans went to init, where only b and c find them).

Never the daemon, its ancestors or its session, nor a live host or what descends from one
(the agent's next program).  They get SIGKILL at once, no grace: nothing names them as the
agent any more, and a grace would be time to speak as the person.  Then the daemon reaps
those that were its children.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...hosts import tree
from ...hosts.launcher import SPAWNING

log = logging.getLogger(__name__)

#: How long ending waits for the killed processes to be gone (SIGKILL is not refused).
END_WAIT = 5.0
#: Rounds of choosing again: a leftover may fork while it is being ended.
ROUNDS = 5
_PR_GET_CHILD_SUBREAPER = 37


@dataclass(frozen=True)
class Proc:
    """One process as ``/proc/<pid>/stat`` says."""

    pid: int
    parent: int
    session: int
    start: int  # clock ticks since boot: a reused pid has another
    zombie: bool


@dataclass(frozen=True)
class Dead:
    """What is known of an agent's host that went away (from its record)."""

    agent: str
    host_pid: int
    host_start: int | None
    program_pid: int | None
    program_start: int | None
    # Seen gone just now (not a record found at start): the program's session id cannot
    # have been reused by another session since, so its members are the agent's.
    fresh: bool = True


def processes() -> dict[int, Proc]:
    """Every process of the machine ({} where there is no ``/proc``)."""
    found: dict[int, Proc] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        fields = tree.stat_fields(int(name))
        if fields is None:
            continue
        with contextlib.suppress(ValueError):
            found[int(name)] = Proc(
                pid=int(name),
                parent=int(fields[1]),
                session=int(fields[3]),
                start=int(fields[19]),
                zombie=fields[0] in (b"Z", b"X"),
            )
    return found


def environ_agent(pid: int) -> str | None:
    """``VOLEE_AGENT`` of the environment ``pid`` was started with (None: unset, unreadable)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    for entry in data.split(b"\0"):
        if entry.startswith(b"VOLEE_AGENT="):
            return entry[len(b"VOLEE_AGENT=") :].decode(errors="replace") or None
    return None


def choose(
    procs: dict[int, Proc],
    dead: Iterable[Dead],
    *,
    own_pid: int,
    adopted: bool,
    live_host: Callable[[Proc], bool],
    environ: Callable[[int], str | None] = environ_agent,
) -> list[int]:
    """The leftovers of ``dead`` hosts in ``procs``, parents before their children."""
    dead = list(dead)
    own = procs.get(own_pid)
    own_session = own.session if own is not None else os.getsid(0)
    kept: set[int] = {own_pid, 0, 1}
    parent = own.parent if own is not None else 0
    while parent > 1 and parent not in kept:  # the daemon's ancestors
        kept.add(parent)
        parent = procs[parent].parent if parent in procs else 0
    hosts = [p.pid for p in procs.values() if not p.zombie and live_host(p)]
    kept.update(hosts)
    kept.update(tree.descendants(hosts, {p.pid: p.parent for p in procs.values()}))
    kept.update(p.pid for p in procs.values() if p.session == own_session)

    roots: list[int] = []
    if adopted:
        roots += [p.pid for p in procs.values() if p.parent == own_pid]
    for d in dead:
        leader = procs.get(d.program_pid) if d.program_pid is not None else None
        if d.program_pid is None or d.program_start is None:
            continue
        if leader is not None and leader.start != d.program_start:
            continue  # another process has that pid: it leads that session, not the program
        if leader is None and not d.fresh:
            continue  # long gone: a later session may have had that id since
        roots += [p.pid for p in procs.values() if p.session == d.program_pid]
    agents = {d.agent for d in dead}
    if agents:
        roots += [p.pid for p in procs.values() if p.pid not in kept and environ(p.pid) in agents]
    roots = [pid for pid in dict.fromkeys(roots) if pid not in kept]
    table = {p.pid: p.parent for p in procs.values()}
    return [pid for pid in [*roots, *tree.descendants(roots, table)] if pid not in kept]


def end(pids: list[int], procs: dict[int, Proc]) -> list[int]:
    """SIGKILL each of ``pids`` that is still the process ``procs`` saw, wait until they are
    gone (up to ``END_WAIT``) and reap those that were the daemon's children; the ended."""
    handles: list[int] = []
    ended: list[int] = []
    for pid in pids:
        seen = procs.get(pid)
        if seen is None:
            continue
        fd = _pidfd(pid)
        fields = tree.stat_fields(pid)
        if fields is None or int(fields[19]) != seen.start:
            if fd is not None:
                os.close(fd)
            continue  # gone, or its pid was taken by another process meanwhile
        try:
            if fd is not None:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                handles.append(fd)
            else:
                os.kill(pid, signal.SIGKILL)
            ended.append(pid)
        except (ProcessLookupError, PermissionError):
            if fd is not None:
                os.close(fd)
    _wait_gone(handles)
    for pid in ended:
        reap(pid)
    return ended


def _pidfd(pid: int) -> int | None:
    """A handle on the process that stays its own if the pid is reused (Linux >= 5.3)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _wait_gone(handles: list[int]) -> None:
    """Wait until every pidfd says its process ended (or ``END_WAIT``), then close them."""
    try:
        poller = select.poll()
        for fd in handles:
            poller.register(fd, select.POLLIN)
        left = set(handles)
        deadline = time.monotonic() + END_WAIT
        while left and time.monotonic() < deadline:
            for fd, _ in poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
                left.discard(fd)
                poller.unregister(fd)
    finally:
        for fd in handles:
            os.close(fd)


def reap(pid: int) -> None:
    """Collect ``pid``'s exit if it is a child of the daemon that ended; else nothing."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def reap_host(d: Dead) -> None:
    """Reap a dead host that was the daemon's child (it is a zombie until then), checking its
    start so that another child that got the pid since is never reaped in its place."""
    fields = tree.stat_fields(d.host_pid)
    if fields is None or fields[0] not in (b"Z", b"X"):
        return
    if d.host_start is not None and int(fields[19]) != d.host_start:
        return
    reap(d.host_pid)


def reap_strays(procs: dict[int, Proc]) -> None:
    """Reap every ended child of the daemon outside its session: hosts that went unwatched
    (one that failed to start) and leftovers.  The daemon's own subprocesses are in its
    session, and their owners (``subprocess``, asyncio) wait for them."""
    own = os.getpid()
    session = os.getsid(0)
    for p in procs.values():
        if p.parent == own and p.zombie and p.session != session:
            reap(p.pid)


def end_leftovers(
    dead: list[Dead], *, adopted: bool, live_host: Callable[[Proc], bool]
) -> list[int]:
    """Choose and end the leftovers of ``dead`` hosts, again while new ones appear."""
    if not sys.platform.startswith("linux"):
        return []
    if adopted:  # hosts are the daemon's children only when it is their subreaper
        for d in dead:
            reap_host(d)
        reap_strays(processes())
    ended: list[int] = []
    for _ in range(ROUNDS):
        with SPAWNING:  # no host half-way between fork and exec (hosts/launcher.py)
            procs = processes()
            chosen = choose(procs, dead, own_pid=os.getpid(), adopted=adopted, live_host=live_host)
        if not chosen:
            break
        ended += end(chosen, procs)
    return ended


def adopted_by(chain: list[int], own_pid: int, session: Callable[[int], int | None]) -> bool:
    """Whether a process whose ancestry is ``chain`` (itself first) is a leftover the daemon
    adopted and has not ended yet: it reaches the daemon through a child outside the daemon's
    session.  For identification (``daemon/serving/identity.py``): such a process was in an agent's
    tree, never the person's; a live host's tree is known before the walk gets this far."""
    if own_pid not in chain[1:]:
        return False
    child = chain[chain.index(own_pid) - 1]
    child_session, own_session = session(child), session(own_pid)
    return child_session is not None and child_session != own_session


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux); False elsewhere."""
    from ...hosts.spawn import become_subreaper as prctl_subreaper

    return prctl_subreaper()


def is_subreaper() -> bool:
    """Whether this process adopts its descendants' orphans (``PR_GET_CHILD_SUBREAPER``)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
            return False
        return flag.value != 0
    except (OSError, AttributeError):
        return False


__all__ = [
    "Dead",
    "Proc",
    "adopted_by",
    "become_subreaper",
    "choose",
    "end",
    "end_leftovers",
    "environ_agent",
    "is_subreaper",
    "processes",
]

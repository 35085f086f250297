"""Identity from the connection: a process that descends from an agent's program is that agent.

A fake process table and real host records; the e2e tests (tests/e2e/test_identity_e2e.py)
run the same rules against real processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, Location
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.serving.identity import (
    HostRecords,
    Identifier,
    ProcStat,
    PsutilTable,
    host_agent,
)
from volee_desktop.hosts.records import HostRecord, write_record_atomic
from volee_desktop.ipc.caller import IN_PROCESS, Caller, CallerKind, caller_of
from volee_desktop.ipc.transport import PeerCredentials, process_clock

A1 = "ag_01HF7YAT010000000000000001"
A2 = "ag_01HF7YAT010000000000000002"
WATCHED = "ag_01HF7YAT010000000000000003"
T0 = 1_700_000_000.0
DAEMON = 50
#: When the processes of the fake table started, and when their connections were accepted
#: (seconds since boot, the clock /proc keeps start times in).
T_START = 100.0
ACCEPTED = 500.0


@dataclass
class Table:
    """pid -> parent, plus sessions, command lines and VOLEE_AGENT of the environment.

    Every process started at ``T_START`` unless ``starts`` says otherwise; ``unreadable``
    exist but cannot be read, ``zombies`` have ended and wait to be reaped."""

    parents: dict[int, int] = field(default_factory=dict)
    sessions: dict[int, int] = field(default_factory=dict)
    cmdlines: dict[int, list[str]] = field(default_factory=dict)
    envs: dict[int, str] = field(default_factory=dict)
    starts: dict[int, float] = field(default_factory=dict)
    unreadable: set[int] = field(default_factory=set)
    zombies: set[int] = field(default_factory=set)

    def stat(self, pid: int) -> ProcStat | None:
        if pid in self.unreadable or pid not in self.parents:
            return None
        return ProcStat(self.parents[pid], self.starts.get(pid, T_START), pid in self.zombies)

    def exists(self, pid: int) -> bool:
        return pid in self.parents or pid in self.unreadable

    def parent(self, pid: int) -> int | None:
        # What identification read before issue 22 (the tests run against it to fail there).
        stat = self.stat(pid)
        return None if stat is None else stat.parent

    def session(self, pid: int) -> int | None:
        return self.sessions.get(pid)

    def cmdline(self, pid: int) -> list[str]:
        return self.cmdlines.get(pid, [])

    def env_agent(self, pid: int) -> str | None:
        return self.envs.get(pid)


def _registry() -> Registry:
    registry = Registry()
    for agent, name in ((A1, "alpha"), (A2, "beta")):
        registry.apply(ev.AgentRegistered(at=T0, agent=agent, name=name, harness=Harness.CLAUDE))
    registry.apply(
        ev.AgentRegistered(
            at=T0,
            agent=WATCHED,
            name="watched",
            harness=Harness.CLAUDE,
            launched_by_volee=False,
            state=AgentState.WORKING,
            location=Location.TERMINAL,
        )
    )
    registry.apply(ev.LocationChanged(at=T0, agent=WATCHED, location=Location.TERMINAL, pid=700))
    return registry


def _record(hosts: Path, agent: str, host_pid: int, program_pid: int) -> None:
    write_record_atomic(
        hosts / f"{agent}.json",
        HostRecord(
            agent=agent,
            host_pid=host_pid,
            program_pid=program_pid,
            program_create_time=None,
            boot_time=None,
            started_at=T0,
            argv=("claude",),
            cwd="/",
        ),
    )


def _identifier(tmp_path: Path, table: Table, dead: frozenset[int] = frozenset()) -> Identifier:
    registry = _registry()
    _record(tmp_path, A1, 100, 101)
    _record(tmp_path, A2, 200, 201)
    return Identifier(
        lambda: registry,
        HostRecords(tmp_path),
        table,
        own_pid=DAEMON,
        alive=lambda r: r.program_pid not in dead,
        host_alive=lambda r: r.host_pid not in dead,
    )


def peer(pid: int | None) -> PeerCredentials:
    return PeerCredentials(uid=os.getuid(), pid=pid, gid=None, accepted=ACCEPTED)


# A tree: 100 host(A1) -> 101 claude(A1) -> 102 bash -> 103 volee send
#          200 host(A2) -> 201 claude(A2)
#          10 person's terminal -> 11 person's shell -> 12 volee
TREE = {101: 100, 102: 101, 103: 102, 201: 200, 11: 10, 12: 11, 100: 1, 200: 1, 10: 1}


def test_a_descendant_of_an_agents_program_is_that_agent(tmp_path: Path) -> None:
    identify = _identifier(tmp_path, Table(parents=dict(TREE)))
    caller = identify(peer(103))
    assert caller == Caller.of_agent(A1, 103, caller.how)
    assert "descends from the program (pid 101) of agent alpha" in caller.how
    assert identify(peer(101)).agent == A1
    assert identify(peer(201)).agent == A2


def test_the_persons_own_processes_are_the_person(tmp_path: Path) -> None:
    identify = _identifier(tmp_path, Table(parents=dict(TREE)))
    assert identify(peer(12)).kind is CallerKind.PERSON
    assert identify(peer(DAEMON)) == Caller.person(DAEMON, "the daemon's own process")


def test_what_the_process_claims_never_outranks_its_ancestry(tmp_path: Path) -> None:
    # Inside A1's tree, with VOLEE_AGENT naming A2 (or the person) and a fake host of A2.
    table = Table(
        parents={**TREE, 104: 103, 105: 104},
        envs={105: A2, 103: "human"},
        cmdlines={104: ["python", "-m", "volee_desktop.hosts.host", "--agent", A2, "--", "x"]},
    )
    identify = _identifier(tmp_path, table)
    assert identify(peer(105)).agent == A1
    assert identify(peer(103)).agent == A1


def test_a_reused_program_pid_is_not_the_agent(tmp_path: Path) -> None:
    # The record says program 101, but whatever has pid 101 now started after it ended.
    identify = _identifier(tmp_path, Table(parents=dict(TREE)), dead=frozenset({100, 101}))
    assert identify(peer(103)).kind is CallerKind.PERSON


def test_an_orphan_the_host_adopted_is_its_agent(tmp_path: Path) -> None:
    # setsid and a double fork: re-parented to the host (the subreaper), in a new session.
    table = Table(parents={**TREE, 310: 100}, sessions={310: 310})
    caller = _identifier(tmp_path, table)(peer(310))
    assert caller.agent == A1
    assert "descends from volee's host (pid 100) of agent alpha" in caller.how


def test_a_process_that_left_the_tree_is_known_by_its_session(tmp_path: Path) -> None:
    # Double-forked away (its parent is init now) without setsid: session 101 is A1's.
    table = Table(parents={**TREE, 300: 1}, sessions={300: 101})
    caller = _identifier(tmp_path, table)(peer(300))
    assert caller.agent == A1
    assert "session" in caller.how


def test_a_process_that_left_the_tree_and_its_session_is_known_by_its_environment(
    tmp_path: Path,
) -> None:
    table = Table(parents={**TREE, 301: 1}, sessions={301: 301}, envs={301: A2})
    caller = _identifier(tmp_path, table)(peer(301))
    assert caller.agent == A2
    assert "VOLEE_AGENT" in caller.how
    # A name that is no agent (VOLEE_AGENT=human) makes nobody anything.
    table.envs[301] = "human"
    assert _identifier(tmp_path, table)(peer(301)).kind is CallerKind.PERSON


def test_before_its_host_record_an_agent_is_known_by_its_host(tmp_path: Path) -> None:
    # Host 400 of A2 just started program 401; its record is not written yet.
    table = Table(
        parents={**TREE, 401: 400, 402: 401, 400: 1},
        cmdlines={
            400: [
                "python",
                "-I",
                "-S",
                "-c",
                "from volee_desktop.hosts.host import cli; cli()",
                "/pkg",
                "--agent",
                A2,
                "--record",
                "r",
                "--",
                "claude",
            ]
        },
    )
    caller = _identifier(tmp_path, table)(peer(402))
    assert caller.agent == A2
    assert "host (pid 400)" in caller.how


def test_an_agent_volee_only_watches_is_known_by_its_pid(tmp_path: Path) -> None:
    table = Table(parents={**TREE, 701: 700, 700: 11})
    assert _identifier(tmp_path, table)(peer(701)).agent == WATCHED
    # ...but its parent, the person's shell, stays the person.
    assert _identifier(tmp_path, table)(peer(11)).kind is CallerKind.PERSON


def test_without_a_pid_the_caller_is_unknown_and_says_why(tmp_path: Path) -> None:
    # Fail closed (issue 22): an OS that does not say who connected names no one the person.
    caller = _identifier(tmp_path, Table())(peer(None))
    assert caller.kind is CallerKind.UNKNOWN
    assert "does not say" in caller.how


def test_a_loop_in_the_table_ends_unknown(tmp_path: Path) -> None:
    identify = _identifier(tmp_path, Table(parents={5: 6, 6: 5}))
    caller = identify(peer(5))
    assert caller.kind is CallerKind.UNKNOWN
    assert "loops" in caller.how


def test_host_agent_reads_only_hosts_command_lines() -> None:
    assert host_agent(["python", "-m", "volee_desktop.hosts.host", "--agent", A1]) == A1
    native = "/opt/volee/lib/python3.11/site-packages/volee_desktop/hosts/native/volee-host"
    assert host_agent([native, "--agent", A1, "--record", "r", "--", "claude"]) == A1
    assert host_agent(["/usr/bin/volee-host", "--agent", A1]) is None  # not volee's own path
    assert host_agent(["bash", "-c", "echo", "--agent", A1]) is None
    # A program argument after "--" does not count.
    line = ["python", "-c", "volee_desktop.hosts.host", "--", "x", "--agent", A1]
    assert host_agent(line) is None


def test_caller_of_a_call_from_inside_the_daemon_is_the_person() -> None:
    assert caller_of(None) is IN_PROCESS
    assert IN_PROCESS.is_person
    assert str(Caller.of_agent(A1, 3, "x")) == f"agent {A1} (pid 3: x)"


def test_a_forgotten_agent_whose_program_still_runs_is_still_that_agent(tmp_path: Path) -> None:
    identify = _identifier(tmp_path, Table(parents=dict(TREE)))
    registry = identify._registry()
    registry.apply(ev.AgentForgotten(at=T0, agent=A1))
    assert identify(peer(103)).agent == A1


def test_a_host_adopted_by_another_agents_host_speaks_for_its_own_agent(tmp_path: Path) -> None:
    # A daemon started from inside A1 was adopted by A1's host (100); the host 400 it started
    # for A2 was too. Before A2's record exists, A2's processes are A2's, not A1's.
    host_line = ["python", "-c", "volee_desktop.hosts.main", "--agent", A2, "--", "claude"]
    table = Table(parents={**TREE, 400: 100, 401: 400, 402: 401}, cmdlines={400: host_line})
    caller = _identifier(tmp_path, table)(peer(402))
    assert caller.agent == A2
    assert "host (pid 400)" in caller.how


# --- issue 22, finding 1: fail closed -----------------------------------------------------
# The person only on a positive identification of a live process: gone, reused, ended,
# unreadable, or with an ancestry that cannot be read whole, a peer is ``unknown``.


def test_peer_gone_is_never_the_person(tmp_path: Path) -> None:
    # The child that connected exited before the daemon looked (its grandchild kept the
    # connection): nothing is left of pid 13 to read.
    caller = _identifier(tmp_path, Table(parents=dict(TREE)))(peer(13))
    assert caller.kind is CallerKind.UNKNOWN
    assert not caller.is_person
    assert "pid 13" in caller.how
    assert "gone" in caller.how


def test_peer_pid_reused_with_a_later_start_is_never_the_person(tmp_path: Path) -> None:
    # Pid 12 went to a process of the person's that started after the accept.
    table = Table(parents=dict(TREE), starts={12: ACCEPTED + 1.0})
    caller = _identifier(tmp_path, table)(peer(12))
    assert caller.kind is CallerKind.UNKNOWN
    assert "started after the connection was accepted" in caller.how
    # Started before the accept, it is the one that connected: the person.
    table.starts[12] = ACCEPTED - 1.0
    assert _identifier(tmp_path, table)(peer(12)).is_person


def test_peer_unreadable_is_never_the_person(tmp_path: Path) -> None:
    # /proc/<pid> exists but cannot be read (hidepid, another user's namespace).
    table = Table(parents=dict(TREE), unreadable={12})
    caller = _identifier(tmp_path, table)(peer(12))
    assert caller.kind is CallerKind.UNKNOWN
    assert "cannot be read" in caller.how


def test_peer_that_ended_and_waits_to_be_reaped_is_never_the_person(tmp_path: Path) -> None:
    table = Table(parents=dict(TREE), zombies={12})
    caller = _identifier(tmp_path, table)(peer(12))
    assert caller.kind is CallerKind.UNKNOWN
    assert "ended" in caller.how


def test_peer_whose_ancestry_breaks_is_never_the_person(tmp_path: Path) -> None:
    # An ancestor vanished while the daemon walked up (its parent is unknown from there) ...
    gone = Table(parents={13: 14, 14: 15})
    caller = _identifier(tmp_path, gone)(peer(13))
    assert caller.kind is CallerKind.UNKNOWN
    assert "ancestor pid 15 is gone" in caller.how
    # ... or its pid went to a process younger than its child: not an ancestor at all.
    reused = Table(parents={**TREE, 13: 102}, starts={102: T_START + 5, 13: T_START + 1})
    caller = _identifier(tmp_path, reused)(peer(13))
    assert caller.kind is CallerKind.UNKNOWN
    assert "belongs to a later process" in caller.how


def test_an_agent_found_before_the_break_is_still_that_agent(tmp_path: Path) -> None:
    # The rules only lower: what is read of the chain names agent A1 whatever lies beyond.
    table = Table(parents={103: 102, 102: 101, 101: 100, 100: 99})
    assert _identifier(tmp_path, table)(peer(103)).agent == A1


class EndingTable(Table):
    """A table whose peer ends once its ancestry was read (its pid goes to a later process)."""

    def __init__(self, pid: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.pid = pid
        self.ended = False

    def session(self, pid: int) -> int | None:
        # Identification asks the session after the ancestry: the peer ends meanwhile.
        self.ended = self.ended or pid == self.pid
        return super().session(pid)

    def stat(self, pid: int) -> ProcStat | None:
        if pid == self.pid and self.ended:
            return ProcStat(1, ACCEPTED + 2.0)  # a later process has the pid now
        return super().stat(pid)


def test_peer_that_ends_while_identified_is_never_the_person(tmp_path: Path) -> None:
    table = EndingTable(12, parents=dict(TREE))
    caller = _identifier(tmp_path, table)(peer(12))
    assert caller.kind is CallerKind.UNKNOWN
    assert "ended while volee identified it" in caller.how


def test_peer_whose_pidfd_says_it_ended_is_never_the_person(tmp_path: Path) -> None:
    # The kernel's pidfd of the process that connected says it ended, though something runs
    # at its pid now (started before the accept: only the pidfd tells them apart).
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    pidfd = os.pidfd_open(child.pid)
    try:
        child.wait(30)
        table = Table(parents={**TREE, child.pid: 11})
        gone = PeerCredentials(os.getuid(), child.pid, None, ACCEPTED, pidfd)
        caller = _identifier(tmp_path, table)(gone)
        assert caller.kind is CallerKind.UNKNOWN
        assert "has ended" in caller.how
    finally:
        os.close(pidfd)


def test_real_processes_the_persons_live_one_is_the_person_a_reaped_one_is_not(
    tmp_path: Path,
) -> None:
    registry = _registry()
    identify = Identifier(lambda: registry, HostRecords(tmp_path), PsutilTable(), own_pid=DAEMON)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    assert child.stdin is not None
    try:
        live = PeerCredentials(os.getuid(), child.pid, None, process_clock())
        assert identify(live).is_person
        # Started after this "accept": another process than the one that connected.
        before = PeerCredentials(os.getuid(), child.pid, None, process_clock() - 3600)
        assert identify(before).kind is CallerKind.UNKNOWN
    finally:
        child.stdin.close()
        child.wait(30)
    caller = identify(live)
    assert caller.kind is CallerKind.UNKNOWN
    assert "gone" in caller.how


# --- issue 22, finding 7: a mismatched VOLEE_AGENT inside an agent's tree -----------------


def test_mismatched_volee_agent_inside_an_agents_tree_is_kept_as_its_claim(
    tmp_path: Path,
) -> None:
    table = Table(parents={**TREE, 104: 103}, envs={104: A2, 103: "human", 102: A1})
    identify = _identifier(tmp_path, table)
    other = identify(peer(104))
    assert (other.agent, other.claim) == (A1, A2)
    person = identify(peer(103))
    assert (person.agent, person.claim) == (A1, "human")
    # Its own id is no claim; nor is an agent known by its environment alone.
    assert identify(peer(102)).claim is None
    table.parents[301] = 1
    table.envs[301] = A2
    assert (identify(peer(301)).agent, identify(peer(301)).claim) == (A2, None)


def test_a_leftover_the_subreaper_daemon_adopted_is_never_the_person(tmp_path: Path) -> None:
    # Issue 22, finding 3: a killed host's waiter (setsid, VOLEE_AGENT cleared) is re-parented
    # to the headless daemon, its subreaper, which ends it a few ms later; connecting before
    # that, it reaches the daemon through a child outside the daemon's session.
    table = Table(
        parents={900: 901, 901: DAEMON, DAEMON: 1, 600: 1},
        sessions={900: 901, 901: 901, DAEMON: DAEMON, 600: DAEMON},
    )
    registry = _registry()
    adopting = Identifier(
        lambda: registry, HostRecords(tmp_path), table, own_pid=DAEMON, adopts=True
    )
    caller = adopting(peer(900))
    assert caller.kind is CallerKind.UNKNOWN
    assert caller.pid == 900
    assert caller.how == "it is what a killed host left behind (the daemon adopted it to end it)"
    # A process of the daemon's own session is not a leftover (a git the daemon runs).
    table.parents[600] = DAEMON
    assert adopting(peer(600)).is_person
    # A daemon that adopts nothing (the app's: its terminals are the person's) decides as before.
    plain = Identifier(lambda: registry, HostRecords(tmp_path), table, own_pid=DAEMON)
    assert plain(peer(900)).is_person

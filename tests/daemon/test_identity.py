"""Identity from the connection: a process that descends from an agent's program is that agent.

A fake process table and real host records; the e2e tests (tests/e2e/test_identity_e2e.py)
run the same rules against real processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, Location
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.identity import HostRecords, Identifier, host_agent
from volee_desktop.hosts.records import HostRecord, write_record_atomic
from volee_desktop.ipc.caller import IN_PROCESS, Caller, CallerKind, caller_of
from volee_desktop.ipc.transport import PeerCredentials

A1 = "ag_01HF7YAT010000000000000001"
A2 = "ag_01HF7YAT010000000000000002"
WATCHED = "ag_01HF7YAT010000000000000003"
T0 = 1_700_000_000.0
DAEMON = 50


@dataclass
class Table:
    """pid -> parent, plus sessions, command lines and VOLEE_AGENT of the environment."""

    parents: dict[int, int] = field(default_factory=dict)
    sessions: dict[int, int] = field(default_factory=dict)
    cmdlines: dict[int, list[str]] = field(default_factory=dict)
    envs: dict[int, str] = field(default_factory=dict)

    def parent(self, pid: int) -> int | None:
        return self.parents.get(pid)

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
    return PeerCredentials(uid=os.getuid(), pid=pid, gid=None)


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


def test_without_a_pid_the_caller_is_the_person_and_says_why(tmp_path: Path) -> None:
    caller = _identifier(tmp_path, Table())(peer(None))
    assert caller.is_person
    assert "does not say" in caller.how


def test_a_loop_in_the_table_ends(tmp_path: Path) -> None:
    identify = _identifier(tmp_path, Table(parents={5: 6, 6: 5}))
    assert identify(peer(5)).is_person


def test_host_agent_reads_only_hosts_command_lines() -> None:
    assert host_agent(["python", "-m", "volee_desktop.hosts.host", "--agent", A1]) == A1
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

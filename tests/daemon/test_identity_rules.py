"""Identity's rules at their edges (daemon/serving/identity.py): exact words and pids, each liveness
check on its own, the ancestry walk's limits, the host records' cache, and the machine's
process table read from real processes.

test_identity.py tells the kinds of callers apart; these pin what a caller is told.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.daemon.test_identity import (
    A1,
    A2,
    ACCEPTED,
    DAEMON,
    T0,
    TREE,
    WATCHED,
    Table,
    _identifier,
    _record,
    _registry,
    peer,
)
from tests.polling import wait_until
from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, Location
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.serving import identity
from volee_desktop.daemon.serving.identity import (
    MAX_DEPTH,
    HostRecords,
    Identifier,
    ProcStat,
    PsutilTable,
)
from volee_desktop.hosts.records import ExitStatus, read_record, write_record_atomic
from volee_desktop.ipc.caller import Caller


def test_each_caller_is_told_exactly_how_volee_knows_it(tmp_path: Path) -> None:
    table = Table(parents={**TREE, 300: 1, 301: 1, 310: 100}, sessions={300: 201})
    table.envs[301] = A2
    identify = _identifier(tmp_path, table)
    assert identify(peer(101)) == Caller.of_agent(
        A1, 101, "is the program (pid 101) of agent alpha"
    )
    assert identify(peer(103)) == Caller.of_agent(
        A1, 103, "descends from the program (pid 101) of agent alpha"
    )
    assert identify(peer(310)) == Caller.of_agent(
        A1, 310, "descends from volee's host (pid 100) of agent alpha"
    )
    assert identify(peer(300)) == Caller.of_agent(
        A2, 300, "runs in the session of agent beta's program (pid 201)"
    )
    assert identify(peer(301)) == Caller.of_agent(A2, 301, f"its environment says VOLEE_AGENT={A2}")
    assert identify(peer(12)) == Caller.person(12, "descends from no agent volee knows")
    assert identify(peer(None)) == Caller.unknown(
        None, "the OS does not say which process connected"
    )


def test_a_host_without_a_record_yet_is_named_with_its_pid(tmp_path: Path) -> None:
    line = ["python", "-m", "volee_desktop.hosts.host", "--agent", A2, "--", "claude"]
    # Alone, and adopted by another agent's host (a daemon started inside A1).
    table = Table(
        parents={**TREE, 401: 400, 400: 1, 501: 500, 500: 100}, cmdlines={400: line, 500: line}
    )
    identify = _identifier(tmp_path, table)
    for pid, host in ((401, 400), (501, 500)):
        assert identify(peer(pid)) == Caller.of_agent(
            A2, pid, f"descends from volee's host (pid {host}) of agent beta"
        )


def test_a_host_line_naming_no_known_agent_is_nobodys(tmp_path: Path) -> None:
    line = ["python", "-m", "volee_desktop.hosts.host", "--agent", "ag_nobody", "--", "x"]
    table = Table(parents={**TREE, 401: 400, 400: 11}, cmdlines={400: line})
    assert _identifier(tmp_path, table)(peer(401)).is_person


def test_every_unknown_caller_keeps_its_pid_and_says_why(tmp_path: Path) -> None:
    table = Table(
        parents={**TREE, 14: 11, 15: 11, 16: 11, 17: 99},
        unreadable={15},
        zombies={16},
        starts={14: ACCEPTED + 1},
    )
    identify = _identifier(tmp_path, table)
    assert identify(peer(13)) == Caller.unknown(13, "its process (pid 13) is gone")
    assert identify(peer(14)) == Caller.unknown(
        14, "pid 14 is another process now: it started after the connection was accepted"
    )
    assert identify(peer(15)) == Caller.unknown(15, "its process (pid 15) cannot be read in /proc")
    assert identify(peer(16)) == Caller.unknown(16, "its process (pid 16) has ended")
    assert identify(peer(17)) == Caller.unknown(
        17,
        "its ancestor pid 99 is gone or cannot be read, so volee cannot tell whose process it is",
    )


def test_a_process_that_started_at_the_accept_is_the_one_that_connected(tmp_path: Path) -> None:
    table = Table(parents=dict(TREE), starts={12: ACCEPTED})
    assert _identifier(tmp_path, table)(peer(12)).is_person
    # With no accept time (an older server), the start time says nothing.
    late = Table(parents=dict(TREE), starts={12: ACCEPTED + 1})
    assert _identifier(tmp_path, late)(peer(12)._replace(accepted=None)).is_person


def test_the_pidfd_decides_before_and_after_identification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identify = _identifier(tmp_path, Table(parents=dict(TREE)))
    said: list[bool | None] = []
    monkeypatch.setattr(identity, "peer_alive", lambda p: said.pop(0))
    said[:] = [True, True]  # alive all along: the person
    assert identify(peer(12)) == Caller.person(12, "descends from no agent volee knows")
    said[:] = [False]
    assert identify(peer(12)) == Caller.unknown(12, "the process that connected (pid 12) has ended")
    said[:] = [True, False]  # it ended while volee read its ancestry
    assert identify(peer(12)) == Caller.unknown(
        12, "its process (pid 12) ended while volee identified it"
    )
    said[:] = [True, False]
    assert identify(peer(103)).kind.value == "unknown"  # not even the agent it was
    assert said == []


def test_an_ancestor_that_ended_breaks_the_chain(tmp_path: Path) -> None:
    # Pid 11 is a zombie: whatever its pid says, a parent that ended adopts nothing.
    table = Table(parents=dict(TREE), zombies={11})
    assert _identifier(tmp_path, table)(peer(12)) == Caller.unknown(
        12, "its ancestor pid 11 has ended, so volee cannot tell whose process it is"
    )


class NoStarts(Table):
    """A table that knows no start time of ``blind``."""

    def __init__(self, blind: set[int], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.blind = blind

    def stat(self, pid: int) -> ProcStat | None:
        stat = super().stat(pid)
        return stat if stat is None or pid not in self.blind else replace(stat, started=None)


def test_an_ancestor_with_no_start_time_still_compares_its_parent_with_the_child(
    tmp_path: Path,
) -> None:
    # 13 (started at 100) -> 14 (start unknown) -> 15 started at 200: not 13's ancestor.
    table = NoStarts({14}, parents={13: 14, 14: 15, 15: 1}, starts={13: 100.0, 15: 200.0})
    caller = _identifier(tmp_path, table)(peer(13))
    assert caller == Caller.unknown(
        13,
        "its parent's pid 15 belongs to a later process now, so volee cannot tell whose "
        "process it is",
    )


def chain(length: int) -> dict[int, int]:
    """pid 1000 + length - 1 -> ... -> 1000 -> init: ``length`` processes."""
    return {1000 + n: (1000 + n - 1 if n else 1) for n in range(length)}


def test_an_ancestry_of_max_depth_is_read_whole_and_a_deeper_one_is_not(tmp_path: Path) -> None:
    deepest = Table(parents=chain(MAX_DEPTH))
    assert _identifier(tmp_path, deepest)(peer(1000 + MAX_DEPTH - 1)).is_person
    deeper = Table(parents=chain(MAX_DEPTH + 1))
    assert _identifier(tmp_path, deeper)(peer(1000 + MAX_DEPTH)) == Caller.unknown(
        1000 + MAX_DEPTH,
        f"its ancestry is deeper than {MAX_DEPTH} processes, so volee cannot tell whose "
        "process it is",
    )


def test_in_a_pid_namespace_a_host_may_be_pid_2(tmp_path: Path) -> None:
    # In a container, init is 1 and the first process it starts is 2: volee's host there.
    registry = _registry()
    _record(tmp_path, A1, 2, 3)
    table = Table(parents={2: 1, 3: 2, 9: 2})
    identify = Identifier(lambda: registry, HostRecords(tmp_path), table, own_pid=DAEMON,
                          alive=lambda r: True, host_alive=lambda r: True)  # fmt: skip
    assert identify(peer(9)) == Caller.of_agent(
        A1, 9, "descends from volee's host (pid 2) of agent alpha"
    )
    assert list(identify.ancestors(9)) == [9, 2]


def test_ancestors_lists_the_pid_and_its_parents_nearest_first(tmp_path: Path) -> None:
    identify = _identifier(tmp_path, Table(parents=dict(TREE)))
    assert list(identify.ancestors(103)) == [103, 102, 101, 100]
    assert list(identify.ancestors(1)) == []


def test_host_and_program_are_each_checked_with_their_own_liveness(tmp_path: Path) -> None:
    registry = _registry()
    _record(tmp_path, A1, 100, 101)
    table = Table(parents={**TREE, 310: 100})

    def identifier(host: bool, program: bool) -> Identifier:
        return Identifier(lambda: registry, HostRecords(tmp_path), table, own_pid=DAEMON,
                          alive=lambda r: program, host_alive=lambda r: host)  # fmt: skip

    # The program ended, its host lingers: the orphans it adopted are still the agent's.
    assert identifier(host=True, program=False)(peer(310)).agent == A1
    # The host was killed, the program runs on: its tree is the agent's, not the orphans.
    assert identifier(host=False, program=True)(peer(103)).agent == A1
    assert identifier(host=False, program=True)(peer(310)).is_person


def test_a_record_of_an_agent_volee_never_knew_names_no_one(tmp_path: Path) -> None:
    _record(tmp_path, "ag_01HF7YAT01000000000000000Z", 600, 601)
    table = Table(parents={**TREE, 601: 600, 602: 601, 600: 1})
    assert _identifier(tmp_path, table)(peer(602)).is_person


def test_a_watched_agent_is_known_by_its_pid_only_while_live_and_not_hosted(
    tmp_path: Path,
) -> None:
    table = Table(parents={**TREE, 701: 700, 700: 11, 801: 800, 800: 11})
    identify = _identifier(tmp_path, table)
    registry = identify._registry()
    assert identify(peer(701)).agent == WATCHED
    registry.apply(ev.StateChanged(at=T0, agent=WATCHED, state=AgentState.STOPPED))
    assert identify(peer(701)).is_person
    # A hosted agent is known by its host record, never by a pid in the registry.
    hosted = "ag_01HF7YAT010000000000000005"
    registry.apply(ev.AgentRegistered(at=T0, agent=hosted, name="hosted",
                                      harness=Harness.CLAUDE, state=AgentState.WORKING,
                                      location=Location.HOST))  # fmt: skip
    registry.apply(ev.LocationChanged(at=T0, agent=hosted, location=Location.HOST, pid=800))
    assert registry.agents[hosted].pid == 800
    assert identify(peer(801)).is_person


def test_the_daemon_is_its_own_process_by_default(tmp_path: Path) -> None:
    registry = _registry()
    identify = Identifier(lambda: registry, HostRecords(tmp_path), Table(parents={os.getpid(): 1}))
    assert identify(peer(os.getpid())) == Caller.person(os.getpid(), "the daemon's own process")


# The host records


def test_host_records_skip_hidden_and_other_files_and_ended_programs(tmp_path: Path) -> None:
    _record(tmp_path, A1, 100, 101)
    _record(tmp_path, A2, 200, 201)
    good = read_record(tmp_path / f"{A1}.json")
    for name in (".tmp.json", "a.json.tmp", ".b", "c.txt", ".d.json", "e"):
        (tmp_path / name).write_bytes((tmp_path / f"{A1}.json").read_bytes())
    (tmp_path / "broken.json").write_text("{not json")
    ended = replace(
        good, agent=WATCHED, exit=ExitStatus(code=0, signal=None, signal_name=None, ended_at=T0)
    )
    write_record_atomic(tmp_path / "ended.json", ended)
    records = HostRecords(tmp_path)
    for _ in range(2):
        assert sorted(r.agent for r in records.running()) == [A1, A2]


def test_host_records_of_a_missing_folder_are_none(tmp_path: Path) -> None:
    assert list(HostRecords(tmp_path / "gone").running()) == []


def test_host_records_are_read_again_only_when_a_file_changed(tmp_path: Path) -> None:
    _record(tmp_path, A1, 100, 101)
    path = tmp_path / f"{A1}.json"
    records = HostRecords(tmp_path)
    assert [r.program_pid for r in records.running()] == [101]
    before = path.stat().st_mtime_ns
    # The same mtime: the cached record stands.
    _record(tmp_path, A1, 100, 102)
    os.utime(path, ns=(before, before))
    assert [r.program_pid for r in records.running()] == [101]
    os.utime(path, ns=(before + 10**9, before + 10**9))
    assert [r.program_pid for r in records.running()] == [102]
    path.unlink()
    assert list(records.running()) == []
    _record(tmp_path, A1, 100, 103)
    os.utime(path, ns=(before, before))  # the old mtime again: a new file all the same
    assert [r.program_pid for r in records.running()] == [103]


def test_a_record_that_vanishes_while_listed_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, A1, 100, 101)
    _record(tmp_path, A2, 200, 201)
    real = list(os.scandir(tmp_path))

    class Vanished:
        name = "vanished.json"
        path = str(tmp_path / "vanished.json")

        def stat(self) -> os.stat_result:
            raise FileNotFoundError(self.path)

    scandir = os.scandir

    def listing(folder: Path) -> object:
        return [Vanished(), *real] if str(folder) == str(tmp_path) else scandir(folder)

    monkeypatch.setattr(identity.os, "scandir", listing)
    assert sorted(r.agent for r in HostRecords(tmp_path).running()) == [A1, A2]


# The machine's process table


@pytest.fixture
def child() -> Iterator[subprocess.Popen[str]]:
    """A live child of this process that answers each line on its stdin, VOLEE_AGENT set,
    its comm renamed to one with ") " in it."""
    code = (
        "import sys\n"
        "open('/proc/self/comm', 'w').write('a) Z 1 2')\n"
        "print('on', flush=True)\n"
        "for line in sys.stdin: print(line.strip(), flush=True)\n"
    )
    env = {**os.environ, "VOLEE_AGENT": A2}
    proc = subprocess.Popen([sys.executable, "-c", code, "x y"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdin is not None
    assert proc.stdout.readline() == "on\n"
    yield proc
    proc.stdin.close()
    proc.wait(30)
    proc.stdout.close()


linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@linux
def test_the_table_reads_a_live_process_whatever_its_name(child: subprocess.Popen[str]) -> None:
    table = PsutilTable()
    stat = table.stat(child.pid)
    assert stat is not None
    assert (stat.parent, stat.ended) == (os.getpid(), False)
    assert stat.started is not None
    import psutil

    boot = psutil.boot_time()
    assert abs(boot + stat.started - psutil.Process(child.pid).create_time()) < 2.0
    assert table.cmdline(child.pid) == [sys.executable, "-c", table.cmdline(child.pid)[2], "x y"]
    assert table.env_agent(child.pid) == A2
    assert table.exists(child.pid)
    # Asking whether it exists sends it nothing: it still answers.
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write("still there\n")
    child.stdin.flush()
    assert child.stdout.readline() == "still there\n"


@linux
def test_on_linux_the_table_reads_proc_without_psutil(
    child: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every connection is identified (the app's own link too): on Linux the command line and
    the environment come from /proc, and psutil's import stays off the app's start."""
    monkeypatch.setitem(sys.modules, "psutil", None)  # importing it raises
    table = PsutilTable()
    assert table.cmdline(child.pid)[-1] == "x y"
    assert table.env_agent(child.pid) == A2
    assert table.cmdline(os.getpid()) == sys.orig_argv
    assert table.cmdline(2**22 + 1) == []  # no such process
    assert table.env_agent(2**22 + 1) is None


def test_an_empty_volee_agent_is_none() -> None:
    env = {**os.environ, "VOLEE_AGENT": ""}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE, env=env)  # fmt: skip
    try:
        assert PsutilTable().env_agent(proc.pid) is None
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)


def _zombie() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    import psutil

    wait_until(lambda: psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE, what="a zombie")
    return proc


def test_the_table_says_a_zombie_ended() -> None:
    proc = _zombie()
    try:
        stat = PsutilTable().stat(proc.pid)
        assert stat is not None
        assert (stat.parent, stat.ended) == (os.getpid(), True)
    finally:
        proc.wait(30)
    assert PsutilTable().stat(proc.pid) is None
    assert not PsutilTable().exists(proc.pid)
    assert PsutilTable().cmdline(proc.pid) == []
    assert PsutilTable().env_agent(proc.pid) is None


def test_off_linux_the_table_asks_psutil(
    child: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import psutil

    monkeypatch.setattr(sys, "platform", "darwin")
    stat = PsutilTable().stat(child.pid)
    assert stat == ProcStat(os.getpid(), psutil.Process(child.pid).create_time(), False)
    assert PsutilTable().cmdline(child.pid)[-1] == "x y"
    assert PsutilTable().env_agent(child.pid) == A2
    proc = _zombie()
    try:
        zombie = PsutilTable().stat(proc.pid)
        assert zombie is not None
        assert zombie.ended
    finally:
        proc.wait(30)
    assert PsutilTable().stat(proc.pid) is None


def test_another_users_process_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    def kill(pid: int, sig: int) -> None:
        raise PermissionError(pid)

    monkeypatch.setattr(identity.os, "kill", kill)
    assert PsutilTable().exists(1)


def test_a_session_that_cannot_be_read_is_none() -> None:
    proc = _zombie()
    proc.wait(30)
    assert PsutilTable().session(proc.pid) is None
    assert PsutilTable().session(os.getpid()) == os.getsid(0)

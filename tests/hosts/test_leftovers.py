"""Leftovers become the person when their host ends (issue 22, finding 3): the host ends them.

Whatever an agent's program leaves behind (a job in the background, a ``setsid`` daemon, one
that ignores SIGTERM) is ended before its host exits; the host's tree is empty when it goes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import Rig

from tests.polling import wait_until
from volee_desktop.hosts import tree
from volee_desktop.hosts.records import host_alive

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the host's subreaper and /proc are Linux's"
)


@pytest.fixture
def seen() -> Iterator[list[psutil.Process]]:
    """The leftovers a test saw; whatever of them is still alive at its end is killed."""
    procs: list[psutil.Process] = []
    yield procs
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _leftover(pidfile: Path, seen: list[psutil.Process]) -> psutil.Process:
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 10, "the leftover's pid")
    proc = psutil.Process(int(pidfile.read_text()))
    seen.append(proc)
    return proc


def _held_until(go: Path) -> str:
    """Shell that waits for ``go`` to exist: the program ends only once the test holds its
    leftover (under load the host ended it before the test looked: ci-8)."""
    return f"until [ -e {go} ]; do sleep 0.05; done"


def _gone(proc: psutil.Process) -> bool:
    # is_running() compares the start time too: a reused pid is not taken for the leftover.
    return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE


def test_leftovers_of_a_program_that_exits_normally_are_ended(
    rig: Rig, seen: list[psutil.Process]
) -> None:
    pidfile = rig.root / "child.pid"
    # As nohup does (a plain `&` dies of the terminal's hangup when the program ends).
    child_sh = rig.root / "child.sh"
    child_sh.write_text(f"trap '' HUP\necho $$ > {pidfile}\nexec sleep 300\n")
    go = rig.root / "go"
    script = f"sh {child_sh} & {_held_until(go)}; exit 0"
    record = rig.launch(["sh", "-c", script])
    child = _leftover(pidfile, seen)
    assert child.is_running()
    go.touch()

    on_disk = rig.wait_exit()
    wait_until(lambda: not host_alive(record), 15, "the host to exit")

    assert on_disk.exit is not None
    assert on_disk.exit.code == 0
    assert _gone(child), f"{child.pid} outlived its host as {child.ppid()}'s child"


def test_leftovers_become_the_person_when_their_host_ends_not_even_setsid_and_sigterm_ignored(
    rig: Rig, seen: list[psutil.Process]
) -> None:
    # setsid and a double fork, and deaf to SIGTERM: only SIGKILL after the grace ends it.
    pidfile = rig.root / "waiter.pid"
    waiter = rig.root / "waiter.sh"
    waiter.write_text(f"trap '' TERM\necho $$ > {pidfile}\nwhile :; do sleep 1; done\n")
    go = rig.root / "go"
    script = f"setsid sh -c '(sh {waiter}) &'; {_held_until(go)}; exit 3"
    record = rig.launch(["sh", "-c", script])
    left = _leftover(pidfile, seen)
    assert os.getsid(left.pid) != record.program_pid  # it left the program's session
    go.touch()

    rig.wait_exit()
    wait_until(lambda: not host_alive(record), 15, "the host to exit")

    assert _gone(left), f"the setsid waiter {left.pid} outlived its host"


def test_a_host_told_to_stop_ends_the_leftovers_too(rig: Rig, seen: list[psutil.Process]) -> None:
    pidfile = rig.root / "child.pid"
    script = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & sleep 300"
    record = rig.launch(["sh", "-c", script])
    child = _leftover(pidfile, seen)
    rig.client().hello()  # it serves: its signal handlers are in place

    os.kill(record.host_pid, signal.SIGTERM)

    on_disk = rig.wait_exit()
    wait_until(lambda: not host_alive(record), 15, "the host to exit")
    assert on_disk.exit is not None
    assert on_disk.exit.host_signal == "SIGTERM"
    assert _gone(child)


def test_the_tree_lists_every_descendant_parents_first() -> None:
    table = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}

    found = tree.descendants([10], table)
    assert sorted(found) == [11, 12, 13]
    assert found.index(11) < found.index(12)
    assert sorted(tree.descendants([10, 20], table)) == [11, 12, 13, 21]
    assert tree.descendants([99], table) == []


def test_the_tree_of_this_process_holds_its_child() -> None:
    proc = psutil.Popen(["sleep", "30"])
    try:
        assert proc.pid in tree.descendants([os.getpid()])
        fields = tree.stat_fields(proc.pid)
        assert fields is not None
        assert int(fields[1]) == os.getpid()
    finally:
        proc.kill()
        proc.wait()

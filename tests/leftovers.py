"""Processes the test session left running, each named by the test that started it.

Every process a test starts carries the session's marker in its environment (``MARKER``, set
at the session's start and inherited by everything; it is a ``FAKE_`` variable so that the
agent environment allow-list passes it to harness programs too) or a VOLEE_HOME a test used
(hosts carry it in their command line).  A process still alive at the session's end is a leak;
the test named is the one that was running when the process started.  Linux only (``/proc``);
elsewhere nothing is found.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

MARKER = "FAKE_VOLEE_TEST_SESSION"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def now_ticks() -> int:
    """Now, in the clock process start times are kept in (ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS)


@dataclass(frozen=True)
class Proc:
    pid: int
    started: int
    marker: bytes | None
    home: bytes | None
    command: str


@dataclass(frozen=True)
class Leftover:
    """One process still alive, the home it carries and the test that started it."""

    pid: int
    home: str
    test: str
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command}) started by {self.test} (VOLEE_HOME={self.home})"


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def scan() -> list[Proc]:
    """Every live process but this one (zombies left out)."""
    procs: list[Proc] = []
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return procs
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        stat = _read(f"/proc/{entry}/stat")
        if stat is None:
            continue
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) < 20 or fields[0] in (b"Z", b"X"):
            continue
        env: dict[bytes, bytes] = {}
        for item in (_read(f"/proc/{entry}/environ") or b"").split(b"\0"):
            key, _, value = item.partition(b"=")
            env[key] = value
        raw = _read(f"/proc/{entry}/cmdline") or b""
        command = " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p)
        procs.append(
            Proc(
                int(entry),
                int(fields[19]),
                env.get(MARKER.encode()),
                env.get(b"VOLEE_HOME"),
                command[:200],
            )
        )
    return procs


def find(
    marker: str,
    homes: Iterable[str],
    tests: list[tuple[int, int, str]],
    since: int,
    procs: list[Proc] | None = None,
) -> list[Leftover]:
    """The processes started since ``since`` (ticks) that belong to this session.

    Ours: the ``marker`` in the environment, or a VOLEE_HOME (in the environment or in the
    command line) that a test used or that one of ours carries.  ``tests`` are
    (start, end, test id) in ticks, to name the test that was running at each start.
    """
    procs = scan() if procs is None else procs
    mark = marker.encode()
    known = {os.fsencode(h) for h in homes}
    ours: dict[int, Proc] = {}
    grew = True
    while grew:
        grew = False
        for p in procs:
            if p.pid in ours or p.started < since:
                continue
            if (
                p.marker == mark
                or (p.home is not None and _under(p.home, known))
                or any(h.decode(errors="replace") + "/" in p.command for h in known)
            ):
                ours[p.pid] = p
                if p.home is not None and p.home not in known:
                    known.add(p.home)
                grew = True
    return [
        Leftover(p.pid, os.fsdecode(p.home or b"?"), _test_at(p.started, tests), p.command)
        for p in sorted(ours.values(), key=lambda p: p.started)
    ]


def _under(home: bytes, known: set[bytes]) -> bool:
    return home in known or any(home.startswith(k + b"/") for k in known)


def _test_at(started: int, tests: list[tuple[int, int, str]]) -> str:
    for begin, end, test in reversed(tests):
        if begin - 1 <= started <= end + 1:
            return test
    earlier = [test for begin, _end, test in tests if begin <= started]
    return f"{earlier[-1]} (or right after it)" if earlier else "the session's set-up"


def settle(
    marker: str,
    homes: Iterable[str],
    tests: list[tuple[int, int, str]],
    since: int,
    timeout: float = 5.0,
) -> list[Leftover]:
    """Leftovers once processes that are ending had ``timeout`` seconds to end."""
    homes = list(homes)
    deadline = time.monotonic() + timeout
    while True:
        found = find(marker, homes, tests, since)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def kill(leftovers: list[Leftover]) -> None:
    """SIGKILL them (the run fails anyway; the machine must not keep them)."""
    for left in leftovers:
        try:
            os.kill(left.pid, signal.SIGKILL)
        except OSError:
            pass


def environ_of(pid: int) -> Mapping[str, str]:
    """A process's environment (for tests)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {os.fsdecode(k): os.fsdecode(v) for k, _, v in pairs}


# --- the hosts a test left -------------------------------------------------------------------
# Hosts are detached on purpose, so nothing else ends them: every fixture that starts some
# ends them with these (and the project's conftest does after every test, for its homes).


def end_hosts(home: Path) -> int:
    """SIGKILL every host (and its program's process group) recorded under ``home``."""
    killed = 0
    for record_file in home.glob("**/state/hosts/ag_*.json") if home.is_dir() else ():
        try:
            record = json.loads(record_file.read_text())
        except (OSError, ValueError):
            continue
        program, host = record.get("program_pid"), record.get("host_pid")
        killed += end_host(
            str(record.get("agent", "")),
            program if isinstance(program, int) else None,
            host if isinstance(host, int) else None,
        )
    return killed


def end_host(agent: str, program_pid: int | None, host_pid: int | None) -> int:
    """SIGKILL the host of ``agent`` and its program's process group (a host starts each
    program in a session of its own), if they still run; the host only if its command line
    names ``agent``, so a reused pid is spared. Returns how many were signalled."""
    killed = 0
    if program_pid is not None and _is_ours(program_pid, None):
        try:
            os.killpg(program_pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    if host_pid is not None and _is_ours(host_pid, agent):
        try:
            os.kill(host_pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def _is_ours(pid: int, agent: str | None) -> bool:
    """Whether ``pid`` still runs (and, for a host, is the host of ``agent``: no pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return agent is None or agent.encode() in cmdline

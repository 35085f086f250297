"""Listers: one listing of the sessions running on this machine, for the discovery loop.

``SystemLister`` runs ``claude agents --json --all`` (about 0.17 s of CPU: it starts a Node
process) as a subprocess with a timeout, and reads Claude Code's sessions folder and the
process table.  codex and pi have no lister: their live processes (psutil) and session
folders stand in (``scan_processes``), their turn read from the end of the session file;
they are looked for whether Claude Code is installed or not.  ``registry_signature`` is
what the discovery loop compares to decide whether a change of Claude Code's session
registry needs a listing at all.  A ``Lister`` is any callable giving an
``Observation``, so the loop is tested with a fake one.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import resource
import shutil
import time
from collections.abc import Awaitable, Callable, Container
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.model import Harness, Location
from ...core.reconcile import DeadSession, ListedSession, Listing
from ...core.registry import Registry
from ...core.states import Coarse
from ...harness.listing import (
    SessionMeta,
    Turn,
    dead_sessions,
    harness_of,
    parse_claude_agents,
    parse_session_file,
    parse_session_meta,
    session_turn,
    synthetic_session,
)
from ...hosts import recordio
from ..errors import Error as DaemonError

if TYPE_CHECKING:
    import psutil

log = logging.getLogger(__name__)

LIST_TIMEOUT = 20.0
#: A codex/pi session file written this recently means its agent is working.
BUSY_WITHIN = 5.0


class Error(DaemonError):
    """Root of the discovery errors."""


class ListingFailed(Error):
    """One listing failed (timeout, bad output): nothing changes, the loop goes on."""


class Unavailable(ListingFailed):
    """Claude Code is missing or too old to list its sessions: discovery stays off."""


@dataclass(frozen=True)
class Observation:
    """One listing with the process table it was read against."""

    listing: Listing
    processes: Container[int]


Lister = Callable[[float], Awaitable[Observation]]
#: Reads Claude Code's session registry (``registry_signature`` of its folder).
Signature = Callable[[], tuple[tuple[Any, ...], ...]]


# --- the real lister ----------------------------------------------------------------------


class LiveProcesses:
    """``pid in processes``: alive and not a zombie (a killed child not reaped yet)."""

    def __init__(self) -> None:
        self._known: dict[int, bool] = {}

    def __contains__(self, pid: object) -> bool:
        if not isinstance(pid, int):
            return False
        if pid not in self._known:
            self._known[pid] = _alive(pid)
        return self._known[pid]


def _alive(pid: int) -> bool:
    import psutil  # with the first use, not with the daemon's start (issue 27)

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def claude_binary(env: dict[str, str] | None = None) -> str | None:
    """VOLEE_CLAUDE_BIN, else ``claude`` on PATH."""
    env = dict(os.environ) if env is None else env
    return env.get("VOLEE_CLAUDE_BIN") or shutil.which("claude", path=env.get("PATH"))


def claude_dir(env: dict[str, str] | None = None) -> Path:
    """Claude Code's folder: CLAUDE_CONFIG_DIR moves everything, else ~/.claude."""
    env = dict(os.environ) if env is None else env
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env.get("HOME") or str(Path.home())) / ".claude"


#: One session file as the loop compares it: (pid, session, status, kind, name, alive).
SessionEntry = tuple[int, str, str, str, str, bool]


def registry_signature(folder: Path) -> tuple[SessionEntry, ...]:
    """What Claude Code's session registry (``folder``) says: one entry per file.  A folder
    read and a few small files, a signal 0 per pid: no Node process, no psutil."""
    out = []
    try:
        entries = sorted(folder.glob("*.json"))
    except OSError:
        return ()
    for path in entries:
        try:
            parsed = parse_session_file(path.read_text(encoding="utf-8"), path.name)
        except OSError:
            continue
        if parsed is None:
            continue
        try:
            os.kill(parsed.pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        except OSError:
            alive = True  # another user's: it exists
        out.append((parsed.pid, parsed.session, parsed.status, parsed.kind, parsed.name, alive))
    return tuple(out)


def hosted_sessions(registry: Registry) -> set[str]:
    """The sessions of agents live in volee hosts: their hooks tell what their files say (and
    the files change at every turn), so the loop leaves them out of its comparison."""
    return {
        a.session
        for a in registry.agents.values()
        if a.location is Location.HOST and a.live and a.session
    }


CLAUDE_MISSING = "Claude Code not found: put `claude` on PATH or set VOLEE_CLAUDE_BIN"
_UNSUPPORTED = ("unknown option", "unknown command", "unexpected argument", "invalid command")


class SystemLister:
    """Runs ``claude agents --json --all`` and reads the sessions folder and process table.

    ``binary`` None: Claude Code is not installed, and only codex and pi are looked for.
    ``observe(now, claude=False)`` skips the Node process (a change seen in codex's or
    pi's folders only): the Claude part of the listing is the previous one's.
    """

    def __init__(
        self, binary: str | None, *, timeout: float = LIST_TIMEOUT, scan_others: bool = True
    ):
        self.binary = binary
        self.timeout = timeout
        self.scan_others = scan_others
        self.cpu_seconds = 0.0  # children CPU spent listing (approximate: any reaped child)
        self.claude_listings = 0
        self._claude: tuple[ListedSession, ...] | None = None  # the last Claude part
        #: Why Claude Code is not listed (missing, or too old): codex and pi still are.
        self.claude_off: str | None = None if binary else CLAUDE_MISSING

    async def __call__(self, now: float) -> Observation:
        return await self.observe(now)

    async def observe(self, now: float, *, claude: bool = True) -> Observation:
        processes = LiveProcesses()
        complete: set[Harness] = set()
        if self.binary is not None and (claude or self._claude is None):
            try:
                raw = await self.run_claude()
            except Unavailable as exc:
                if not self.scan_others:
                    raise
                # codex and pi do not need Claude Code: they are still looked for.
                log.warning("discovery: %s; codex and pi are still looked for", exc)
                self.claude_off = str(exc)
                self.binary = None
                raw = "[]"
            self.claude_listings += 1
            # A listed live session whose pid is gone or a zombie (killed, not reaped yet) is
            # not running: its sessions file, if left behind, tells the rest.
            self._claude = tuple(
                s
                for s in parse_claude_agents(raw)
                if s.finished or s.pid is None or s.pid in processes
            )
            if self.binary is not None:
                complete.add(Harness.CLAUDE)
        sessions = self._claude or ()
        dead, others = await asyncio.to_thread(self._read_folders, processes, now)
        if others is not None:
            complete |= {Harness.CODEX, Harness.PI}
        listing = Listing(
            sessions=tuple(sessions) + tuple(others or ()),
            dead=tuple(dead) if self.binary is not None else (),
            complete=frozenset(complete),
            taken_at=now,
        )
        return Observation(listing, processes)

    async def run_claude(self) -> str:
        if self.binary is None:
            raise Unavailable(CLAUDE_MISSING)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.binary,
                "agents",
                "--json",
                "--all",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise Unavailable(
                f"Claude Code cannot run from {self.binary} ({exc}); install it or set "
                "VOLEE_CLAUDE_BIN"
            ) from exc
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.timeout)
        except TimeoutError:
            raise ListingFailed(
                f"`{self.binary} agents --json --all` took more than {self.timeout:g} s"
            ) from None
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            self.cpu_seconds += (after.ru_utime - before.ru_utime) + (
                after.ru_stime - before.ru_stime
            )
        if proc.returncode != 0:
            message = err.decode("utf-8", "replace").strip() or out.decode("utf-8", "replace")
            first = message.splitlines()[0] if message else f"exit code {proc.returncode}"
            if any(word in message.lower() for word in _UNSUPPORTED):
                raise Unavailable(
                    f"Claude Code at {self.binary} cannot list its sessions ({first}); "
                    "update Claude Code (2.1.332 has `claude agents --json`)"
                )
            raise ListingFailed(f"`claude agents --json --all` failed: {first}")
        return out.decode("utf-8", "replace")

    def _read_folders(
        self, processes: LiveProcesses, now: float
    ) -> tuple[list[DeadSession], list[ListedSession] | None]:
        folder = claude_dir() / "sessions"
        files = []
        try:
            entries = list(folder.glob("*.json"))
        except OSError:
            entries = []
        for path in entries:
            try:
                parsed = parse_session_file(path.read_text(encoding="utf-8"), path.name)
            except OSError:
                continue
            if parsed is not None:
                files.append(parsed)
        dead = dead_sessions(files, lambda pid: pid in processes)
        others: list[ListedSession] | None = None
        if self.scan_others:
            import psutil

            try:
                others = scan_processes(now)
            except (OSError, psutil.Error) as exc:
                log.debug("codex/pi process scan failed: %s", exc)
        return dead, others


# --- codex and pi: the process table and session folders ---------------------------------


def _same_home(proc: psutil.Process, home: Path) -> bool:
    """Whether the process runs with ``home`` as its HOME (unknown counts as the same)."""
    import psutil

    try:
        theirs = proc.environ().get("HOME")
    except (psutil.Error, OSError):
        return True
    if not isinstance(theirs, str) or not theirs:
        return True
    try:
        return Path(theirs).resolve() == home.resolve()
    except OSError:
        return theirs == str(home)


def scan_processes(now: float, home: Path | None = None) -> list[ListedSession]:
    """Live codex and pi processes as listed sessions (best effort)."""
    import psutil  # with the first scan, not with the daemon's start (issue 27)

    home = home or Path(os.environ.get("HOME") or str(Path.home()))
    found: dict[int, tuple[Harness, psutil.Process, float]] = {}
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "ppid", "cmdline", "create_time", "status"]):
        info = proc.info
        if info["pid"] == me or info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        harness = harness_of(info.get("cmdline") or [])
        if harness is not None:
            found[info["pid"]] = (harness, proc, float(info.get("create_time") or now))
    # The session files each process holds open, its wrapped child's counted as its own:
    # codex keeps its rollout open for the whole session, which tells two codex in one
    # folder apart (the newest file there is only one of theirs).
    held: dict[int, set[str]] = {pid: _held_files(pid) for pid in found}
    for pid, (harness, proc, _started) in found.items():
        parent = proc.info.get("ppid")
        if parent in found and found[parent][0] is harness:
            held[parent] |= held[pid]
    out = []
    for pid, (harness, proc, started) in found.items():
        parent = proc.info.get("ppid")
        if parent in found and found[parent][0] is harness:
            continue  # the wrapper's own child (node script -> native binary)
        try:
            cwd = proc.cwd()
        except (psutil.Error, OSError):
            continue
        if not _same_home(proc, home):
            # Its sessions are written under another HOME, which volee does not read (another
            # sandbox, a test's own HOME): not a session of this person's.
            continue
        theirs = {path for other, paths in held.items() if other != pid for path in paths}
        theirs -= held[pid]  # its wrapped child's are its own
        meta, mtime, path = _session_file(harness, home, cwd, started, held[pid], theirs)
        if meta is not None and meta.subagent:
            continue
        turn = session_turn(harness, _tail(path)) if path is not None else Turn(None)
        if turn.status is None and mtime is not None:
            # The file says nothing about the turn yet: its age stands in.
            turn = Turn(Coarse.BUSY if now - mtime < BUSY_WITHIN else Coarse.IDLE)
        out.append(
            ListedSession(
                harness=harness,
                session=(
                    meta.session
                    if meta
                    else synthetic_session(pid, started, recordio.start_ticks(pid))
                ),
                pid=pid,
                cwd=cwd,
                location=Location.TERMINAL,
                status=turn.status,
                waiting_for=turn.waiting_for,
                done=turn.done,
                done_at=mtime if turn.done else None,
                name=f"{os.path.basename(cwd) or harness}-{harness}",
                started_at=started,
                stand_in=meta is None,
            )
        )
    return out


#: How much of the end of a session file is read for the turn state.
TAIL_BYTES = 64 * 1024


def _tail(path: Path) -> list[str]:
    """The complete lines of the last TAIL_BYTES of ``path`` ([] when unreadable)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1:] if size > TAIL_BYTES else lines


def codex_sessions(home: Path) -> Path:
    """codex's sessions folder (CODEX_HOME moves it)."""
    return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "sessions"


def pi_sessions(home: Path) -> Path:
    """pi's sessions folder."""
    return home / ".pi" / "agent" / "sessions"


def _held_files(pid: int) -> set[str]:
    """The session files (``*.jsonl``) process ``pid`` holds open (empty when unreadable)."""
    if os.path.isdir("/proc/self/fd"):
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:
            return set()
        paths = set()
        for fd in fds:
            try:
                target = os.readlink(f"{folder}/{fd}")
            except OSError:
                continue
            if target.endswith(".jsonl"):
                paths.add(target)
        return paths
    import psutil

    try:
        files = psutil.Process(pid).open_files()
    except (psutil.Error, OSError):
        return set()
    return {f.path for f in files if f.path.endswith(".jsonl")}


def _session_file(
    harness: Harness,
    home: Path,
    cwd: str,
    started: float,
    held: AbstractSet[str] = frozenset(),
    theirs: AbstractSet[str] = frozenset(),
) -> tuple[SessionMeta | None, float | None, Path | None]:
    """The session file of a process in ``cwd``: one it holds open (``held``: codex keeps its
    rollout open, a resumed one's included), else the newest of that folder written since it
    started that no other process holds open (``theirs``)."""
    if harness is Harness.CODEX:
        root = codex_sessions(home)
        days = {
            datetime.date.fromtimestamp(started),
            datetime.date.fromtimestamp(time.time()),
        }
        candidates = [p for d in days for p in (root / f"{d:%Y/%m/%d}").glob("rollout-*.jsonl")]
        pattern = "rollout-*.jsonl"
    else:
        root = pi_sessions(home) / ("--" + cwd.strip("/").replace("/", "-") + "--")
        candidates = list(root.glob("*.jsonl"))
        pattern = "*.jsonl"
    own = [
        Path(p)
        for p in held
        if Path(p).match(pattern) and Path(p).is_relative_to(os.path.realpath(root))
    ]
    best: tuple[float, SessionMeta, Path] | None = None
    for path in own or candidates:
        if not own and (str(path) in theirs or os.path.realpath(path) in theirs):
            continue  # another process's session, though it may be the newest here
        try:
            mtime = path.stat().st_mtime
            if not own and mtime < started - 2:
                continue  # written before this process began: another run's
            with path.open(encoding="utf-8") as f:
                meta = parse_session_meta(harness, f.readline())
        except OSError:
            continue
        same_dir = meta is not None and os.path.normpath(meta.cwd) == os.path.normpath(cwd)
        if meta is not None and same_dir and (best is None or mtime > best[0]):
            best = (mtime, meta, path)
    return (best[1], best[0], best[2]) if best else (None, None, None)

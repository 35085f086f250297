"""The discovery loop: list the sessions started outside volee, reconcile, commit (seed 002).

Cadence: list when the daemon starts; while an interactive client is
subscribed, wait ``discovery_interval`` (2 s) after a listing that changed
something and twice as long after each listing that changed nothing, up to
``max_discovery_interval`` (10 s); with no interactive client, wait
``idle_discovery_interval`` (30 s).  A new interactive subscription and a
``discovery.refresh`` request list at once and bring the short wait back; a
refresh answers once a listing that *started after it* is applied, and the
requests made meanwhile share that listing.  Hook events never shorten the
wait.  Each wait starts when the previous listing ends.

The listing (``claude agents --json --all``, about 0.17 s of CPU: it starts a
Node process) runs as a subprocess outside any lock, with a timeout.  A
failing listing changes nothing, is logged once, and again when it works.
Claude Code missing, or too old to have ``agents --json``: discovery stays off
and ``volee daemon status`` says why.  codex and pi have no lister: their live
processes (psutil) and session folders stand in, best effort.

Seams: ``Clock`` (``now`` and ``wait``) and ``Lister`` (one listing), so the
cadence is tested on a fake clock with a fake lister.
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import psutil

from ..config import DiscoveryConfig
from ..core.model import Harness, Location
from ..core.reconcile import DeadSession, ListedSession, Listing, reconcile
from ..core.states import Coarse
from ..harness.listing import (
    ListingError,
    SessionMeta,
    dead_sessions,
    harness_of,
    parse_claude_agents,
    parse_session_file,
    parse_session_meta,
    synthetic_session,
)
from ..ipc.server import Connection
from .errors import Broken, Refused
from .errors import Error as DaemonError
from .service import Service

if TYPE_CHECKING:
    from .main import Daemon

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


# --- seams --------------------------------------------------------------------------------


class Clock(Protocol):
    """Wall-clock time, and waiting for an event with a timeout."""

    def now(self) -> float: ...

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        """Return when ``event`` is set or ``timeout`` seconds have passed."""
        ...


class LoopClock:
    """``time.time`` and the running loop."""

    def now(self) -> float:
        return time.time()

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass


@dataclass(frozen=True)
class Observation:
    """One listing with the process table it was read against."""

    listing: Listing
    processes: Container[int]


Lister = Callable[[float], Awaitable[Observation]]


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


_UNSUPPORTED = ("unknown option", "unknown command", "unexpected argument", "invalid command")


class SystemLister:
    """Runs ``claude agents --json --all`` and reads the sessions folder and process table."""

    def __init__(self, binary: str, *, timeout: float = LIST_TIMEOUT, scan_others: bool = True):
        self.binary = binary
        self.timeout = timeout
        self.scan_others = scan_others
        self.cpu_seconds = 0.0  # children CPU spent listing (approximate: any reaped child)

    async def __call__(self, now: float) -> Observation:
        raw = await self.run_claude()
        processes = LiveProcesses()
        # A listed live session whose pid is gone or a zombie (killed, not reaped yet) is not
        # running: its sessions file, if left behind, tells the rest.
        sessions = [
            s for s in parse_claude_agents(raw) if s.finished or s.pid is None or s.pid in processes
        ]
        dead, others = await asyncio.to_thread(self._read_folders, processes, now)
        complete = {Harness.CLAUDE}
        if others is not None:
            complete |= {Harness.CODEX, Harness.PI}
        listing = Listing(
            sessions=tuple(sessions) + tuple(others or ()),
            dead=tuple(dead),
            complete=frozenset(complete),
            taken_at=now,
        )
        return Observation(listing, processes)

    async def run_claude(self) -> str:
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
            try:
                others = scan_processes(now)
            except (OSError, psutil.Error) as exc:
                log.debug("codex/pi process scan failed: %s", exc)
        return dead, others


# --- codex and pi: the process table and session folders ---------------------------------


def scan_processes(now: float, home: Path | None = None) -> list[ListedSession]:
    """Live codex and pi processes as listed sessions (best effort)."""
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
    out = []
    for pid, (harness, proc, started) in found.items():
        parent = proc.info.get("ppid")
        if parent in found and found[parent][0] is harness:
            continue  # the wrapper's own child (node script -> native binary)
        try:
            cwd = proc.cwd()
        except (psutil.Error, OSError):
            continue
        meta, mtime = _session_file(harness, home, cwd, started)
        if meta is not None and meta.subagent:
            continue
        status = None
        if mtime is not None:
            status = Coarse.BUSY if now - mtime < BUSY_WITHIN else Coarse.IDLE
        out.append(
            ListedSession(
                harness=harness,
                session=meta.session if meta else synthetic_session(pid, started),
                pid=pid,
                cwd=cwd,
                location=Location.TERMINAL,
                status=status,
                name=f"{os.path.basename(cwd) or harness}-{harness}",
                started_at=started,
                stand_in=meta is None,
            )
        )
    return out


def _session_file(
    harness: Harness, home: Path, cwd: str, started: float
) -> tuple[SessionMeta | None, float | None]:
    if harness is Harness.CODEX:
        root = Path(os.environ.get("CODEX_HOME") or home / ".codex") / "sessions"
        days = {
            datetime.date.fromtimestamp(started),
            datetime.date.fromtimestamp(time.time()),
        }
        candidates = [p for d in days for p in (root / f"{d:%Y/%m/%d}").glob("rollout-*.jsonl")]
    else:
        folder = "--" + cwd.strip("/").replace("/", "-") + "--"
        candidates = list((home / ".pi" / "agent" / "sessions" / folder).glob("*.jsonl"))
    best: tuple[float, SessionMeta] | None = None
    for path in candidates:
        try:
            mtime = path.stat().st_mtime
            if mtime < started - 2:
                continue  # written before this process began: another run's
            with path.open(encoding="utf-8") as f:
                meta = parse_session_meta(harness, f.readline())
        except OSError:
            continue
        same_dir = meta is not None and os.path.normpath(meta.cwd) == os.path.normpath(cwd)
        if meta is not None and same_dir and (best is None or mtime > best[0]):
            best = (mtime, meta)
    return (best[1], best[0]) if best else (None, None)


# --- the loop -----------------------------------------------------------------------------


class Discovery:
    """The discovery loop, its cadence, ``discovery.refresh`` and its status."""

    def __init__(
        self,
        service: Service,
        config: DiscoveryConfig,
        lister: Lister | None,
        clock: Clock | None = None,
        *,
        off: str | None = None,
    ) -> None:
        self.service = service
        self.config = config
        self.lister = lister
        self.clock: Clock = clock or LoopClock()
        self.off = off if lister is not None else (off or "no lister")
        self.failing: str | None = None
        self.interactive = 0
        self.listings = 0
        self.applied = 0
        self.last_listed_at: float | None = None
        self.wait = config.discovery_interval
        self.previous: Listing | None = None
        self._wake = asyncio.Event()
        self._reset = True  # the first listing counts as a reset: the short wait follows it
        self._next: asyncio.Future[dict[str, Any]] | None = None

    # --- triggers ---------------------------------------------------------------------------

    def on_interactive(self) -> None:
        """A new interactive subscription: list at once, the short wait comes back."""
        self.interactive += 1
        self._poke()

    def on_interactive_end(self) -> None:
        """An interactive subscription ended."""
        self.interactive = max(0, self.interactive - 1)

    def _poke(self) -> None:
        self._reset = True
        self._wake.set()

    async def refresh(self) -> dict[str, Any]:
        """Answer once a listing that started after this call is applied."""
        if self.off:
            return {"listed": False, "reason": self.off}
        future = self._upcoming()
        self._poke()
        return await asyncio.shield(future)

    async def api_refresh(self, _conn: Connection, _params: dict[str, Any]) -> Any:
        return await self.refresh()

    def _upcoming(self) -> asyncio.Future[dict[str, Any]]:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        return self._next

    # --- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """List, reconcile and wait, until cancelled or discovery turns off."""
        try:
            while not self.off:
                reset = self._reset
                self._reset = False
                self._wake.clear()
                changed = await self.list_once()
                if self.off:
                    break
                self.wait = self.next_wait(changed or reset)
                if not self._wake.is_set():
                    await self.clock.wait(self._wake, self.wait)
        finally:
            self._settle({"listed": False, "reason": self.off or "discovery stopped"})

    def next_wait(self, changed: bool) -> float:
        """Seconds to wait after a listing."""
        cfg = self.config
        if self.interactive <= 0:
            return cfg.idle_discovery_interval
        if changed:
            return cfg.discovery_interval
        return min(max(self.wait, cfg.discovery_interval) * 2, cfg.max_discovery_interval)

    def _settle(self, answer: dict[str, Any]) -> None:
        future, self._next = self._next, None
        if future is not None and not future.done():
            future.set_result(answer)

    async def list_once(self) -> bool:
        """One listing, reconciled and committed; whether it changed anything."""
        assert self.lister is not None
        future = self._upcoming()
        self._next = None  # requests from now on wait for the next listing
        self.listings += 1
        try:
            observed = await self.lister(self.clock.now())
        except Unavailable as exc:
            self.off = str(exc)
            log.warning("discovery is off: %s", exc)
            future.set_result({"listed": False, "reason": self.off})
            return False
        except (ListingFailed, ListingError) as exc:
            if self.failing is None:
                log.warning("discovery: listing failed (retrying quietly): %s", exc)
            self.failing = str(exc)
            future.set_result({"listed": False, "reason": self.failing})
            return False
        except asyncio.CancelledError:
            future.set_result({"listed": False, "reason": "discovery stopped"})
            raise
        if self.failing is not None:
            log.info("discovery: listing works again")
            self.failing = None
        self.last_listed_at = self.clock.now()
        events = reconcile(
            self.service.current(),
            observed.listing,
            self.previous,
            observed.processes,
            self.clock.now(),
        )
        self.previous = observed.listing
        committed = False
        if events:
            try:
                await self.service.commit(events)
                committed = True
                self.applied += len(events)
            except (Refused, Broken) as exc:
                log.warning("discovery: %d reconciled events refused: %s", len(events), exc)
        future.set_result({"listed": True, "events": len(events) if committed else 0})
        return committed

    # --- status -----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """For ``volee daemon status``."""
        if self.off:
            state = "off"
        elif self.failing:
            state = "failing"
        else:
            state = "on"
        out: dict[str, Any] = {
            "state": state,
            "listings": self.listings,
            "events": self.applied,
            "last_listed_at": self.last_listed_at,
            "wait": self.wait,
            "interactive_clients": self.interactive,
        }
        reason = self.off or self.failing
        if reason:
            out["reason"] = reason
        cpu = getattr(self.lister, "cpu_seconds", None)
        if isinstance(cpu, float):
            out["cpu_seconds"] = round(cpu, 3)
        return out


# --- wiring -------------------------------------------------------------------------------


#: Tests replace these to run the daemon's discovery on a fake clock or a fake lister.
CLOCK_FACTORY: Callable[[], Clock] = LoopClock
LISTER_FACTORY: Callable[[str], Lister] = SystemLister


async def install(daemon: Daemon) -> None:
    """RUNNER_FACTORIES entry: create the discovery loop; it starts after hosts are adopted."""
    binary = daemon.agents.binaries.get("claude") or claude_binary()
    off = None
    lister: Lister | None = None
    if binary is None:
        off = "Claude Code not found: put `claude` on PATH or set VOLEE_CLAUDE_BIN"
    else:
        lister = LISTER_FACTORY(binary)
    runner = Discovery(daemon.service, daemon.config.discovery, lister, CLOCK_FACTORY(), off=off)
    daemon.discovery = runner  # type: ignore[attr-defined]
    daemon.api.add("discovery.refresh", runner.api_refresh)
    daemon.status_parts["discovery"] = runner.status
    daemon.on_interactive = runner.on_interactive
    daemon.on_interactive_end = runner.on_interactive_end

    async def start() -> None:
        if not runner.off:
            daemon.spawn_task(runner.run(), "discovery")
        else:
            log.info("discovery is off: %s", runner.off)

    daemon.after_adoption.append(start)


def _register() -> None:
    from .main import RUNNER_FACTORIES

    if install not in RUNNER_FACTORIES:
        RUNNER_FACTORIES.append(install)


_register()

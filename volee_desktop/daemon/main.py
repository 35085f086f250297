"""The daemon's composition root: every part, built here in order, each given what it needs.

``Daemon.start(dirs)`` brings it up on the running asyncio loop (plain asyncio for
``volee daemon run``, qasync inside the tray app): the lock, the config, the log and the
registry, the service, hook intake (which hands over the spool first), then the runners,
then the hosts still alive are taken back, then the IPC server serves.  ``await
daemon.stopped()`` waits for a stop request; ``await daemon.close()`` takes it down.  Hosts
are separate processes and keep running.

Tests build the daemon the same way, with fakes for the seams: ``Daemon.start(dirs,
clock=FakeClock(), lister=FakeLister())``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .. import __version__
from ..config import Config, load_config
from ..core.model import Harness
from ..harness.base import Profile
from ..harness.claude import ClaudeProfile
from ..harness.codex import CodexProfile
from ..harness.generic import GenericProfile
from ..harness.pi import PiProfile
from ..ipc.caller import caller_of
from ..ipc.server import Connection, IpcServer, MethodTable, Reply
from ..paths import Dirs, ensure_private_dir
from ..pidlock import PidLock
from ..store.log import EventLog
from ..store.records import Record
from . import watch
from .access import Audit
from .agents import AgentsRunner
from .answers import Answers
from .api import Api
from .clock import Clock, LoopClock
from .context import Clients, CloseHooks, Context, StatusBoard, Tasks
from .discovery import Discovery
from .errors import AlreadyRunning
from .identity import HostRecords, Identifier
from .intake import Intake
from .listers import Lister, SystemLister, claude_binary, registry_signature
from .mcphttp import McpHttp
from .mcphub import McpHub
from .missions import MissionsRunner
from .queries import Queries
from .recovery import Exits, RecoveryRunner, policy_of
from .screens import Screens
from .service import Service
from .snapshots import Snapshots, StartupFacts, load_registry
from .subscriptions import Subscriptions
from .workspaces import Workspaces

log = logging.getLogger(__name__)

# How often payloads the hook shim spooled while the daemon runs are handed over (seconds).
SPOOL_EVERY = 10.0


def harness_profiles() -> dict[str, Profile]:
    """One profile per harness volee knows."""
    return {
        "claude": ClaudeProfile(),
        "codex": CodexProfile(),
        "pi": PiProfile(),
        "generic": GenericProfile(),
    }


class Daemon:
    """One running daemon: the parts ``start`` opened, and the runners built on them."""

    def __init__(
        self,
        *,
        dirs: Dirs,
        config: Config,
        lock: PidLock,
        event_log: EventLog,
        facts: StartupFacts,
        service: Service,
        tasks: Tasks,
        snapshots: Snapshots,
        profiles: dict[str, Profile],
        intake: Intake,
        clock: Clock,
        lister: Lister | None,
    ) -> None:
        self.dirs = dirs
        self.config = config
        self.lock = lock
        self.log = event_log
        self.facts = facts
        self.service = service
        self.tasks = tasks
        self.snapshots = snapshots
        self.intake = intake
        self.clock = clock
        self.started_at = clock.now()
        self.server: IpcServer | None = None
        self.mcp_http: McpHttp | None = None
        self._stop = asyncio.Event()

        methods = MethodTable(f"this daemon ({__version__})")
        # Every request of an agent passes the rules of access.py; refusals are audited.
        self.audit = Audit(service, clock)
        self.api = Api(methods, service, self.audit)
        self.status_board = StatusBoard()
        self.closing = CloseHooks()
        ctx = Context(
            service=service,
            config=config,
            dirs=dirs,
            clock=clock,
            tasks=tasks,
            methods=methods,
            status=self.status_board,
            closing=self.closing,
        )
        # What an agent's end leads to: the hosts runner asks the recovery rules.
        # Each agent's screen, rendered from its host's output; the last one kept after it ended.
        screens = Screens(dirs.state / "screens")
        self.exits = Exits(service, clock, policy_of(config.agents), screens)
        self.agents = AgentsRunner(ctx, profiles, self.exits, screens)
        # Allow / deny / answer an agent's request, checked on its rendered screen.
        self.answers = Answers(ctx, self.agents)
        # The repository and branch of each agent's folder, from git (workspace-updated).
        self.workspaces = Workspaces(service, tasks, clock)
        # Who is interactive: subscriptions count the clients, discovery lists sooner for them.
        self.clients = Clients()
        self.queries = Queries(service, event_log, methods)
        self.subscriptions = Subscriptions(
            service, tasks, self.clients, facts.config_problems, methods
        )
        self.discovery = self._discovery(lister)
        methods.add("discovery.refresh", self.discovery.api_refresh)
        self.status_board.add("discovery", self.discovery.status)
        # The agents' MCP sessions (over HTTP or a relay) run the daemon's methods as their
        # connection's caller.
        self.mcp = McpHub(ctx, self.api, self.audit)
        self.missions = MissionsRunner(ctx, self.agents)
        self.recovery = RecoveryRunner(ctx, self.agents, self.exits)
        methods.add("hook", self.api_hook)
        methods.add("daemon.status", self.api_status)
        methods.add("caller", self.api_caller)
        methods.add("daemon.stop", self.api_stop)

    def _discovery(self, lister: Lister | None) -> Discovery:
        if lister is None:
            # Without Claude Code (None) codex and pi are still looked for.
            lister = SystemLister(self.agents.binaries.get("claude") or claude_binary())
        return Discovery(self.service, self.config.discovery, lister, self.clock, self.clients)

    def _watch(self) -> None:
        """Wake discovery when a session folder changes or a followed process ends
        (daemon/watch.py); only for the real lister (a fake one lists what the test says)."""
        lister = self.discovery.lister
        if not watch.WATCH or not isinstance(lister, SystemLister):
            return
        discovery = self.discovery
        folders = watch.watched_folders()
        sessions = next(p for p, h in folders.items() if h is Harness.CLAUDE)
        discovery.signature = lambda: registry_signature(sessions)
        changes = watch.folder_watch(folders, discovery.on_change)
        exits = watch.ExitWatch(discovery.on_exit)
        changes.start()
        discovery.watching = True

        def follow() -> None:
            discovery.watching = changes.running
            exits.follow(watch.followed_processes(self.service.registry))

        discovery.on_listed = follow

        async def stop() -> None:
            exits.close()
            await changes.close()

        self.closing.add(stop)

    @classmethod
    async def start(
        cls,
        dirs: Dirs,
        *,
        serve: bool = True,
        clock: Clock | None = None,
        lister: Lister | None = None,
    ) -> Daemon:
        """Bring the daemon up (raises AlreadyRunning, CorruptLog, StoreError).

        ``clock`` and ``lister`` replace the real ones (tests); ``serve=False`` opens no socket.
        """
        began = time.perf_counter()
        for folder in (dirs.state, dirs.runtime, dirs.logs, dirs.config, dirs.spool):
            ensure_private_dir(folder)
        ensure_private_dir(dirs.rejected)
        lock = PidLock(dirs.daemon_lock, AlreadyRunning).acquire()
        clock = clock or LoopClock()
        tasks = Tasks()
        event_log: EventLog | None = None
        daemon: Daemon | None = None
        try:
            loaded = load_config(dirs.config_file)
            for problem in loaded.problems:
                log.warning("config: %s (using the default)", problem)
            event_log = await asyncio.to_thread(EventLog.open, dirs.events_db)
            registry, facts = await asyncio.to_thread(load_registry, event_log)
            facts.config_problems = list(loaded.problems)
            service = Service(event_log, registry, Record)
            snapshots = Snapshots(event_log, service, tasks)
            profiles = harness_profiles()
            intake = Intake(service, profiles, dirs.spool, clock)
            # Before any runner listens: what was spooled while no daemon ran is the past.
            facts.spooled = await intake.ingest_spool()
            daemon = cls(
                dirs=dirs,
                config=loaded.config,
                lock=lock,
                event_log=event_log,
                facts=facts,
                service=service,
                tasks=tasks,
                snapshots=snapshots,
                profiles=profiles,
                intake=intake,
                clock=clock,
                lister=lister,
            )
            # Who each connection speaks for: the person, or the agent it descends from.
            identify = Identifier(lambda: service.registry, HostRecords(dirs.hosts))
            if serve:
                # Before any agent starts (recovery launches some): their harness is given it.
                await daemon.serve_mcp_http(identify)
            await daemon.take_over()
            if serve:
                daemon.server = await IpcServer.start(dirs.socket, daemon.api, identify=identify)
            tasks.spawn(daemon.ingest_spool_now_and_then(), "spool")
        except BaseException:
            # A start that fails late (e.g. the socket cannot be bound) must not leave the
            # runners' tasks and the log's writer thread running.
            if daemon is not None:
                await daemon.close()
            else:
                await tasks.cancel_all()
                if event_log is not None:
                    await asyncio.to_thread(event_log.close)
                lock.release()
            raise
        facts.seconds = time.perf_counter() - began
        log.info(
            "daemon %s up in %.3f s (pid %d, seq %d, snapshot at %d, replayed %d, spooled %d)",
            __version__,
            facts.seconds,
            os.getpid(),
            registry.seq,
            facts.snapshot_seq,
            facts.replayed,
            facts.spooled,
        )
        return daemon

    async def serve_mcp_http(self, identify: Identifier) -> None:
        """MCP over HTTP for the agents' harnesses, where the OS says who holds a TCP socket
        (daemon/mcphttp.py); elsewhere, or when it cannot listen, they keep the relay."""

        def likely() -> list[int]:
            return list(identify.programs(self.service.registry))

        http = McpHttp(self.mcp, identify, likely, self.dirs.state / "mcp-http.port")
        if await http.start():
            self.mcp_http = http
            self.agents.mcp_url = http.url
            self.status_board.add("mcp_http", http.status)
            self.closing.add(http.close)

    async def take_over(self) -> None:
        """Take back the hosts that still live, then start what runs after that: discovery,
        the missions' sweep, the recovery of the agents interrupted while no daemon ran."""
        interrupted = await self.agents.adopt_live_hosts()
        if not self.discovery.off:
            self._watch()
            self.tasks.spawn(self.discovery.run(), "discovery")
        else:
            log.info("discovery is off: %s", self.discovery.off)
        await self.missions.sweep()
        await self.recovery.recover_at_start(interrupted)

    async def ingest_spool_now_and_then(self) -> None:
        """Hand over what the hook shim spooled while this daemon runs (a hook that timed out,
        or a payload over one message), not only at the next start."""
        never = asyncio.Event()
        while True:
            await self.clock.wait(never, SPOOL_EVERY)
            try:
                await self.intake.ingest_spool()
            except Exception:
                log.exception("ingesting the spool failed; trying again in %s s", SPOOL_EVERY)

    # --- the daemon's own methods -----------------------------------------------------------

    async def api_hook(self, _conn: Connection, params: dict[str, Any]) -> Any:
        return await self.intake.hook(params)

    async def api_status(self, _conn: Connection, _params: dict[str, Any]) -> Any:
        registry = self.service.registry
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.started_at,
            "startup_seconds": self.facts.seconds,
            "socket": str(self.dirs.socket),
            "events_db": str(self.dirs.events_db),
            "seq": registry.seq,
            "agents": len(registry.agents),
            "live_agents": sum(1 for a in registry.agents.values() if a.state.live),
            "snapshot_seq": self.facts.snapshot_seq,
            "replayed": self.facts.replayed,
            "spooled": self.facts.spooled,
            "hooks_accepted": self.intake.accepted,
            "hooks_rejected": self.intake.rejected_count,
            "broken": self.service.broken,
            "failing": self.service.failing,
            "suspect_hosts": dict(self.agents.suspects),
            "config_problems": self.facts.config_problems,
            "extra": self.status_board.read(),
        }

    async def api_caller(self, conn: Connection, _params: dict[str, Any]) -> Any:
        """Who this connection speaks for, as the daemon decided it (docs/trust-model.md)."""
        who = caller_of(conn)
        name = self.service.registry.name_of(who.agent) if who.agent else None
        return {
            "kind": str(who.kind),
            "agent": who.agent,
            "name": name,
            "pid": who.pid,
            "how": who.how,
        }

    async def api_stop(self, _conn: Connection, _params: dict[str, Any]) -> Any:
        return Reply({"stopping": True}, after=self.request_stop)

    # --- stopping ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Ask the daemon to stop (it finishes what it is doing)."""
        self._stop.set()

    async def stopped(self) -> None:
        """Wait until someone asks the daemon to stop."""
        await self._stop.wait()

    async def close(self) -> None:
        """Stop serving, save a snapshot, close the log and release the lock."""
        if self.server is not None:
            await _watched("stopping the local API", self.server.close())
            self.server = None
        await _watched("the runners' close hooks", self.closing.run())
        await _watched("cancelling the daemon's tasks", self.tasks.cancel_all())
        if not self.service.broken:
            await self.snapshots.save()
        await asyncio.to_thread(self.log.close)
        self.lock.release()


#: A step of closing that takes longer than this says what it waits on (in the log).
SLOW_CLOSE = 10.0


def _where(task: asyncio.Task[object]) -> str:
    """Where a task waits: its chain of awaited coroutines, outermost first."""
    parts: list[str] = []
    coro: object = task.get_coro()
    while coro is not None and len(parts) < 12:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        parts.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " > ".join(parts) or "?"


async def _watched(step: str, work: Awaitable[None]) -> None:
    """Run one step of closing; past SLOW_CLOSE, log what every task is waiting on (a
    close that hangs says where), then keep waiting."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=SLOW_CLOSE)
    if not done:
        skip = (task, asyncio.current_task())
        waiting = [f"this step at {_where(task)}"]
        waiting += [f"{t.get_name()} at {_where(t)}" for t in asyncio.all_tasks() if t not in skip]
        log.warning(
            "closing: %s takes more than %.0f s; %s",
            step,
            SLOW_CLOSE,
            "; ".join(waiting),
        )
    await task


async def run_foreground(dirs: Dirs, on_ready: Callable[[Daemon], None] | None = None) -> int:
    """``volee daemon run``: serve until stopped (SIGTERM/SIGINT or `volee daemon stop`)."""
    import signal

    daemon = await Daemon.start(dirs)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, daemon.request_stop)
    if on_ready is not None:
        on_ready(daemon)
    try:
        await daemon.stopped()
    finally:
        await daemon.close()
    return 0

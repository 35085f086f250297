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
import gc
import logging
import os
import time
from collections.abc import Awaitable, Callable

from .. import __version__, dcache
from ..config import Config, load_config
from ..core.model import Harness
from ..harness.base import Profile
from ..harness.claude import ClaudeProfile
from ..harness.codex import CodexProfile
from ..harness.generic import GenericProfile
from ..harness.pi import PiProfile
from ..ipc.methods import Method
from ..ipc.server import IpcServer, MethodTable
from ..memtrim import Trimmer
from ..paths import Dirs, ensure_private_folders
from ..pidlock import PidLock
from ..store.log import EventLog
from ..store.records import Record
from .agents import leftovers
from .agents.answers import Answers
from .agents.intake import Intake, live_agents
from .agents.limits import Limits
from .agents.recovery import Exits, RecoveryRunner, policy_of
from .agents.runner import AgentsRunner
from .agents.screen_keys import ScreenMethods
from .agents.screens import Screens
from .agents.workspaces import Workspaces
from .clock import Clock, LoopClock
from .compaction import Compactor
from .context import Clients, CloseHooks, Context, StatusBoard, Tasks
from .discovery import watches as watch
from .discovery.listers import Lister, SystemLister, claude_binary, registry_signature
from .discovery.loop import Discovery
from .errors import AlreadyRunning
from .machines.link import Dialer
from .machines.runner import Machines
from .missions.outcomes import Outcomes
from .missions.review import Review
from .missions.runner import MissionsRunner
from .missions.transcripts import Transcripts
from .params import NoParameters, decoder
from .service import Service
from .serving.access import Audit
from .serving.api import Api
from .serving.desktop import DesktopPeers, PeerParams
from .serving.identity import HostRecords, Identifier
from .serving.mcphttp import McpHttp
from .serving.mcphub import McpHub
from .serving.own import DaemonMethods, Reads
from .serving.queries import Queries
from .serving.safety import ConfirmParams, SafetySettings
from .serving.subscriptions import Subscriptions
from .snapshots import Snapshots, StartupFacts, load_registry

log = logging.getLogger(__name__)

# How often payloads the hook shim spooled while the daemon runs are handed over (seconds).
SPOOL_EVERY = 10.0
# Seconds from the daemon's start to keeping what its start compiled (dcache.save).
SAVE_COMPILED_AFTER = 3.0


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
        dial: Dialer | None = None,
        safety: SafetySettings | None = None,
    ) -> None:
        self.dirs = dirs
        self.config = config
        self.lock = lock
        self.log = event_log
        self.facts = facts
        self.service = service
        self.tasks = tasks
        self.snapshots = snapshots
        self.compactor = snapshots.compactor or Compactor(event_log, clock, facts.base_seq)
        self.intake = intake
        self.clock = clock
        self.safety = safety or SafetySettings(service, dirs.config_file, clock)
        self.started_at = clock.now()
        self.server: IpcServer | None = None
        self.mcp_http: McpHttp | None = None
        self._stop = asyncio.Event()

        methods = MethodTable(f"this daemon ({__version__})")
        # Every request of an agent passes the rules of access.py; refusals are audited.
        self.audit = Audit(service, clock)
        self.status_board = StatusBoard()
        # Cyclic garbage collected and the allocator's free pages given back a minute after
        # work (volee_desktop/memtrim.py).
        self.trimmer = Trimmer(collect=gc.collect)
        service.listen(lambda _seq, _event: self.trimmer.poke())
        # Refusals of callers volee could not identify (no agent's timeline to keep them in).
        self.status_board.add("unidentified", self.audit.status)
        self.closing = CloseHooks()
        # A compaction running stops between two of its chunks (what it dropped stays dropped).
        self.closing.add(self.compactor.close)
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
        # The other machines (docs/machines.md): their agents in the list, actions forwarded
        # (the API routes what names another machine's agent to it).
        self.machines = Machines(ctx, dial)
        self.api = Api(methods, service, self.audit, router=self.machines.route)
        # What an agent's end leads to: the hosts runner asks the recovery rules.
        # Each agent's screen, rendered from its host's output; the last one kept after it ended.
        screens = Screens(dirs.state / "screens")
        self.exits = Exits(service, clock, policy_of(config.agents), screens)
        # Claude Code reaches the daemon's MCP over HTTP once it serves (serve_mcp_http).
        self.agents = AgentsRunner(
            ctx,
            profiles,
            self.exits,
            screens,
            mcp_url=lambda agent: self.mcp_http.url(agent) if self.mcp_http else None,
        )
        # Allow / deny / answer an agent's request, checked on its rendered screen.
        self.answers = Answers(ctx, self.agents, screens)
        # Its screen (agents.output) and the keys that are not an answer (agents.keys).
        self.screen_methods = ScreenMethods(ctx, self.agents, screens)
        # The repository and branch of each agent's folder, from git (workspace-updated).
        self.workspaces = Workspaces(service, tasks, clock)
        # Who is interactive: subscriptions count the clients, discovery lists sooner for them.
        self.clients = Clients()
        # The conversations (agents.log), and what each agent's work came to (ls's plan,
        # change and last message), refreshed at each turn's end; merge and discard.
        self.transcripts = Transcripts(service, methods)
        self.outcomes = Outcomes(service, tasks, self.transcripts, methods)
        self.review = Review(service, methods, lambda: self.missions.evidence.forge())
        self.queries = Queries(service, event_log, methods, lambda a: self.outcomes.get(a).view())
        self.subscriptions = Subscriptions(
            service,
            tasks,
            self.clients,
            facts.config_problems,
            methods,
            unconfirmed=lambda: self.safety.messages,
            machines=self.machines.feed,
            base=lambda: self.compactor.base_seq,
        )
        self.machines.on_change = self.subscriptions.machines_changed
        self.discovery = self._discovery(lister)
        methods.add(Method.DISCOVERY_REFRESH, self.discovery.api_refresh, decoder(NoParameters))
        self.status_board.add("discovery", self.discovery.status)
        # The agents' MCP sessions (over HTTP or a relay) run the daemon's methods as their
        # connection's caller.
        self.mcp = McpHub(ctx, self.api, self.audit)
        self.missions = MissionsRunner(ctx, self.agents)
        self.recovery = RecoveryRunner(ctx, self.agents, self.exits)
        # Agents stopped by a plan's usage limit: their retries on screen, their continue.
        self.limits = Limits(ctx, self.agents)
        # The daemon's own methods: hook, daemon.status, caller, daemon.stop.
        self.own = DaemonMethods(
            methods,
            service,
            intake,
            dirs,
            facts,
            self.started_at,
            self.status_board,
            Reads(
                suspect_hosts=lambda: dict(self.agents.suspects),
                unconfirmed=lambda: self.safety.messages,
                log=self.compactor.status,
            ),
            self.request_stop,
        )
        # Settings that lower safety wait for the person (daemon/serving/safety.py).
        methods.add(Method.CONFIG_UNCONFIRMED, self.safety.api_unconfirmed, decoder(NoParameters))
        methods.add(Method.CONFIG_CONFIRM, self.safety.api_confirm, decoder(ConfirmParams))
        self.safety.listen(self._settings_confirmed)

    def _settings_confirmed(self, config: Config) -> None:
        """The person confirmed what config.toml asks for: in force for what starts next."""
        self.config = config
        self.agents.config = config

    def _discovery(self, lister: Lister | None) -> Discovery:
        if lister is None:
            # Without Claude Code (None) codex and pi are still looked for.
            lister = SystemLister(self.agents.binaries.get("claude") or claude_binary())
        return Discovery(self.service, self.config.discovery, lister, self.clock, self.clients)

    def _watch(self) -> None:
        """Wake discovery when a session folder changes or a followed process ends
        (discovery/watches.py); only for the real lister (a fake one lists what the test says)."""
        lister = self.discovery.lister
        if not watch.WATCH or not isinstance(lister, SystemLister):
            return
        discovery = self.discovery
        folders = watch.watched_folders()
        sessions = next(p for p, h in folders.items() if h is Harness.CLAUDE)
        changes = watch.folder_watch(folders, discovery.on_change)
        exits = watch.ExitWatch(discovery.on_exit)
        changes.start()
        discovery.use_watch(changes, exits, lambda: registry_signature(sessions))

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
        dial: Dialer | None = None,
    ) -> Daemon:
        """Bring the daemon up (raises AlreadyRunning, CorruptLog, StoreError).

        ``clock``, ``lister`` and ``dial`` (how another machine is reached) replace the real
        ones (tests); ``serve=False`` opens no socket.
        """
        began = time.perf_counter()
        ensure_private_folders(dirs)  # every folder 0700, those left open tightened
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
            # What lowers safety in config.toml is in force only once the person confirmed it.
            safety = SafetySettings(service, dirs.config_file, clock)
            config = await safety.at_start(loaded.config)
            # The log compacts itself after a periodic snapshot, when due (compaction.py).
            compactor = Compactor(event_log, clock, facts.base_seq)
            snapshots = Snapshots(event_log, service, tasks, compactor)
            profiles = harness_profiles()
            intake = Intake(service, profiles, dirs.spool, clock)
            # Before any runner listens: what was spooled while no daemon ran is the past.
            facts.spooled = await intake.ingest_spool()
            daemon = cls(
                dirs=dirs,
                config=config,
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
                dial=dial,
                safety=safety,
            )
            # Who each connection speaks for: the person, or the agent it descends from.
            records = HostRecords(dirs.hosts)
            identify = Identifier(
                lambda: service.registry, records, adopts=leftovers.is_subreaper()
            )
            intake.live = lambda: live_agents(lambda: list(records.running()), service.registry)
            # The desktop's D-Bus peers (asked by the tray app) pass the same identification.
            peers = DesktopPeers(identify, daemon.audit, lambda: service.registry)
            daemon.api.methods.add(Method.DESKTOP_PEER, peers.api_peer, decoder(PeerParams))
            if serve:
                # Before any agent starts (recovery launches some): their harness is given it.
                await daemon.serve_mcp_http(identify)
            await daemon.take_over()
            if serve:
                daemon.server = await IpcServer.start(dirs.socket, daemon.api, identify=identify)
                intake.serving = True
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
        # The methods of the dataclasses compiled in this start, kept for the next one
        # (dcache.py); a moment later, not before the first requests.
        asyncio.get_running_loop().call_later(SAVE_COMPILED_AFTER, dcache.save)
        return daemon

    async def serve_mcp_http(self, identify: Identifier) -> None:
        """MCP over HTTP for the agents' harnesses, where the OS says who holds a TCP socket
        (daemon/serving/mcphttp.py); elsewhere, or when it cannot listen, they keep the relay."""

        def likely() -> list[int]:
            return list(identify.programs(self.service.registry))

        http = McpHttp(self.mcp, identify, likely, self.dirs.state / "mcp-http.port")
        if await http.start():
            self.mcp_http = http
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
        self.machines.start(self.config.machines)
        self.limits.start()

    async def ingest_spool_now_and_then(self) -> None:
        """Hand over what the hook shim spooled while this daemon runs (a hook that timed out),
        not only at the next start; and on the same tick (no wake-up of its own) look whether
        the log's -wal is still in place, so that one deleted while idle is seen within
        SPOOL_EVERY, not at the next commit."""
        never = asyncio.Event()
        while True:
            await self.clock.wait(never, SPOOL_EVERY)
            await self.check_log()
            try:
                await self.intake.ingest_spool()
            except Exception:
                log.exception("ingesting the spool failed; trying again in %s s", SPOOL_EVERY)

    async def check_log(self) -> None:
        """The idle look at the -wal (``EventLog.check``): when it is gone the daemon stops
        taking writes, as after a commit that found it gone (docs/faults.md)."""
        if self.service.broken:
            return
        try:
            await self.log.check()
        except Exception:
            log.exception("looking at the event log's -wal failed; trying again later")
        stopped = self.log.stopped
        if stopped and not self.service.broken:
            self.service.broken = stopped

    # --- stopping ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Ask the daemon to stop (it finishes what it is doing)."""
        self._stop.set()

    async def stopped(self) -> None:
        """Wait until someone asks the daemon to stop."""
        await self._stop.wait()

    async def close(self) -> None:
        """Stop serving, save a snapshot, close the log and release the lock."""
        self.trimmer.close()
        if self.server is not None and not self.service.broken:
            # What was spooled while this daemon served is judged by the rules of serving,
            # not left for the next start to take unverified.
            try:
                await self.intake.ingest_spool()
            except Exception:
                log.exception("ingesting the spool before stopping failed")
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

    from .agents.leftovers import become_subreaper

    # The orphans of a host killed outright come to this process, not to init: the daemon
    # ends them (daemon/agents/leftovers.py).  Not the app's daemon: the app's own children (the
    # terminals it opens) would be taken for leftovers.
    become_subreaper()
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

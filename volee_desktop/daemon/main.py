"""The daemon's composition root: lock, log, registry, service, intake, IPC server, runners.

``Daemon.start(dirs)`` brings it up on the running asyncio loop (plain
asyncio for ``volee daemon run``, qasync inside the tray app);
``await daemon.stopped()`` waits for a stop request; ``await daemon.close()``
takes it down.  Hosts are separate processes and keep running.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..config import Config, load_config
from ..core.registry import Registry
from ..harness.base import Profile
from ..harness.claude import ClaudeProfile
from ..harness.codex import CodexProfile
from ..harness.generic import GenericProfile
from ..harness.pi import PiProfile
from ..ipc.server import IpcServer
from ..paths import Dirs, ensure_private_dir
from ..pidlock import PidLock
from ..store.codec import SNAPSHOT_VERSION, CodecError, decode_registry, encode_registry
from ..store.errors import StoreError
from ..store.integrity import corrupt
from ..store.log import EventLog
from ..store.records import Record
from .errors import AlreadyRunning
from .intake import Intake
from .service import Service, replay

log = logging.getLogger(__name__)

SNAPSHOT_EVERY = 10_000
# How often payloads the hook shim spooled while the daemon runs are handed over (seconds).
SPOOL_EVERY = 10.0

#: Runners added by later features (recovery, missions, discovery): each gets the daemon
#: after the agents runner exists and before live hosts are adopted.
RUNNER_FACTORIES: list[Callable[[Daemon], Awaitable[None]]] = []


@dataclass
class StartupFacts:
    """What start-up found, for `volee daemon status` and logs."""

    snapshot_seq: int = 0
    replayed: int = 0
    spooled: int = 0
    seconds: float = 0.0
    config_problems: list[str] = field(default_factory=list)


class Daemon:
    """One running daemon."""

    def __init__(
        self,
        dirs: Dirs,
        config: Config,
        event_log: EventLog,
        service: Service,
        lock: PidLock,
        facts: StartupFacts,
    ) -> None:
        self.dirs = dirs
        self.config = config
        self.log = event_log
        self.service = service
        self.lock = lock
        self.facts = facts
        self.started_at = time.time()
        self.profiles: dict[str, Profile] = {
            "claude": ClaudeProfile(),
            "codex": CodexProfile(),
            "pi": PiProfile(),
            "generic": GenericProfile(),
        }
        self.intake = Intake(service, self.profiles, dirs.spool)
        self.server: IpcServer | None = None
        self._stop = asyncio.Event()
        self._since_snapshot = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_close: list[Callable[[], Awaitable[None]]] = []
        self.on_interactive: Callable[[], None] | None = None
        self.on_interactive_end: Callable[[], None] | None = None
        self.after_adoption: list[Callable[[], Awaitable[None]]] = []
        self.interrupted: list[Any] = []
        self.status_parts: dict[str, Callable[[], Any]] = {}
        service.listen(self._count_for_snapshot)

    @classmethod
    async def start(cls, dirs: Dirs, *, serve: bool = True) -> Daemon:
        """Bring the daemon up (raises AlreadyRunning, CorruptLog, StoreError)."""
        began = time.perf_counter()
        for folder in (dirs.state, dirs.runtime, dirs.logs, dirs.config, dirs.spool):
            ensure_private_dir(folder)
        ensure_private_dir(dirs.rejected)
        lock = PidLock(dirs.daemon_lock, AlreadyRunning).acquire()
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
            daemon = cls(dirs, loaded.config, event_log, service, lock, facts)
            daemon.facts.spooled = await daemon.intake.ingest_spool()
            await daemon.wire_runners()
            if serve:
                daemon.server = await IpcServer.start(dirs.socket, daemon.api)
            daemon.spawn_task(daemon.ingest_spool_now_and_then(), "spool")
        except BaseException:
            # A start that fails late (e.g. the socket cannot be bound) must not leave the
            # runners' tasks and the log's writer thread running.
            if daemon is not None:
                await daemon.close()
            else:
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

    async def wire_runners(self) -> None:
        """Create the API and the runners, and take back the hosts that still live."""
        from .agents import AgentsRunner
        from .api import Api

        self.api = Api(self)
        self.agents = AgentsRunner(self)
        self.agents.install()
        # Importing each feature registers its runner (discovery loop, missions, recovery).
        from . import discovery, mcphub, missions, recovery  # noqa: F401

        for extend in RUNNER_FACTORIES:
            await extend(self)
        self.interrupted = await self.agents.adopt_live_hosts()
        for after in self.after_adoption:
            await after()

    async def ingest_spool_now_and_then(self) -> None:
        """Hand over what the hook shim spooled while this daemon runs (a hook that timed out,
        or a payload over one message), not only at the next start."""
        while True:
            await asyncio.sleep(SPOOL_EVERY)
            try:
                await self.intake.ingest_spool()
            except Exception:
                log.exception("ingesting the spool failed; trying again in %s s", SPOOL_EVERY)

    def request_stop(self) -> None:
        """Ask the daemon to stop (it finishes what it is doing)."""
        self._stop.set()

    async def stopped(self) -> None:
        """Wait until someone asks the daemon to stop."""
        await self._stop.wait()

    def spawn_task(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run a background task that is cancelled at close; failures are logged."""

        async def run() -> Any:
            try:
                return await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background task %s failed", name)
                return None

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if isinstance(coro, Coroutine):
            # Cancelled before it ran (a close right after start): close it, so that it is not
            # reported as never awaited. A no-op for one that ran.
            task.add_done_callback(lambda _t: coro.close())
        return task

    def _count_for_snapshot(self, seq: int, _event: object) -> None:
        self._since_snapshot += 1
        if self._since_snapshot >= SNAPSHOT_EVERY:
            self._since_snapshot = 0
            self.spawn_task(self.save_snapshot(), "snapshot")

    async def save_snapshot(self) -> None:
        """Save the visible registry as a snapshot (derived data: failure is only logged)."""
        registry = self.service.registry
        if registry.seq == 0:
            return
        blob = encode_registry(registry)
        try:
            await self.log.save_snapshot(registry.seq, SNAPSHOT_VERSION, blob)
        except StoreError as exc:
            log.warning("could not save a snapshot at %d: %s", registry.seq, exc)

    async def close(self) -> None:
        """Stop serving, save a snapshot, close the log and release the lock."""
        if self.server is not None:
            await self.server.close()
            self.server = None
        for hook in self.on_close:
            try:
                await hook()
            except Exception:
                log.exception("close hook failed")
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if not self.service.broken:
            await self.save_snapshot()
        await asyncio.to_thread(self.log.close)
        self.lock.release()


def load_registry(event_log: EventLog) -> tuple[Registry, StartupFacts]:
    """The newest snapshot plus the tail of the log after it (or the whole log)."""
    facts = StartupFacts()
    registry = Registry()
    snapshot = event_log.latest_snapshot()
    if snapshot is not None and snapshot.version == SNAPSHOT_VERSION:
        try:
            registry = decode_registry(snapshot.blob)
            registry.seq = snapshot.seq
            facts.snapshot_seq = snapshot.seq
        except CodecError as exc:
            log.warning(
                "snapshot at %d unreadable (%s); replaying the whole log", snapshot.seq, exc
            )
            registry = Registry()
    before = registry.seq
    try:
        replay(registry, event_log.read(registry.seq))
    except CodecError as exc:
        raise corrupt(event_log.path, registry.seq + 1, f"an event cannot be read: {exc}") from exc
    facts.replayed = registry.seq - before
    return registry, facts


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

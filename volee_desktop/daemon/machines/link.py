"""One link to another machine's daemon: its bridge, the handshake, the feed, reconnecting.

``MachineLink.run`` starts the machine's bridge (``<ssh -T DEST | CMD …> volee bridge``, a
child process in its own session) through a ``Dialer`` and speaks the daemon's own NDJSON API
over its stdin/stdout with ``ipc.aclient.AsyncClient``:

1. ``machine.hello``: the other daemon's volee version, protocol and machine id.  Another
   release (major.minor) or protocol is refused with both versions named; a machine already
   linked under another name (the same machine id) is refused naming that name.
2. ``subscribe`` (not interactive) with ``since`` its last sequence number: a first link takes
   a snapshot, a reconnection the events it missed, so there is no gap and no duplicate.  The
   registry is kept here in memory and is the machine's part of ``volee ls``.
3. On any loss the machine is unreachable since then (its agents are kept as they were, never
   lost, stopped or done) and the link tries again after a backoff.

Tests dial a fake (``tests/fakes/machines.py``) instead of a process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import __version__
from ...core.events import Event
from ...core.registry import Registry
from ...ipc.aclient import AsyncClient
from ...ipc.methods import Method
from ...ipc.protocol import PROTOCOL_VERSION, CallTimeout, ErrorCode, IpcError
from ...machines import Machine
from ...store.codec import CodecError, decode_registry, event_from_dict
from ..clock import Clock
from ..errors import Error

log = logging.getLogger(__name__)

#: Seconds between attempts, growing; the last one repeats.
BACKOFF = (0.5, 2.0, 5.0, 10.0, 30.0, 60.0)
#: ssh's ConnectTimeout is 10 s; authentication and a cold remote start take some more.
HELLO_TIMEOUT = 30.0
SNAPSHOT_TIMEOUT = 60.0
STDERR_LINES = 5


class LinkRefused(Error):
    """The other side answered, but the link must not be used (another version, a duplicate)."""


@dataclass
class Channel:
    """A bridge's two streams, and how to end it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    close: Callable[[], Awaitable[None]]
    #: What the bridge (ssh) said on stderr, last lines: why it failed, in its own words.
    said: Callable[[], str] = lambda: ""


Dialer = Callable[[Machine], Awaitable[Channel]]


async def dial_process(machine: Machine) -> Channel:
    """Start the machine's bridge command as a child process (its own session, so a Ctrl-C in
    the terminal that started the daemon does not reach it)."""
    argv = machine.bridge_argv()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ConnectionError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    assert proc.stdin is not None
    assert proc.stdout is not None
    lines: list[str] = []

    async def read_stderr() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            text = raw.decode("utf-8", "replace").strip()
            if text:
                lines.append(text)
                del lines[:-STDERR_LINES]
                log.info("machine %s: %s", machine.name, text)

    stderr_task = asyncio.ensure_future(read_stderr())

    async def close() -> None:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 3.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stderr_task, 1.0)
        stderr_task.cancel()

    def said() -> str:
        # The process's last words; its exit status only when it said nothing (a status
        # after our own SIGTERM would be ours, not its).
        if lines:
            return "; ".join(lines)
        code = proc.returncode
        return f"{argv[0]} exited with status {code}" if code else ""

    return Channel(proc.stdout, proc.stdin, close, said)


def release(version: str) -> str:
    """``0.6`` of ``0.6.1``: what two machines must share to understand each other's events."""
    return ".".join(version.split(".")[:2])


def clock_time(at: float) -> str:
    """14:02 (or ``1 Dec 14:02`` when not today), local time, for "unreachable since"."""
    now = time.localtime()
    then = time.localtime(at)
    if then[:3] == now[:3]:
        return time.strftime("%H:%M", then)
    return time.strftime("%-d %b %H:%M", then)


@dataclass
class LinkState:
    """What ``volee machine ls`` shows of one link."""

    reachable: bool = False
    #: When it became reachable or unreachable (None: never tried yet).
    since: float | None = None
    problem: str | None = "not connected yet"
    version: str | None = None
    machine_id: str | None = None
    host: str | None = None
    attempts: int = 0
    snapshots: int = 0
    replays: int = 0
    #: Events folded into the copy (a replay that overlaps is not folded twice).
    applied: int = 0


class MachineLink:
    """The link to one machine: its registry, kept up to date while it is reachable."""

    def __init__(
        self,
        machine: Machine,
        dial: Dialer,
        clock: Clock,
        claim: Callable[[MachineLink, str], str | None],
        backoff: tuple[float, ...] = BACKOFF,
    ) -> None:
        self.machine = machine
        self.dial = dial
        self.clock = clock
        self.claim = claim  # why this machine id is not ours to link (a duplicate), or None
        self.backoff = backoff
        self.state = LinkState()
        self.registry: Registry | None = None
        self.client: AsyncClient | None = None
        self._channel: Channel | None = None
        self._wake = asyncio.Event()
        self._closed = False
        self.tried = asyncio.Event()  # set after the first attempt, whatever its outcome
        self.changed: Callable[[], None] = lambda: None

    @property
    def name(self) -> str:
        return self.machine.name

    @property
    def seq(self) -> int | None:
        return self.registry.seq if self.registry is not None else None

    def unreachable_text(self) -> str:
        """``devbox is unreachable since 14:02 (why)``."""
        state = self.state
        since = f" since {clock_time(state.since)}" if state.since is not None else ""
        why = f" ({state.problem})" if state.problem else ""
        return f"{self.name} is unreachable{since}{why}"

    # --- the loop -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, follow, and after a loss try again, until closed."""
        failures = 0
        while not self._closed:
            self.state.attempts += 1
            was_up = False
            channel: Channel | None = None
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                was_up = self.state.reachable
                channel = self._channel
                # Hang up first: ssh's last words (why it failed) are read to the end then.
                await self._hang_up()
                if isinstance(exc, LinkRefused):
                    self._down(str(exc))
                    failures = max(failures, len(self.backoff) - 1)
                else:
                    self._down(self._why(exc, channel))
            finally:
                await self._hang_up()
                self.tried.set()
            if self._closed:
                return
            if was_up:
                failures = 0  # it was up: the first attempt after a loss comes quickly
            delay = self.backoff[min(failures, len(self.backoff) - 1)]
            failures += 1
            self._wake.clear()
            await self.clock.wait(self._wake, delay)

    def wake(self) -> None:
        """Try again now (``volee machine ls`` after fixing something)."""
        self._wake.set()

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        await self._hang_up()

    def _why(self, exc: BaseException, channel: Channel | None) -> str:
        said = channel.said() if channel is not None else ""
        text = str(exc.message if isinstance(exc, IpcError) else exc) or type(exc).__name__
        return said or text

    def _down(self, problem: str) -> None:
        was = self.state.reachable
        self.state.reachable = False
        self.state.problem = problem
        if was or self.state.since is None:
            self.state.since = self.clock.now()
        log.info("machine %s unreachable: %s", self.name, problem)
        self.changed()

    async def _hang_up(self) -> None:
        client, self.client = self.client, None
        channel, self._channel = self._channel, None
        if client is not None:
            await client.close()
        if channel is not None:
            await channel.close()

    async def _session(self) -> None:
        channel = await self.dial(self.machine)
        self._channel = channel
        client = AsyncClient(channel.reader, channel.writer, Path(f"{self.name}:bridge"))
        self.client = client
        pushes: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()
        client.on_push("snapshot", lambda p: pushes.put_nowait(("snapshot", p)))
        client.on_push("event", lambda p: pushes.put_nowait(("event", p)))

        async def closed() -> None:
            await client.closed.wait()
            pushes.put_nowait(None)

        watcher = asyncio.ensure_future(closed())
        try:
            await self._hello(client)
            await self._subscribe(client, pushes, self.seq)
            self.state.reachable = True
            self.state.problem = None
            self.state.since = self.clock.now()
            self.tried.set()
            self.changed()
            log.info(
                "machine %s reachable (volee %s), at seq %s",
                self.name,
                self.state.version,
                self.seq,
            )
            while True:
                item = await pushes.get()
                if item is None:
                    raise ConnectionError("the connection closed")
                kind, payload = item
                if kind == "event" and not self._apply(payload):
                    # A gap (or an event that does not apply): take a fresh snapshot.
                    await self._subscribe(client, pushes, None)
        finally:
            watcher.cancel()

    async def _hello(self, client: AsyncClient) -> None:
        try:
            hello = await client.call(Method.MACHINE_HELLO, timeout=HELLO_TIMEOUT)
        except CallTimeout:
            said = self._channel.said() if self._channel is not None else ""
            raise ConnectionError(
                f"{self.name} did not answer within {HELLO_TIMEOUT:g} s (ssh, or the command "
                f"that reaches it, hangs){f': {said}' if said else ''}"
            ) from None
        except IpcError as exc:
            if exc.code == ErrorCode.UNKNOWN_METHOD:
                status = await client.call(Method.DAEMON_STATUS, timeout=HELLO_TIMEOUT)
                version = status.get("version") if isinstance(status, dict) else None
                raise LinkRefused(
                    f"volee on {self.name} is {version or 'an older one'}, this one is "
                    f"{__version__}: install the same version on both"
                ) from None
            if exc.code in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.BAD_REQUEST):
                raise LinkRefused(
                    f"volee on {self.name} speaks another protocol ({exc.message}); this one "
                    f"is {__version__} (protocol {PROTOCOL_VERSION}): install the same "
                    "version on both"
                ) from None
            raise
        if not isinstance(hello, dict):
            raise LinkRefused(f"{self.name} answered the handshake with {hello!r}")
        version = str(hello.get("version"))
        protocol = hello.get("protocol")
        self.state.version = version
        self.state.host = hello.get("host") if isinstance(hello.get("host"), str) else None
        if protocol != PROTOCOL_VERSION or release(version) != release(__version__):
            raise LinkRefused(
                f"volee on {self.name} is {version} (protocol {protocol}), this one is "
                f"{__version__} (protocol {PROTOCOL_VERSION}): install the same version on both"
            )
        machine_id = hello.get("machine_id")
        if not isinstance(machine_id, str) or not machine_id:
            raise LinkRefused(f"volee on {self.name} did not say its machine id")
        problem = self.claim(self, machine_id)
        if problem:
            raise LinkRefused(problem)
        if self.state.machine_id not in (None, machine_id):
            # Another machine now answers at this name: what we kept of the old one is not it.
            log.warning("machine %s: a different machine id now; taking a snapshot", self.name)
            self.registry = None
        self.state.machine_id = machine_id

    async def _subscribe(
        self,
        client: AsyncClient,
        pushes: asyncio.Queue[tuple[str, dict[str, Any]] | None],
        since: int | None,
    ) -> None:
        params: dict[str, Any] = {"since": since, "interactive": False}
        try:
            result = await client.call(Method.SUBSCRIBE, params, timeout=HELLO_TIMEOUT)
        except IpcError as exc:
            if since is None or exc.code != ErrorCode.CONFLICT:
                raise
            # Its log is shorter than what we saw (a new volee home there): start afresh.
            log.info("machine %s cannot replay after %s (%s); snapshot", self.name, since, exc)
            return await self._subscribe(client, pushes, None)
        if since is not None:
            self.state.replays += 1
            return
        count = int(result.get("snapshot_parts", 0))
        parts: list[str] = []
        held: list[dict[str, Any]] = []
        async with asyncio.timeout(SNAPSHOT_TIMEOUT):
            while len(parts) < count:
                item = await pushes.get()
                if item is None:
                    raise ConnectionError("the connection closed during the snapshot")
                kind, payload = item
                if kind == "snapshot":
                    parts.append(str(payload.get("data", "")))
                else:
                    held.append(payload)
        try:
            registry = decode_registry("".join(parts).encode()) if count else Registry()
        except CodecError as exc:
            raise LinkRefused(f"the registry {self.name} sent cannot be read: {exc}") from exc
        registry.seq = int(result["seq"])
        self.registry = registry
        self.state.snapshots += 1
        for payload in held:
            self._apply(payload)
        self.changed()

    def _apply(self, payload: dict[str, Any]) -> bool:
        """Fold one pushed event in; False when it does not follow (a gap) or apply."""
        registry = self.registry
        seq = payload.get("seq")
        data = payload.get("event")
        if registry is None or not isinstance(seq, int) or not isinstance(data, dict):
            return False
        if seq <= registry.seq:
            return True  # a replay overlapping what we have: never twice
        if seq != registry.seq + 1:
            log.warning("machine %s: event %d follows %d, a gap", self.name, seq, registry.seq)
            return False
        try:
            event: Event = event_from_dict(data)
        except CodecError as exc:
            log.warning("machine %s: event %d cannot be read (%s); skipped", self.name, seq, exc)
            registry.seq = seq
            return True
        try:
            registry.apply(event)
        except Exception:
            log.exception("machine %s: event %d does not apply to our copy", self.name, seq)
            return False
        registry.seq = seq
        self.state.applied += 1
        self.changed()
        return True

    # --- requests -------------------------------------------------------------------------

    async def call(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """Call ``method`` on the other daemon; never queued: while the machine is unreachable
        it is refused with the reason (``unavailable``)."""
        client = self.client
        if client is None or not self.state.reachable:
            raise IpcError(ErrorCode.UNAVAILABLE, f"{self.unreachable_text()}: not sent")
        try:
            return await client.call(method, params, timeout=timeout)
        except IpcError as exc:
            if exc.code == ErrorCode.UNAVAILABLE:
                raise IpcError(
                    ErrorCode.UNAVAILABLE,
                    f"the link to {self.name} broke during {method} ({exc.message}); "
                    "it may or may not have been done there: look again once it is back",
                ) from None
            raise IpcError(exc.code, f"{self.name}: {exc.message}") from None


def new_machine_id() -> str:
    """A random id for this daemon's machine (``mc_`` and 20 hex digits)."""
    return "mc_" + os.urandom(10).hex()

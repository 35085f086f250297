"""The seam between the tray app and the daemon: ``DaemonLink`` and its IPC implementation.

The app talks to the daemon only through a ``DaemonLink``: ``call`` for
requests and ``subscribe`` for the live feed (a registry snapshot, then every
event with its sequence number, in order).  ``IpcDaemonLink`` is the real one
over ``volee_desktop.ipc.aclient.AsyncClient``; it reconnects by itself and
resumes the feed with ``since=<last seq>`` so that no event is lost.  Tests use
``tests/ui/fakes.py: FakeDaemonLink``.

The feed is *interactive* (the daemon's discovery lists often for it) only while
someone looks: ``set_interactive`` follows the list and the agent windows, and a
reconnection keeps what it was.  With only the icon showing, the app follows
events and asks for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from volee_desktop.core.events import Event
from volee_desktop.core.registry import Registry
from volee_desktop.store.codec import CodecError, decode_registry, event_from_dict

from ..ipc.methods import Method
from .errors import LinkError

if TYPE_CHECKING:
    from volee_desktop.ipc.aclient import AsyncClient

log = logging.getLogger(__name__)

__all__ = [
    "DaemonLink",
    "IpcDaemonLink",
    "LinkListener",
    "registry_from_builtins",
]


class LinkListener(Protocol):
    """Receives the daemon's live feed (all calls happen on the event loop's thread)."""

    def on_snapshot(self, registry: Registry, seq: int) -> None:
        """Everything the daemon knows at ``seq``; replaces what the listener had."""
        ...

    def on_event(self, seq: int, event: Event) -> None:
        """The event numbered ``seq`` (``seq`` grows by one each time, without gaps)."""
        ...

    def on_notice(self, notice: dict[str, Any]) -> None:
        """A daemon notice that is not an event (e.g. ``{"kind": "config-problems", ...}``)."""
        ...

    def on_connection(self, connected: bool, detail: str) -> None:
        """The link went up or down; ``detail`` says why, for the tray's tooltip."""
        ...

    def on_machines(self, push: dict[str, Any]) -> None:
        """The daemon's ``machines`` push (docs/machines.md): what changed of the other
        machines (their state, agents and missions) since its last one."""
        ...


class DaemonLink(Protocol):
    """A connection to the daemon, as the tray app uses it."""

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Call ``method`` (see docs/ipc.md); raise LinkError when it fails."""
        ...

    async def subscribe(self, listener: LinkListener, since: int | None = None) -> None:
        """Start (or restart) the live feed; return once the snapshot or replay began.

        ``since=None`` asks for a snapshot; ``since=n`` for every event after ``n``.
        Only one listener is fed: a second call replaces the first feed.
        """
        ...

    async def set_interactive(self, on: bool) -> None:
        """Someone looks (the list or an agent window is open) or no longer does: only then
        does the daemon's discovery keep its short cadence for this app."""
        ...

    async def close(self) -> None:
        """Stop the feed and disconnect (the daemon keeps running)."""
        ...


def registry_from_builtins(data: Any) -> Registry:
    """The registry of a snapshot sent as JSON data (the codec's form of ``Registry``)."""
    try:
        return msgspec.convert(data, Registry)
    except msgspec.ValidationError as exc:
        raise LinkError(f"the daemon sent a registry snapshot this app cannot read: {exc}") from exc


ClientFactory = Callable[[], Awaitable["AsyncClient"]]

# Reconnect quickly at first (a daemon restart takes well under a second), then back off.
RECONNECT_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
SNAPSHOT_TIMEOUT = 30.0


class IpcDaemonLink:
    """A ``DaemonLink`` over the local socket, reconnecting and resuming the feed by itself."""

    def __init__(self, client: AsyncClient, reconnect: ClientFactory | None = None) -> None:
        self._client = client
        self._reconnect_factory = reconnect
        self._listener: LinkListener | None = None
        self._seq: int | None = None
        self._closed = False
        self._unsubscribe: list[Callable[[], None]] = []
        # Pushes that arrive before the subscribe reply was handled wait here.
        self._early: list[dict[str, Any]] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._parts: dict[int, str] = {}
        self._parts_wanted: int | None = None
        self._parts_done: asyncio.Future[str] | None = None
        self._interactive = False

    @classmethod
    async def connect(cls, path: Path | None = None) -> IpcDaemonLink:
        """Connect to the daemon at ``path`` (default: this user's socket)."""
        from volee_desktop.ipc.aclient import AsyncClient

        async def factory() -> AsyncClient:
            return await AsyncClient.connect(path)

        return cls(await factory(), factory)

    @property
    def seq(self) -> int | None:
        """The sequence number of the last event delivered."""
        return self._seq

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        from volee_desktop.ipc.protocol import IpcError

        try:
            return await self._client.call(method, params)
        except IpcError as exc:
            raise LinkError(f"{method}: {exc}") from exc

    async def subscribe(self, listener: LinkListener, since: int | None = None) -> None:
        self._listener = listener
        await self._start_feed(since)
        if self._watch is None:
            self._watch = asyncio.get_running_loop().create_task(self._watch_connection())

    async def set_interactive(self, on: bool) -> None:
        if on == self._interactive:
            return
        self._interactive = on
        if self._listener is None:
            return  # the subscription will say it
        try:
            await self.call(Method.SUBSCRIBE_INTERACTIVE, {"interactive": on})
        except LinkError as exc:
            # An older daemon, or the link is down (the next subscription carries it).
            log.debug("could not tell the daemon interactive=%s: %s", on, exc)

    async def close(self) -> None:
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        self._drop_callbacks()
        await self._client.close()

    # --- the feed ------

    def _drop_callbacks(self) -> None:
        for remove in self._unsubscribe:
            remove()
        self._unsubscribe.clear()

    async def _start_feed(self, since: int | None) -> None:
        self._drop_callbacks()
        self._early = []
        self._parts = {}
        self._parts_wanted = None
        self._parts_done = asyncio.get_running_loop().create_future()
        self._unsubscribe.append(self._client.on_push("event", self._on_push_event))
        self._unsubscribe.append(self._client.on_push("snapshot", self._on_push_snapshot))
        self._unsubscribe.append(self._client.on_push("notice", self._on_push_notice))
        self._unsubscribe.append(self._client.on_push("machines", self._on_push_machines))
        try:
            params = {"since": since, "interactive": self._interactive}
            result = await self.call(Method.SUBSCRIBE, params)
            registry = await self._snapshot_of(result)
        except BaseException:
            self._early = None
            raise
        listener = self._listener
        assert listener is not None
        if registry is not None:
            self._seq = int(result["seq"])
            registry.seq = self._seq
            listener.on_snapshot(registry, self._seq)
        early, self._early = self._early, None
        for payload in early:
            self._deliver(payload)

    async def _snapshot_of(self, result: Any) -> Registry | None:
        """The registry a subscribe reply carries: inline, or as ``snapshot`` pushes."""
        if not isinstance(result, dict):
            return None
        if "registry" in result:  # docs/ipc.md's form
            return registry_from_builtins(result["registry"])
        count = result.get("snapshot_parts")
        if not isinstance(count, int):
            return None  # a replay: events follow
        self._parts_wanted = count
        if count == 0:
            return Registry()
        self._check_parts()
        done = self._parts_done
        assert done is not None
        try:
            async with asyncio.timeout(SNAPSHOT_TIMEOUT):
                text = await done
        except TimeoutError:
            raise LinkError(
                f"the daemon announced a snapshot in {count} parts but sent "
                f"{len(self._parts)} within {SNAPSHOT_TIMEOUT:g} s; reconnecting"
            ) from None
        try:
            return decode_registry(text.encode())
        except CodecError as exc:
            raise LinkError(f"the daemon's registry snapshot cannot be read: {exc}") from exc

    def _on_push_snapshot(self, payload: dict[str, Any]) -> None:
        part, data = payload.get("part"), payload.get("data")
        if isinstance(part, int) and isinstance(data, str):
            self._parts[part] = data
            self._check_parts()

    def _check_parts(self) -> None:
        wanted = self._parts_wanted
        done = self._parts_done
        if (
            done is not None
            and wanted is not None
            and len(self._parts) >= wanted
            and not done.done()
        ):
            done.set_result("".join(self._parts[i] for i in range(wanted)))

    def _on_push_event(self, payload: dict[str, Any]) -> None:
        if self._early is not None:
            self._early.append(payload)
        else:
            self._deliver(payload)

    def _on_push_machines(self, payload: dict[str, Any]) -> None:
        if self._listener is not None:
            self._listener.on_machines(payload)

    def _on_push_notice(self, payload: dict[str, Any]) -> None:
        if self._listener is not None:
            self._listener.on_notice(payload)

    def _deliver(self, payload: dict[str, Any]) -> None:
        listener = self._listener
        if listener is None:
            return
        seq = payload.get("seq")
        data = payload.get("event")
        if not isinstance(seq, int) or not isinstance(data, dict):
            log.warning("ignored a malformed event push: %r", payload)
            return
        if self._seq is not None and seq <= self._seq:
            return  # a replay overlapping what we have
        try:
            event = event_from_dict(data)
        except CodecError as exc:
            # A newer daemon's event type: skip it but keep the numbering.
            log.warning("ignored event %d the app cannot read: %s", seq, exc)
            self._seq = seq
            return
        self._seq = seq
        listener.on_event(seq, event)

    async def _watch_connection(self) -> None:
        while not self._closed:
            await self._client.closed.wait()
            if self._closed:
                return
            self._drop_callbacks()
            if self._listener is not None:
                self._listener.on_connection(False, "lost the connection to the volee daemon")
            await self._reconnect()

    async def _reconnect(self) -> None:
        if self._reconnect_factory is None:
            return
        attempt = 0
        while not self._closed:
            delay = RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]
            await asyncio.sleep(delay)
            attempt += 1
            try:
                self._client = await self._reconnect_factory()
                try:
                    await self._start_feed(self._seq)
                except LinkError as exc:
                    # The daemon cannot replay from there (a new log, say): start afresh.
                    log.info("resume after %s refused (%s); taking a snapshot", self._seq, exc)
                    await self._start_feed(None)
            except Exception as exc:
                log.debug("reconnect attempt %d failed: %s", attempt, exc)
                continue
            if self._listener is not None:
                self._listener.on_connection(True, "connected again")
            log.info("reconnected to the daemon; feed resumed after seq %s", self._seq)
            return

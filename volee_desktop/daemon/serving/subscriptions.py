"""``subscribe``: a snapshot (or a replay from a seq), then every event as it becomes durable.

A connection of an interactive client (someone looks at the tray's list or an agent window;
``subscribe.interactive`` turns it on and off) counts in ``Clients`` until it closes:
discovery lists at once for a new one and keeps its short cadence meanwhile (the seed's
cadence; while its watches work, discovery lists only when they saw something).

The other machines' agents (docs/machines.md) are not events of this daemon's log: each
feed also gets a ``machines`` push, at its start when there are machines and again after
every change of a link (coalesced; each carries only what changed since that feed's last
push: machines/feed.py), so the app shows them without polling (D8).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Annotated, Any, NotRequired, TypedDict

from msgspec import Meta

from ...core.events import Event
from ...ipc.methods import Method
from ...ipc.protocol import ErrorCode, IpcError
from ...ipc.server import Connection, MethodTable, Reply
from ...store.codec import encode_registry, event_to_dict
from ...store.errors import Compacted
from ..context import Clients, Tasks
from ..params import Parameters, decoder
from ..service import Service

log = logging.getLogger(__name__)

MAX_QUEUED_PUSHES = 50_000
# In characters: one may take 4 bytes in UTF-8 (or 2 escaped), so a part stays under 1 MiB.
SNAPSHOT_PART = 192 * 1024


class InteractiveParams(Parameters, frozen=True, kw_only=True):
    """``subscribe.interactive``: whether someone looks at what the client shows."""

    interactive: bool = True


class SubscribeParams(InteractiveParams, frozen=True, kw_only=True):
    """``subscribe``: from the log position ``since`` (a replay), else from a snapshot."""

    since: Annotated[int, Meta(ge=0)] | None = None


class Subscribed(TypedDict):
    """``subscribe``: where the feed starts; the registry follows in ``snapshot_parts``
    pushes, or (``replay``) the events after ``since`` do."""

    seq: int
    snapshot_parts: NotRequired[int]
    replay: NotRequired[bool]


class Interactive(TypedDict):
    """``subscribe.interactive``: what this client now says."""

    interactive: bool


class Subscriptions:
    """The feeds of the connections that subscribed."""

    def __init__(
        self,
        service: Service,
        tasks: Tasks,
        clients: Clients,
        config_problems: list[str],
        methods: MethodTable,
        unconfirmed: Callable[[], list[str]] = list,
        machines: Callable[[], Callable[[], dict[str, Any] | None]] = lambda: lambda: None,
        base: Callable[[], int] = int,
    ) -> None:
        self.service = service
        self.tasks = tasks
        self.clients = clients
        self.config_problems = config_problems
        #: Why settings of config.toml that lower safety are not in force (serving/safety.py).
        self.unconfirmed = unconfirmed
        # The feed of each connection: a new subscribe replaces it (the app resyncs that way).
        self._feeds: weakref.WeakKeyDictionary[Connection, asyncio.Task[Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._interactive: weakref.WeakSet[Connection] = weakref.WeakSet()
        #: Makes a feed's ``machines`` pushes: each call of what it makes is the next push, or
        #: None when nothing changed since that feed's last one (machines/feed.py).
        self.machines = machines
        #: The seq of a compacted log's base: below it the log has holes (store/compaction.py).
        self.base = base
        # Each feed's flag "the machines changed since the last machines push".
        self._machines_dirty: weakref.WeakKeyDictionary[Connection, asyncio.Event] = (
            weakref.WeakKeyDictionary()
        )
        methods.add(Method.SUBSCRIBE, self.subscribe, decoder(SubscribeParams))
        methods.add(
            Method.SUBSCRIBE_INTERACTIVE, self.subscribe_interactive, decoder(InteractiveParams)
        )

    async def subscribe(self, conn: Connection, params: SubscribeParams) -> Reply[Subscribed]:
        since = params.since
        base = self.base()
        if since is not None and since < base:
            # Below the base the log has holes: no replay from there, not even a partial one.
            # Refused like a seq beyond the log, so a client subscribes afresh (a snapshot).
            raise IpcError(
                ErrorCode.CONFLICT,
                f"since={since} is below the event log's base (seq {base}): it was compacted "
                f"and the events up to {base} are no longer all kept; subscribe afresh "
                f"(since null, a snapshot) or from seq {base} or later",
            )
        interactive = params.interactive
        service = self.service
        queue: asyncio.Queue[tuple[int, Event]] = asyncio.Queue()

        def on_event(seq: int, event: Event) -> None:
            # The server runs ``after`` only once the reply is written: a client gone before
            # that would otherwise leave this listener behind for good.
            if conn.closed.is_set():
                remove()
                return
            if queue.qsize() >= MAX_QUEUED_PUSHES:
                log.warning("subscriber %r does not keep up; disconnecting it", conn)
                conn.close()
                return
            queue.put_nowait((seq, event))

        remove = service.listen(on_event)
        registry = service.registry
        upto = registry.seq
        parts: list[str] = []
        if since is None:
            # A big registry would not fit in one 1 MiB message: it follows as "snapshot" pushes.
            text = encode_registry(registry).decode()
            parts = [text[i : i + SNAPSHOT_PART] for i in range(0, len(text), SNAPSHOT_PART)]
            result: Subscribed = {"seq": upto, "snapshot_parts": len(parts)}
        else:
            if since > upto:
                remove()
                raise IpcError(
                    ErrorCode.CONFLICT,
                    f"since={since} is beyond this daemon's log ({upto}); subscribe afresh",
                )
            result = {"seq": since, "replay": True}

        async def pump() -> None:
            try:
                for index, part in enumerate(parts):
                    if not await conn.push("snapshot", {"part": index, "data": part}):
                        return
                problems = self.config_problems
                if problems:
                    text = (
                        f"config.toml has {len(problems)} problem(s); the defaults are used "
                        f"for those keys: {'; '.join(problems)}"
                    )
                    notice = {"kind": "config-problems", "problems": problems, "text": text}
                    if not await conn.push("notice", notice):
                        return
                held = self.unconfirmed()
                if held:
                    notice = {
                        "kind": "config-unconfirmed",
                        "problems": held,
                        "text": "; ".join(held),
                    }
                    if not await conn.push("notice", notice):
                        return
                last = upto if since is None else since
                if since is not None:
                    backlog = await asyncio.to_thread(lambda: list(service.events_after(since)))
                    for seq, event in backlog:
                        if seq > upto:
                            break
                        if not await self._push_event(conn, seq, event):
                            return
                        last = seq
                while True:
                    seq, event = await queue.get()
                    if seq <= last:
                        continue
                    if not await self._push_event(conn, seq, event):
                        return
                    last = seq
            except Compacted as exc:
                # Compacted beyond ``since`` after the check above: it resubscribes, refused.
                log.info("a feed's replay met a compaction (%s); dropping it", exc)
                conn.close()
            except Exception:
                # The client would wait for ever with a gap: drop it, so that it reconnects.
                conn.close()
                raise
            finally:
                remove()

        async def watch_close() -> None:
            try:
                await conn.wait_closed()
            finally:
                remove()

        def after() -> None:
            # Two feeds on one connection would push every event twice: end the older one
            # (its closer's cleanup runs and cancels its pump before it can push again).
            older = self._feeds.pop(conn, None)
            if older is not None:
                older.cancel()
            self.set_interactive(conn, interactive)
            task = self.tasks.spawn(pump(), "subscription")
            dirty = asyncio.Event()
            self._machines_dirty[conn] = dirty
            machines = self.tasks.spawn(self._push_machines(conn, dirty), "subscription-machines")
            closer = self.tasks.spawn(watch_close(), "subscription-close")
            closer.add_done_callback(lambda _t: (task.cancel(), machines.cancel()))
            self._feeds[conn] = closer

        return Reply(result, after=after)

    def machines_changed(self) -> None:
        """A link to another machine changed: every feed pushes ``machines`` soon."""
        for dirty in list(self._machines_dirty.values()):
            dirty.set()

    async def _push_machines(self, conn: Connection, dirty: asyncio.Event) -> None:
        """Push the machines whenever they changed (and once at the start, if any)."""
        pushes = self.machines()
        try:
            dirty.set()  # the first push: every machine, whole (none: nothing is pushed)
            while True:
                await dirty.wait()
                dirty.clear()
                await asyncio.sleep(0)  # coalesce what changes in the same turn of the loop
                dirty.clear()
                push = pushes()
                if push is not None and not await conn.push("machines", push):
                    return
        finally:
            if self._machines_dirty.get(conn) is dirty:
                del self._machines_dirty[conn]

    async def subscribe_interactive(
        self, conn: Connection, params: InteractiveParams
    ) -> Interactive:
        """Whether someone looks at what this client shows (the tray's list or an agent
        window is open): discovery lists at once and keeps its short cadence meanwhile."""
        on = params.interactive
        self.set_interactive(conn, on)
        return {"interactive": on}

    def set_interactive(self, conn: Connection, on: bool) -> None:
        """Count ``conn`` as an interactive client or not, until it closes."""
        if on == (conn in self._interactive):
            return
        if not on:
            self._interactive.discard(conn)
            self.clients.left()
            return
        self._interactive.add(conn)
        self.clients.joined()

        async def until_closed() -> None:
            await conn.wait_closed()
            self.set_interactive(conn, False)

        self.tasks.spawn(until_closed(), "interactive-close")

    async def _push_event(self, conn: Connection, seq: int, event: Event) -> bool:
        return await conn.push("event", {"seq": seq, "event": event_to_dict(event)})

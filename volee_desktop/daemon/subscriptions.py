"""``subscribe``: a snapshot (or a replay from a seq), then every event as it becomes durable.

A connection of an interactive client (someone looks at the tray's list or an agent window;
``subscribe.interactive`` turns it on and off) counts in ``Clients`` until it closes:
discovery lists at once for a new one and keeps its short cadence meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

from ..core.events import Event
from ..ipc.protocol import ErrorCode, IpcError
from ..ipc.server import Connection, MethodTable, Reply
from ..store.codec import encode_registry, event_to_dict
from .context import Clients, Tasks
from .params import flag, seq
from .service import Service

log = logging.getLogger(__name__)

MAX_QUEUED_PUSHES = 50_000
# In characters: one may take 4 bytes in UTF-8 (or 2 escaped), so a part stays under 1 MiB.
SNAPSHOT_PART = 192 * 1024


class Subscriptions:
    """The feeds of the connections that subscribed."""

    def __init__(
        self,
        service: Service,
        tasks: Tasks,
        clients: Clients,
        config_problems: list[str],
        methods: MethodTable,
    ) -> None:
        self.service = service
        self.tasks = tasks
        self.clients = clients
        self.config_problems = config_problems
        # The feed of each connection: a new subscribe replaces it (the app resyncs that way).
        self._feeds: weakref.WeakKeyDictionary[Connection, asyncio.Task[Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._interactive: weakref.WeakSet[Connection] = weakref.WeakSet()
        methods.add("subscribe", self.subscribe)
        methods.add("subscribe.interactive", self.subscribe_interactive)

    async def subscribe(self, conn: Connection, params: dict[str, Any]) -> Any:
        since = seq(params, "since")
        interactive = flag(params, "interactive", True)
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
            result: dict[str, Any] = {"seq": upto, "snapshot_parts": len(parts)}
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
            closer = self.tasks.spawn(watch_close(), "subscription-close")
            closer.add_done_callback(lambda _t: task.cancel())
            self._feeds[conn] = closer

        return Reply(result, after=after)

    async def subscribe_interactive(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Whether someone looks at what this client shows (the tray's list or an agent
        window is open): discovery lists at once and keeps its short cadence meanwhile."""
        on = flag(params, "interactive", True)
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

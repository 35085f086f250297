"""The daemon's IPC methods (docs/ipc.md): thin handlers over the service and the runners."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.events import Event
from ..ipc.protocol import MAX_MESSAGE, ErrorCode, IpcError
from ..ipc.server import Connection, Reply
from ..store.codec import decode_event, encode_registry, event_to_dict
from .errors import Ambiguous, Broken, NotFound, Refused
from .timeline import timeline
from .views import agent_view, listed, resolve_agent

if TYPE_CHECKING:
    from .main import Daemon

log = logging.getLogger(__name__)

Method = Callable[[Connection, dict[str, Any]], Awaitable[Any]]
MAX_QUEUED_PUSHES = 50_000
# In characters: one may take 4 bytes in UTF-8 (or 2 escaped), so a part stays under 1 MiB.
SNAPSHOT_PART = 192 * 1024
# A timeline reply must fit in one message (with room for the envelope).
TIMELINE_BUDGET = MAX_MESSAGE - 64 * 1024


def _str(params: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = params.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} must be a non-empty string")
    return value


def _bool(params: dict[str, Any], key: str, default: bool) -> bool:
    value = params.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise IpcError(
            ErrorCode.BAD_REQUEST, f"parameter {key!r} must be true or false, not {value!r}"
        )
    return value


def _fit_timeline(items: list[dict[str, Any]], agent_id: str) -> list[dict[str, Any]]:
    """The newest items that fit in one reply, after a marker saying how many were left out.

    A long-lived agent has more events than one message holds; failing with too_large would
    make its timeline unreadable for good.
    """
    sizes = [len(json.dumps(item, ensure_ascii=False).encode()) + 1 for item in items]
    total = sum(sizes)
    if total <= TIMELINE_BUDGET:
        return items
    start = 0
    while total > TIMELINE_BUDGET:
        total -= sizes[start]
        start += 1
    marker = {
        "seq": items[start - 1]["seq"],
        "at": items[start - 1]["at"],
        "type": "timeline-truncated",
        "agent": agent_id,
        "text": f"{start} earlier events left out (more than one reply holds); the newest follow",
    }
    return [marker, *items[start:]]


class Api:
    """The method table; errors of the daemon are mapped to stable codes here."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        # The feed of each connection: a new subscribe replaces it (the app resyncs that way).
        self._feeds: weakref.WeakKeyDictionary[Connection, asyncio.Task[Any]] = (
            weakref.WeakKeyDictionary()
        )
        # The connections of interactive clients (someone looks at the list): discovery keeps
        # its short cadence while there is one.
        self._interactive: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.methods: dict[str, Method] = {
            "agents.list": self.agents_list,
            "agents.get": self.agents_get,
            "agents.timeline": self.agents_timeline,
            "hook": self.hook,
            "subscribe": self.subscribe,
            "subscribe.interactive": self.subscribe_interactive,
            "daemon.status": self.daemon_status,
            "daemon.stop": self.daemon_stop,
        }

    def add(self, name: str, method: Method) -> None:
        """Register another method (runners add theirs)."""
        self.methods[name] = method

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        fn = self.methods.get(method)
        if fn is None:
            raise IpcError(
                ErrorCode.UNKNOWN_METHOD,
                f"unknown method {method!r}; this daemon ({__version__}) knows: "
                + ", ".join(sorted(self.methods)),
            )
        try:
            return await fn(conn, params)
        except NotFound as exc:
            raise IpcError(ErrorCode.NOT_FOUND, str(exc)) from exc
        except Ambiguous as exc:
            raise IpcError(ErrorCode.AMBIGUOUS, str(exc)) from exc
        except Refused as exc:
            raise IpcError(ErrorCode.REFUSED, str(exc)) from exc
        except Broken as exc:
            raise IpcError(ErrorCode.UNAVAILABLE, str(exc)) from exc

    # --- agents ----------------------------------------------------------------------------

    async def agents_list(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.daemon.service.registry
        return [agent_view(a) for a in listed(registry, _bool(params, "all", False))]

    async def agents_get(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.daemon.service.registry
        return agent_view(resolve_agent(registry, _str(params, "agent") or ""))

    async def agents_timeline(self, _conn: Connection, params: dict[str, Any]) -> Any:
        registry = self.daemon.service.registry
        ref = _str(params, "agent") or ""
        try:
            agent_id = resolve_agent(registry, ref).id
        except NotFound:
            if ref in registry.names:
                agent_id = ref  # a forgotten agent's timeline is still readable
            else:
                raise
        return await asyncio.to_thread(self._timeline, agent_id)

    def _timeline(self, agent_id: str) -> list[dict[str, Any]]:
        needle = agent_id.encode()
        entries = (
            (r.seq, decode_event(r.type, r.version, r.payload))
            for r in self.daemon.log.read(0)
            if needle in r.payload
        )
        items = timeline(entries, agent_id, self.daemon.service.registry.name_of)
        return _fit_timeline(items, agent_id)

    # --- hooks -----------------------------------------------------------------------------

    async def hook(self, _conn: Connection, params: dict[str, Any]) -> Any:
        return await self.daemon.intake.hook(params)

    # --- subscription ----------------------------------------------------------------------

    async def subscribe(self, conn: Connection, params: dict[str, Any]) -> Any:
        since = params.get("since")
        # bool is an int in Python: ``since: true`` must not pass for seq 1.
        if since is not None and (
            not isinstance(since, int) or isinstance(since, bool) or since < 0
        ):
            raise IpcError(
                ErrorCode.BAD_REQUEST,
                f"parameter 'since' must be a seq (int >= 0) or null, not {since!r}",
            )
        interactive = _bool(params, "interactive", True)
        service = self.daemon.service
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
                problems = self.daemon.facts.config_problems
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
            task = self.daemon.spawn_task(pump(), "subscription")
            closer = self.daemon.spawn_task(watch_close(), "subscription-close")
            closer.add_done_callback(lambda _t: task.cancel())
            self._feeds[conn] = closer

        return Reply(result, after=after)

    async def subscribe_interactive(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Whether someone looks at what this client shows (the tray's list or an agent
        window is open): discovery lists at once and keeps its short cadence meanwhile."""
        on = _bool(params, "interactive", True)
        self.set_interactive(conn, on)
        return {"interactive": on}

    def set_interactive(self, conn: Connection, on: bool) -> None:
        """Count ``conn`` as an interactive client or not, until it closes."""
        if on == (conn in self._interactive):
            return
        if not on:
            self._interactive.discard(conn)
            if self.daemon.on_interactive_end is not None:
                self.daemon.on_interactive_end()
            return
        self._interactive.add(conn)
        # Discovery lists at once for a new interactive client and knows when none is left.
        if self.daemon.on_interactive is not None:
            self.daemon.on_interactive()

        async def until_closed() -> None:
            await conn.wait_closed()
            self.set_interactive(conn, False)

        self.daemon.spawn_task(until_closed(), "interactive-close")

    async def _push_event(self, conn: Connection, seq: int, event: Event) -> bool:
        return await conn.push("event", {"seq": seq, "event": event_to_dict(event)})

    # --- daemon ----------------------------------------------------------------------------

    async def daemon_status(self, _conn: Connection, _params: dict[str, Any]) -> Any:
        d = self.daemon
        registry = d.service.registry
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": d.started_at,
            "startup_seconds": d.facts.seconds,
            "socket": str(d.dirs.socket),
            "events_db": str(d.dirs.events_db),
            "seq": registry.seq,
            "agents": len(registry.agents),
            "live_agents": sum(1 for a in registry.agents.values() if a.state.live),
            "snapshot_seq": d.facts.snapshot_seq,
            "replayed": d.facts.replayed,
            "spooled": d.facts.spooled,
            "hooks_accepted": d.intake.accepted,
            "hooks_rejected": d.intake.rejected_count,
            "broken": d.service.broken,
            "config_problems": d.facts.config_problems,
            "extra": {name: fn() for name, fn in d.status_parts.items()},
        }

    async def daemon_stop(self, _conn: Connection, _params: dict[str, Any]) -> Any:
        return Reply({"stopping": True}, after=self.daemon.request_stop)

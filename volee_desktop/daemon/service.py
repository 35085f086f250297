"""The service: validate -> append (durable, group commit) -> apply -> notify, in that order.

Requests validate against a *working* registry that already holds every event
accepted but not yet durable, so concurrent requests can share one
transaction of the log.  Only once the log says a batch is durable is it
applied to the visible registry and sent to subscribers, in log order.  A
failure to write the log makes the service refuse further writes (fail-stop):
the in-memory state can no longer be trusted to match the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol

from ..core.events import Event
from ..core.registry import Registry
from ..store.codec import decode_event, encode_event
from .errors import Broken, Refused

log = logging.getLogger(__name__)

Listener = Callable[[int, Event], None]


class StoredLike(Protocol):
    """A record read back from the log."""

    seq: int
    type: str
    version: int
    payload: bytes


class LogLike(Protocol):
    """What the service needs of the event log (``store.log.EventLog`` or ``MemoryLog``)."""

    def append(self, records: Sequence[Any], key: str | None = None) -> Awaitable[list[int]]: ...

    def read(self, after: int = 0) -> Iterator[Any]: ...

    def last_seq(self) -> int: ...

    def has_key(self, key: str) -> bool: ...


RecordFactory = Callable[[str, int, bytes], Any]


class Service:
    """The single writer: owns the registry and the order of events."""

    def __init__(self, log: LogLike, registry: Registry, record: RecordFactory) -> None:
        self._log = log
        self.registry = registry
        self._work: Registry | None = None
        self._record = record
        self._listeners: list[Listener] = []
        self._inflight = 0
        self._keys: set[str] = set()
        self.broken: str | None = None

    # --- subscriptions ---------------------------------------------------------------------

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(seq, event)`` after each event is durable and applied."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def current(self) -> Registry:
        """The registry with every accepted event, durable or not (for decisions)."""
        return self._work if self._work is not None else self.registry

    # --- writing ---------------------------------------------------------------------------

    def check(self, events: Sequence[Event]) -> str | None:
        """Why the batch would be refused now (against the working registry), or None."""
        work = (self._work or self.registry).fork()
        for event in events:
            problem = work.validate(event)
            if problem:
                return f"{event.TYPE}: {problem}"
            work.apply(event)
        return None

    async def commit(self, events: Sequence[Event], *, key: str | None = None) -> list[int]:
        """Make ``events`` durable and visible, all or nothing; raise Refused with the reason."""
        if not events:
            return []
        if self.broken:
            raise Broken(self.broken)
        if key is not None and (key in self._keys or self._log.has_key(key)):
            return []
        base = self._work if self._work is not None else self.registry
        work = base.fork() if len(events) > 1 or self._work is None else base
        for event in events:
            problem = work.validate(event)
            if problem:
                raise Refused(f"{event.TYPE}: {problem}")
            work.apply(event)
        self._work = work
        records = [self._record(*encode_event(event)) for event in events]
        self._inflight += 1
        if key is not None:
            self._keys.add(key)
        appended = self._log.append(records, key)
        future = asyncio.ensure_future(appended)
        future.add_done_callback(lambda f: self._durable(f, events, key))
        try:
            return await asyncio.shield(future)
        except Broken:
            raise
        except Exception as exc:
            raise Broken(self.broken or f"the event log failed: {exc}") from exc

    def _durable(
        self, future: asyncio.Future[list[int]], events: Sequence[Event], key: str | None
    ) -> None:
        # Done callbacks run in the order the log resolved the futures: the log's order.
        self._inflight -= 1
        if key is not None:
            self._keys.discard(key)
        if future.cancelled() or future.exception() is not None:
            exc = future.exception() if not future.cancelled() else None
            self.broken = f"the event log failed ({exc}); restart the daemon"
            log.critical("event log write failed; refusing further writes: %s", exc)
            return
        seqs = future.result()
        for seq, event in zip(seqs, events, strict=True):
            self.registry.apply(event)
            self.registry.seq = seq
            for listener in list(self._listeners):
                try:
                    listener(seq, event)
                except Exception:
                    log.exception("listener failed on %s", event.TYPE)
        if self._inflight == 0:
            self._work = None
        elif self._work is not None:
            self._work.seq = self.registry.seq

    # --- reading ---------------------------------------------------------------------------

    def events_after(self, seq: int) -> Iterator[tuple[int, Event]]:
        """Durable events after ``seq``, from the log."""
        for stored in self._log.read(seq):
            yield stored.seq, decode_event(stored.type, stored.version, stored.payload)


def replay(registry: Registry, records: Iterator[Any]) -> Registry:
    """Apply stored records in order (start-up)."""
    for stored in records:
        registry.apply(decode_event(stored.type, stored.version, stored.payload))
        registry.seq = stored.seq
    return registry


__all__ = ["LogLike", "Refused", "Service", "replay"]

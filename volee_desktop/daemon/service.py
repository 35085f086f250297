"""The service: validate -> append (durable, group commit) -> apply -> notify, in that order.

Requests validate against a *working* registry that already holds every event
accepted but not yet durable, so concurrent requests can share one
transaction of the log.  Only once the log says a batch is durable is it
applied to the visible registry and sent to subscribers, in log order.  A
failure to write the log makes the service refuse further writes (fail-stop):
the in-memory state can no longer be trusted to match the log.  A write that failed
cleanly (``WriteFailed``: rolled back, e.g. a full disk) is not such a failure: the
requests in flight fail with it (they may rest on it), and once none is left the working
registry is dropped, the log resumes and a retry works (docs/faults.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..core.events import Event
from ..core.registry import Registry
from ..store.codec import decode_event, encode_event
from ..store.errors import WriteFailed
from ..store.records import Log, Record, StoredRecord
from .errors import Broken, NotWritten, Refused

log = logging.getLogger(__name__)

Listener = Callable[[int, Event], None]


RecordFactory = Callable[[str, int, bytes], Record]


class Service:
    """The single writer: owns the registry and the order of events."""

    def __init__(self, log: Log, registry: Registry, record: RecordFactory) -> None:
        self._log = log
        self.registry = registry
        self._work: Registry | None = None
        self._record = record
        self._listeners: list[Listener] = []
        self._pending: deque[tuple[asyncio.Future[list[int]], Sequence[Event], str | None]] = (
            deque()
        )
        self._keys: set[str] = set()
        self.broken: str | None = None
        # Set by a write that failed cleanly; cleared once nothing is in flight any more.
        self.failing: str | None = None

    # --- subscriptions ---------------------------------------------------------------------

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(seq, event)`` after each event is durable and applied."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    @property
    def listener_count(self) -> int:
        """How many listeners are attached (subscriptions come and go)."""
        return len(self._listeners)

    def has_committed(self, key: str) -> bool:
        """Whether a commit with this idempotency key is durable (a payload taken already)."""
        return self._log.has_key(key)

    def current(self) -> Registry:
        """The registry with every accepted event, durable or not (for decisions)."""
        return self._work if self._work is not None else self.registry

    # --- writing ---------------------------------------------------------------------------

    async def commit(self, events: Sequence[Event], *, key: str | None = None) -> list[int]:
        """Make ``events`` durable and visible, all or nothing; raise Refused with the reason."""
        if not events:
            return []
        if self.broken:
            raise Broken(self.broken)
        if self.failing is not None:
            if self._pending:
                raise NotWritten(self.failing)
            # Everything decided on the failed writes has failed too: start afresh.
            self.failing = None
            self._log.resume()
        if key is not None and key in self._keys:
            # The same key is on its way to the log: answer once it is durable, not before.
            for pending, _events, pending_key in list(self._pending):
                if pending_key == key:
                    try:
                        await asyncio.shield(pending)
                    except Exception as exc:
                        self._drain()
                        raise self._failure(exc) from exc
                    break
            return []
        if key is not None and self._log.has_key(key):
            return []
        base = self._work if self._work is not None else self.registry
        work = base.fork() if len(events) > 1 or self._work is None else base
        for event in events:
            problem = work.validate(event)
            if problem:
                raise Refused(f"{event.TYPE}: {problem}")
            work.apply(event)
        records = [self._record(*encode_event(event)) for event in events]
        try:
            appended = self._log.append(records, key)
        except Exception as exc:
            # Refused at once (the log is closed or its writer died): ``work`` may hold the
            # events already, so the working registry cannot be trusted any more (fail-stop).
            self.broken = (
                self.broken or f"the event log refused a write ({exc}); restart the daemon"
            )
            log.critical("event log refused a write; refusing further writes: %s", exc)
            if not self._pending:
                self._work = None
            raise Broken(self.broken) from exc
        self._work = work
        if key is not None:
            self._keys.add(key)
        future = asyncio.ensure_future(appended)
        self._pending.append((future, events, key))
        future.add_done_callback(lambda _f: self._drain())
        try:
            await asyncio.shield(future)
        except Exception as exc:
            self._drain()
            raise self._failure(exc) from exc
        # The done callback may not have run yet (an already-resolved future): apply now, so
        # that a request returns only once its events are visible.
        self._drain()
        if self.broken and not future.cancelled() and future.exception() is not None:
            raise Broken(self.broken)
        return future.result()

    def _failure(self, exc: BaseException) -> Broken:
        if self.broken:
            return Broken(self.broken)
        if isinstance(exc, WriteFailed):
            return NotWritten(str(exc))
        return Broken(_broken_words(exc))

    def _drain(self) -> None:
        """Apply, in log order, every batch at the head of the queue that is durable."""
        while self._pending and self._pending[0][0].done():
            future, events, key = self._pending.popleft()
            if key is not None:
                self._keys.discard(key)
            exc = None if future.cancelled() else future.exception()
            if isinstance(exc, WriteFailed) and not self.broken:
                # Rolled back: nothing of it is in the log, so nothing to undo in ``registry``.
                if self.failing is None:
                    log.error("event log write failed; refusing writes until none is left: %s", exc)
                self.failing = str(exc)
                continue
            if future.cancelled() or exc is not None:
                if not self.broken:
                    self.broken = _broken_words(exc)
                    log.critical("event log write failed; refusing further writes: %s", exc)
                continue
            if self.broken:
                continue
            if self.failing is not None:
                # Durable, but decided on writes that failed: memory and log may disagree.
                self.broken = (
                    "the event log took a write that rested on a failed one; restart the daemon"
                )
                log.critical("%s", self.broken)
                continue
            for seq, event in zip(future.result(), events, strict=True):
                self.registry.apply(event)
                self.registry.seq = seq
                for listener in list(self._listeners):
                    try:
                        listener(seq, event)
                    except Exception:
                        log.exception("listener failed on %s", event.TYPE)
        if not self._pending:
            self._work = None

    # --- reading ---------------------------------------------------------------------------

    def events_after(self, seq: int) -> Iterator[tuple[int, Event]]:
        """Every durable event after ``seq``, from the log; ``Compacted`` (store/integrity.py)
        when the log is compacted beyond ``seq`` (some of them are gone)."""
        for stored in self._log.read(seq, whole=True):
            yield stored.seq, decode_event(stored.type, stored.version, stored.payload)


def _broken_words(exc: BaseException | None) -> str:
    """What to tell callers once the log failed: its own words when they say what to do."""
    text = str(exc)
    if "restart the daemon" in text.lower():
        return text
    return f"the event log failed ({text}); restart the daemon"


def replay(registry: Registry, records: Iterable[StoredRecord]) -> Registry:
    """Apply stored records in order (start-up)."""
    for stored in records:
        registry.apply(decode_event(stored.type, stored.version, stored.payload))
        registry.seq = stored.seq
    return registry


__all__ = ["Refused", "Service", "replay"]

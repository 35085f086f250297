"""The asyncio IPC client, for the tray app, the MCP server and tests.

Calls may run concurrently on one connection: each gets a fresh id and its
reply is matched by id.  Pushes are routed by subscription name to local
``Subscription`` iterators or callbacks.  Register the local subscription
*before* the call that starts the pushes: the server sends the first push right
after the reply, and a push nobody listens for is dropped::

    async with client.subscribe("changes") as changes:
        snapshot = await client.call("watch")
        async for change in changes:
            ...
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from volee_desktop.ipc.client import DEFAULT_TIMEOUT, check_request_size, default_socket
from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    OVERSIZED,
    CallTimeout,
    DaemonUnavailable,
    ErrorCode,
    IpcError,
    LineBuffer,
    Push,
    decode_reply_or_push,
    encode_request,
)
from volee_desktop.ipc.transport import Transport, default_transport

log = logging.getLogger(__name__)

_READ_CHUNK = 64 * 1024
DEFAULT_MAX_QUEUED = 10_000

PushCallback = Callable[[dict[str, Any]], None]


class Subscription:
    """The pushes of one name, as an async iterator of payloads (``async with`` to end it)."""

    def __init__(self, client: AsyncClient, name: str, max_queued: int) -> None:
        self._client = client
        self.name = name
        self.max_queued = max_queued
        self._items: deque[dict[str, Any]] = deque()
        self._wake = asyncio.Event()
        self._done = False
        self._error: IpcError | None = None
        self._dropped = 0

    def _put(self, payload: dict[str, Any]) -> None:
        if self._done:
            return
        if len(self._items) >= self.max_queued:
            self._dropped += 1
        else:
            self._items.append(payload)
        self._wake.set()

    def _end(self, error: IpcError | None) -> None:
        if not self._done:
            self._done = True
            self._error = error
            self._wake.set()

    def close(self) -> None:
        """Stop receiving; iteration ends after what is queued."""
        self._client._unsubscribe(self)
        self._end(None)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while True:
            if self._items:
                return self._items.popleft()
            if self._dropped:
                dropped, self._dropped = self._dropped, 0
                raise IpcError(
                    ErrorCode.UNAVAILABLE,
                    f"subscription {self.name!r} fell behind and lost {dropped} pushes "
                    f"(more than {self.max_queued} queued); read faster or subscribe again",
                )
            if self._done:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """An asyncio connection to the daemon: concurrent calls, routed pushes."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: Path
    ) -> None:
        self.path = path
        self._reader = reader
        self._writer = writer
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._subs: dict[str, list[Subscription]] = {}
        self._callbacks: dict[str, list[PushCallback]] = {}
        self._next_id = 1
        self._closing = False
        self.closed = asyncio.Event()
        self._lost: DaemonUnavailable | None = None
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(
        cls,
        path: Path | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        transport: Transport | None = None,
    ) -> AsyncClient:
        """Connect to the daemon at ``path``; raise DaemonUnavailable when nothing listens."""
        address = default_socket() if path is None else path
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await (transport or default_transport()).open(address)
        except TimeoutError as exc:
            raise CallTimeout(
                f"the volee daemon at {address} did not accept within {timeout}s; "
                "check `volee daemon status`"
            ) from exc
        return cls(reader, writer, address)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Call ``method``; the result, or IpcError from an error reply."""
        if self._lost is not None:
            raise self._lost
        if self._closing:
            raise DaemonUnavailable(f"this connection to {self.path} is closed; connect again")
        request_id = self._next_id
        self._next_id += 1
        data = encode_request(request_id, method, params)
        check_request_size(data, method)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._writer.write(data)
            await self._writer.drain()
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError as exc:
            raise CallTimeout(
                f"the volee daemon did not answer {method!r} within {timeout}s; "
                "it may be busy or stuck: check `volee daemon status`"
            ) from exc
        except ConnectionError as exc:
            raise self._connection_lost(str(exc)) from exc
        finally:
            self._pending.pop(request_id, None)
            if future.done() and not future.cancelled():
                # Failed by the read loop's end while the write was still draining: that
                # failure is the one raised here, not one for the loop to log as lost.
                future.exception()

    def subscribe(self, name: str, *, max_queued: int = DEFAULT_MAX_QUEUED) -> Subscription:
        """A local iterator of the pushes named ``name`` (start it before the call)."""
        sub = Subscription(self, name, max_queued)
        if self._lost is not None or self._closing:
            sub._end(self._lost)
        else:
            self._subs.setdefault(name, []).append(sub)
        return sub

    def on_push(self, name: str, callback: PushCallback) -> Callable[[], None]:
        """Call ``callback(payload)`` for each push named ``name``; returns an unsubscriber."""
        self._callbacks.setdefault(name, []).append(callback)

        def remove() -> None:
            callbacks = self._callbacks.get(name, [])
            if callback in callbacks:
                callbacks.remove(callback)

        return remove

    async def close(self) -> None:
        """Close the connection; pending calls fail with DaemonUnavailable."""
        if self._closing:
            return
        self._closing = True
        self._writer.close()
        self._reader_task.cancel()
        await asyncio.gather(self._reader_task, return_exceptions=True)
        self._finish(None)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.name, [])
        if sub in subs:
            subs.remove(sub)

    def _connection_lost(self, why: str) -> DaemonUnavailable:
        if self._lost is None:
            self._lost = DaemonUnavailable(
                f"lost the connection to the volee daemon at {self.path} ({why}); "
                "check `volee daemon status` and connect again"
            )
        return self._lost

    def _finish(self, error: DaemonUnavailable | None) -> None:
        failure = error or DaemonUnavailable(
            f"this connection to {self.path} was closed; connect again"
        )
        for future in self._pending.values():
            if not future.done():
                future.set_exception(failure)
        self._pending.clear()
        for subs in self._subs.values():
            for sub in subs:
                sub._end(error)
        self._subs.clear()
        self.closed.set()

    async def _read_loop(self) -> None:
        lines = LineBuffer(MAX_MESSAGE)
        why = "the daemon closed it"
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    break
                for line in lines.feed(data):
                    if line is OVERSIZED:
                        raise IpcError(
                            ErrorCode.TOO_LARGE,
                            f"the daemon sent a message over {MAX_MESSAGE} bytes",
                        )
                    assert isinstance(line, bytes)
                    self._route(decode_reply_or_push(line))
        except IpcError as exc:
            log.error("broken message from the daemon at %s: %s", self.path, exc)
            why = f"it broke the protocol: {exc}"
        except (ConnectionError, OSError) as exc:
            why = str(exc)
        if not self._closing:
            self._writer.close()
            self._finish(self._connection_lost(why))

    def _route(self, msg: Any) -> None:
        if isinstance(msg, Push):
            delivered = False
            for sub in list(self._subs.get(msg.name, [])):
                sub._put(msg.payload)
                delivered = True
            for callback in list(self._callbacks.get(msg.name, [])):
                delivered = True
                try:
                    callback(msg.payload)
                except Exception:
                    log.exception("push callback for %r failed", msg.name)
            if not delivered:
                log.debug("dropped push %r: nobody subscribed", msg.name)
            return
        # Replies come in request order: a null-id error answers the oldest call.
        request_id = msg.id if msg.id is not None else next(iter(self._pending), None)
        future = self._pending.get(request_id) if request_id is not None else None
        if future is None or future.done():
            log.debug("dropped a reply to %r: no call waits for it", msg.id)
            return
        if msg.error is not None:
            future.set_exception(msg.error)
        else:
            future.set_result(msg.result)


__all__ = ["AsyncClient", "PushCallback", "Subscription"]

"""The blocking IPC client, for the ``volee`` CLI and the hook shim (no asyncio import)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    OVERSIZED,
    CallTimeout,
    DaemonUnavailable,
    DecodedReply,
    ErrorCode,
    IpcError,
    LineBuffer,
    Push,
    decode_reply_or_push,
    encode_request,
)
from volee_desktop.ipc.transport import Channel, Transport, default_transport

DEFAULT_TIMEOUT = 10.0
_RECV_CHUNK = 64 * 1024


def default_socket() -> Path:
    """The socket of this user's daemon (honours VOLEE_HOME)."""
    from volee_desktop.paths import dirs

    return dirs().socket


def check_request_size(data: bytes, method: str) -> None:
    """Refuse locally a request the daemon would refuse as too large."""
    if len(data) - 1 > MAX_MESSAGE:
        raise IpcError(
            ErrorCode.TOO_LARGE,
            f"the request {method!r} is {len(data) - 1} bytes, more than the {MAX_MESSAGE} "
            "the daemon accepts; send less at a time",
        )


class Client:
    """A blocking connection to the daemon: one call at a time, replies in order."""

    def __init__(self, channel: Channel, path: Path, timeout: float | None) -> None:
        self._channel: Channel | None = channel
        self.path = path
        self.timeout = timeout
        self._lines = LineBuffer(MAX_MESSAGE)
        self._ready: deque[bytes] = deque()
        self._pushes: deque[Push] = deque()
        self._next_id = 1

    @classmethod
    def connect(
        cls,
        path: Path | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        transport: Transport | None = None,
    ) -> Client:
        """Connect to the daemon at ``path``; raise DaemonUnavailable when nothing listens.

        ``timeout`` bounds the connect and every wait for a reply (None: wait forever).
        """
        address = default_socket() if path is None else path
        channel = (transport or default_transport()).connect(address, timeout)
        return cls(channel, address, timeout)

    def call(self, method: str, /, **params: Any) -> Any:
        """Call ``method`` with named params; the result, or IpcError from an error reply."""
        return self.request(method, params)

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Like ``call`` with params as a dict (for names that are not identifiers)."""
        request_id = self._next_id
        self._next_id += 1
        data = encode_request(request_id, method, params)
        check_request_size(data, method)
        channel = self._require_channel()
        try:
            channel.sendall(data)
        except OSError as exc:
            self._lost(f"sending {method!r} failed: {exc}")
        while True:
            msg = self._read_message()
            if isinstance(msg, Push):
                self._pushes.append(msg)
                continue
            # Replies come in request order, so a null-id error answers this call.
            if msg.id is not None and msg.id != request_id:
                continue  # the late reply of a call that timed out
            if msg.error is not None:
                raise msg.error
            return msg.result

    def pushes(self) -> Iterator[Push]:
        """Pushes as they arrive (those received during calls first); blocks."""
        while True:
            while self._pushes:
                yield self._pushes.popleft()
            msg = self._read_message()
            if isinstance(msg, Push):
                yield msg

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _require_channel(self) -> Channel:
        if self._channel is None:
            raise DaemonUnavailable(f"this connection to {self.path} is closed; connect again")
        return self._channel

    def _lost(self, why: str) -> NoReturn:
        self.close()
        raise DaemonUnavailable(
            f"lost the connection to the volee daemon at {self.path} ({why}); "
            "check `volee daemon status` and try again"
        )

    def _read_message(self) -> DecodedReply | Push:
        channel = self._require_channel()
        while not self._ready:
            try:
                data = channel.recv(_RECV_CHUNK)
            except TimeoutError as exc:
                self.close()
                raise CallTimeout(
                    f"the volee daemon at {self.path} did not answer within {self.timeout}s; "
                    "it may be busy or stuck: check `volee daemon status`"
                ) from exc
            except OSError as exc:
                self._lost(str(exc))
            if not data:
                self._lost("the daemon closed it")
            for line in self._lines.feed(data):
                if line is OVERSIZED:
                    self.close()
                    raise IpcError(
                        ErrorCode.TOO_LARGE,
                        f"the daemon sent a message over {MAX_MESSAGE} bytes; this is a bug",
                    )
                assert isinstance(line, bytes)
                self._ready.append(line)
        try:
            return decode_reply_or_push(self._ready.popleft())
        except IpcError:
            self.close()
            raise


__all__ = ["DEFAULT_TIMEOUT", "Client", "check_request_size", "default_socket"]

"""The wire protocol of volee's local API: versioned NDJSON messages, error codes, codec.

Wire format (version 1)
=======================

Framing
    One JSON object per line: UTF-8, terminated by ``\\n``.  A message is at most
    ``MAX_MESSAGE`` (1 MiB = 1,048,576) bytes, not counting the ``\\n``, in each
    direction.  Empty (or whitespace-only) lines are ignored.

Request (client -> server)::

    {"v": 1, "id": <int or str>, "method": "<name>", "params": {...}}

    ``params`` is optional and, when present, must be an object.  ``id`` is
    chosen by the client and echoed in the reply (booleans are not ids).

Reply (server -> client), exactly one per request::

    {"v": 1, "id": <same id>, "result": <any JSON>}
    {"v": 1, "id": <same id or null>, "error": {"code": "<code>", "message": "<text>"}}

    ``id`` is null only when the request's id could not be read (bad JSON, a
    line too large, a missing or invalid id).  The server handles the requests
    of one connection in order, one at a time (different connections
    concurrently), so replies come in request order: a null-id error answers
    the oldest request still waiting.  ``message`` is for people and says what
    to do; programs look at ``code``.  An ``unsupported_version`` error also
    carries ``"supported": [1]``.

Push (server -> client), for subscriptions::

    {"v": 1, "push": "<subscription name>", ...payload fields}

    A push is never sent before the reply to the request that started it.

Error codes (stable; ``ErrorCode``):

    bad_json             the line is not valid UTF-8 JSON
    too_large            the line is larger than MAX_MESSAGE; the rest of the
                         line is discarded and the connection keeps working
    bad_request          valid JSON but not a request (not an object, no
                         method, bad id, params not an object, no version),
                         or JSON nested too deeply to read (~1,000 levels)
    unsupported_version  ``v`` is not a version this server speaks
    unknown_method       no such method
    not_found            the thing named does not exist
    ambiguous            a name or id prefix matches more than one thing
    refused              the request is understood but not allowed now
    conflict             the request conflicts with the current state
    unavailable          the daemon (or something it needs) cannot be reached
    internal             a bug in volee; the daemon log has the traceback

A malformed, oversized or unknown request gets an error reply; the daemon keeps
serving that connection and every other.

Exceptions of the ipc package::

    Error                        root of the package
    ├── IpcError                 an error with a stable code (an error reply)
    │   └── DaemonUnavailable    code ``unavailable``: nothing listens, the
    │       │                    connection was refused or lost
    │       └── CallTimeout      the daemon did not answer in time
    └── ServerStartError         the server could not start (socket in use, …)

This module is imported by ``volee hook`` on every hook, so it imports only
``json`` and ``enum``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Final, NamedTuple

PROTOCOL_VERSION: Final = 1
SUPPORTED_VERSIONS: Final = (1,)
MAX_MESSAGE: Final = 1 << 20

__all__ = [
    "MAX_MESSAGE",
    "OVERSIZED",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "CallTimeout",
    "DaemonUnavailable",
    "DecodedReply",
    "Error",
    "ErrorCode",
    "IpcError",
    "LineBuffer",
    "Push",
    "Request",
    "RequestError",
    "ServerStartError",
    "decode_reply_or_push",
    "decode_request",
    "encode_error",
    "encode_push",
    "encode_request",
    "encode_result",
]


class ErrorCode(StrEnum):
    """The stable error codes of an error reply."""

    BAD_JSON = "bad_json"
    TOO_LARGE = "too_large"
    BAD_REQUEST = "bad_request"
    UNSUPPORTED_VERSION = "unsupported_version"
    UNKNOWN_METHOD = "unknown_method"
    NOT_FOUND = "not_found"
    AMBIGUOUS = "ambiguous"
    REFUSED = "refused"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"
    # An agent asked for what only the person may do (docs/trust-model.md).
    FORBIDDEN = "forbidden"


class Error(Exception):
    """Root of every error the ipc package raises."""


class IpcError(Error):
    """An error with a stable code: what a handler raises and what an error reply becomes."""

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        super().__init__(message)
        # An unknown code from a newer daemon stays a plain string rather than failing.
        try:
            self.code: ErrorCode | str = ErrorCode(code)
        except ValueError:
            self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"


class DaemonUnavailable(IpcError):
    """The daemon cannot be reached: nothing listens, connection refused or lost."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNAVAILABLE, message)


class CallTimeout(DaemonUnavailable):
    """The daemon did not answer a request in time."""


class ServerStartError(Error):
    """The server could not start listening (another server is live, bad path, …)."""


class RequestError(IpcError):
    """A request that cannot be handled, with the id to put in the error reply (or None)."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        request_id: int | str | None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(code, message)
        self.request_id = request_id
        self.extra = extra or {}


class Request(NamedTuple):
    """A decoded request."""

    id: int | str
    method: str
    params: dict[str, Any]


class DecodedReply(NamedTuple):
    """A decoded reply: ``error`` is None for a result."""

    id: int | str | None
    result: Any
    error: IpcError | None


class Push(NamedTuple):
    """A decoded push: the subscription name and the payload fields."""

    name: str
    payload: dict[str, Any]


def _dumps(obj: dict[str, Any]) -> bytes:
    # allow_nan=False: NaN is not JSON and other languages' parsers reject it.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


def _is_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def encode_request(request_id: int | str, method: str, params: dict[str, Any] | None) -> bytes:
    """One request line (raises TypeError/ValueError when params are not JSON)."""
    msg: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": request_id, "method": method}
    if params:
        msg["params"] = params
    return _dumps(msg)


def encode_result(request_id: int | str, result: Any) -> bytes:
    """One result reply line (raises TypeError/ValueError when result is not JSON)."""
    return _dumps({"v": PROTOCOL_VERSION, "id": request_id, "result": result})


def encode_error(
    request_id: int | str | None,
    code: ErrorCode | str,
    message: str,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """One error reply line."""
    error: dict[str, Any] = {"code": str(code), "message": message}
    if extra:
        error.update(extra)
    return _dumps({"v": PROTOCOL_VERSION, "id": request_id, "error": error})


def encode_push(name: str, payload: dict[str, Any]) -> bytes:
    """One push line; payload keys ``v`` and ``push`` are reserved (ValueError)."""
    if "v" in payload or "push" in payload:
        raise ValueError(
            f"push {name!r}: payload keys 'v' and 'push' are reserved by the protocol; rename them"
        )
    return _dumps({"v": PROTOCOL_VERSION, "push": name, **payload})


def _parse_object(line: bytes) -> dict[str, Any] | list[Any] | Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(
            ErrorCode.BAD_JSON,
            f"the line is not valid UTF-8 JSON ({exc}); send one JSON object per line",
            None,
        ) from exc
    except RecursionError:
        # The C parser recurses per level: ~1,000 nested arrays exhaust Python's stack.
        raise RequestError(
            ErrorCode.BAD_REQUEST,
            "the request is nested too deeply to read (about 1,000 levels or more); "
            "send flatter JSON",
            None,
        ) from None


def decode_request(line: bytes) -> Request:
    """Decode one request line, or raise RequestError with the code and the id to reply to."""
    msg = _parse_object(line)
    if not isinstance(msg, dict):
        raise RequestError(
            ErrorCode.BAD_REQUEST,
            f"a request must be a JSON object, got {type(msg).__name__}; "
            'send {"v": 1, "id": 1, "method": "..."}',
            None,
        )
    raw_id = msg.get("id")
    request_id = raw_id if _is_id(raw_id) else None
    if request_id is None:
        raise RequestError(
            ErrorCode.BAD_REQUEST,
            f"the request id must be an integer or a string, got {raw_id!r}; "
            "give every request an id",
            None,
        )
    version = msg.get("v")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RequestError(
            ErrorCode.BAD_REQUEST,
            f'the request has no protocol version (v = {version!r}); send "v": {PROTOCOL_VERSION}',
            request_id,
        )
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise RequestError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"protocol version {version} is not supported by this daemon (it speaks {supported}); "
            "use a volee of the same version as the daemon, or restart the daemon after upgrading",
            request_id,
            {"supported": list(SUPPORTED_VERSIONS)},
        )
    method = msg.get("method")
    if not isinstance(method, str) or not method:
        raise RequestError(
            ErrorCode.BAD_REQUEST,
            f"the request has no method (method = {method!r}); name the method to call",
            request_id,
        )
    params = msg.get("params", {})
    if not isinstance(params, dict):
        raise RequestError(
            ErrorCode.BAD_REQUEST,
            f"params of {method!r} must be a JSON object, got {type(params).__name__}; "
            "pass named parameters",
            request_id,
        )
    return Request(request_id, method, params)


def decode_reply_or_push(line: bytes) -> DecodedReply | Push:
    """Decode one line from the server; raise IpcError when it breaks the protocol."""
    try:
        msg = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise IpcError(
            ErrorCode.BAD_JSON, f"the daemon sent a line that is not JSON ({exc!r}); this is a bug"
        ) from exc
    if not isinstance(msg, dict) or msg.get("v") not in SUPPORTED_VERSIONS:
        raise IpcError(
            ErrorCode.BAD_REQUEST,
            f"the daemon sent a message this client does not understand: {line[:200]!r}; "
            "use a volee of the same version as the daemon",
        )
    if "push" in msg:
        name = msg.pop("push")
        del msg["v"]
        if not isinstance(name, str):
            raise IpcError(ErrorCode.BAD_REQUEST, f"the daemon sent a push named {name!r}")
        return Push(name, msg)
    raw_id = msg.get("id")
    request_id = raw_id if _is_id(raw_id) else None
    if "error" in msg:
        err = msg["error"]
        if not isinstance(err, dict):
            raise IpcError(ErrorCode.BAD_REQUEST, f"the daemon sent a malformed error: {err!r}")
        code = str(err.get("code", ErrorCode.INTERNAL))
        message = str(err.get("message", "the daemon gave no message"))
        return DecodedReply(request_id, None, IpcError(code, message))
    if "result" not in msg or request_id is None:
        raise IpcError(
            ErrorCode.BAD_REQUEST, f"the daemon sent a reply without id or result: {line[:200]!r}"
        )
    return DecodedReply(request_id, msg["result"], None)


class _Oversized:
    """Marker for a line that was larger than the limit and has been dropped."""

    def __repr__(self) -> str:
        return "OVERSIZED"


OVERSIZED: Final = _Oversized()


class LineBuffer:
    """Splits a byte stream into lines of at most ``max_line`` bytes (sans-IO).

    A longer line yields ``OVERSIZED`` once, as soon as it is known to be too
    long (so the peer can be told right away), and its remaining bytes are
    dropped up to and including its ``\\n``.  Memory stays below ``max_line``
    plus one chunk.
    """

    def __init__(self, max_line: int = MAX_MESSAGE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | _Oversized]:
        """Add received bytes; return the complete lines (without ``\\n``) and markers."""
        out: list[bytes | _Oversized] = []
        self._buf += data
        while True:
            nl = self._buf.find(b"\n", self._scanned)
            if nl < 0:
                if self._discarding:
                    self._buf.clear()
                    self._scanned = 0
                elif len(self._buf) > self.max_line:
                    out.append(OVERSIZED)
                    self._discarding = True
                    self._buf.clear()
                    self._scanned = 0
                else:
                    self._scanned = len(self._buf)
                return out
            self._scanned = 0
            if self._discarding:
                del self._buf[: nl + 1]
                self._discarding = False
                continue
            if nl > self.max_line:
                out.append(OVERSIZED)
            elif self._buf[:nl].strip():
                out.append(bytes(self._buf[:nl]))
            del self._buf[: nl + 1]

    @property
    def pending(self) -> int:
        """Bytes held for an unfinished line."""
        return len(self._buf)

    def take(self) -> bytes:
        """The bytes held for an unfinished line, which the buffer forgets (a takeover)."""
        rest = b"" if self._discarding else bytes(self._buf)
        self._buf.clear()
        self._scanned = 0
        self._discarding = False
        return rest

"""A scripted, offline Anthropic Messages API for driving the real Claude Code and pi in tests.

Run it as a program (``python tests/fakes/fake_anthropic.py --port 0 --log FILE [--script FILE]``;
it prints ``PORT n`` on stdout and serves on 127.0.0.1 only) or in-process with
:class:`FakeAnthropic` (a threaded server for pytest fixtures).

Replies follow rules on the text of the last user message, matched by line because Claude Code
wraps the prompt in ``<system-reminder>`` blocks:

- the message holds a ``tool_result``      -> text ``Done: <first 200 chars of the result>``
- ``HOLD``                                  -> wait for ``POST /_control/release`` (or
  :meth:`FakeAnthropic.release`, or the client hanging up), then apply the other rules
- ``SLEEP: n``                              -> wait n seconds, then apply the other rules
- ``RUN: <cmd>``                            -> a shell tool_use ``{"command", "description"}``
  named after the tool the request offers (``Bash`` for Claude Code, ``bash`` for pi)
- ``MCP: <tool> <json>``                    -> a tool_use of that exact tool name and input
- ``AGENT: <prompt>``                       -> a subagent tool_use (``Agent``/``Task``)
- anything else                             -> text ``OK``

A ``--script`` file (JSON list) overrides the rules for the first requests, in order; each entry
is ``{"text": ...}`` or ``{"tool": name, "input": {...}}``, optionally with ``"sleep": n`` or
``"hold": true``; ``{"status": 400, "text": ...}`` answers with that HTTP error. Every request
is appended to the log as one JSON line ``{"ts", "method", "path", "headers", "body"}``.

Limits, on demand (docs/limits.md): :meth:`FakeServer.refuse` (or ``POST /_control/refuse``
with the :class:`Refusal` as JSON) makes every model request answer with that refusal until
:meth:`FakeServer.lift` (``POST /_control/lift``): a plan's usage limit with the unified
rate-limit headers a subscription account gets (:func:`usage_limit`), a plain 429 with
``retry-after`` (:func:`rate_limited`), or 529 (:func:`overloaded`).  ``count`` refuses only
that many requests, then lifts by itself.

:mod:`fake_openai` reuses the server machinery here (:class:`FakeServer`, :class:`Reply`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import select
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

JSON = dict[str, Any]

# Headers that carry no information for a test; everything else is logged.
_DROPPED_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding"})
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_RUN_RE = re.compile(r"^\s*RUN:\s*(.+?)\s*$", re.MULTILINE)
_MCP_RE = re.compile(r"^\s*MCP:\s*(\S+)\s*(.*?)\s*$", re.MULTILINE)
_AGENT_RE = re.compile(r"^\s*AGENT:\s*(.+?)\s*$", re.MULTILINE)
_SLEEP_RE = re.compile(r"^\s*SLEEP:\s*([0-9.]+)", re.MULTILINE)
_HOLD_RE = re.compile(r"^\s*HOLD\b", re.MULTILINE)
DEFAULT_MODEL = "claude-opus-5-5"


class Error(Exception):
    """Root of the errors raised by the fake model servers."""


@dataclass(frozen=True)
class Reply:
    """What the fake model answers: text, or one tool call, after an optional wait."""

    text: str = "OK"
    tool: str | None = None
    tool_input: JSON = field(default_factory=dict)
    sleep: float = 0.0
    hold: bool = False
    #: An HTTP error status to answer with instead (``text`` is the error's message).
    status: int = 200

    @classmethod
    def from_json(cls, entry: JSON) -> Reply:
        """Build a reply from one ``--script`` entry."""
        if not isinstance(entry, dict):
            raise Error(f"script entry {entry!r} is not an object; use {{'text': ...}}")
        tool_input = entry.get("input", {})
        if not isinstance(tool_input, dict):
            raise Error(f"script entry {entry!r}: 'input' must be an object")
        return cls(
            text=str(entry.get("text", "OK")),
            tool=entry.get("tool"),
            tool_input=tool_input,
            sleep=float(entry.get("sleep", 0.0)),
            hold=bool(entry.get("hold", False)),
            status=int(entry.get("status", 200)),
        )


@dataclass(frozen=True)
class Refusal:
    """An error answer to every model request while it stands: status, headers, JSON body."""

    status: int = 429
    headers: dict[str, str] = field(default_factory=dict)
    body: JSON = field(default_factory=dict)
    count: int | None = None  # refuse only this many requests (None: until lifted)

    @classmethod
    def from_json(cls, entry: JSON) -> Refusal:
        """Build a refusal from a ``/_control/refuse`` body."""
        if not isinstance(entry, dict) or not isinstance(entry.get("status", 429), int):
            raise Error(f"refusal {entry!r}: give {{'status': 429, 'headers': {{...}}}}")
        headers = entry.get("headers") or {}
        body = entry.get("body") or error_body(int(entry.get("status", 429)))
        count = entry.get("count")
        return cls(
            status=int(entry.get("status", 429)),
            headers={str(k): str(v) for k, v in dict(headers).items()},
            body=dict(body),
            count=int(count) if count is not None else None,
        )

    def to_json(self) -> JSON:
        return {
            "status": self.status,
            "headers": self.headers,
            "body": self.body,
            "count": self.count,
        }


def error_body(status: int, message: str | None = None) -> JSON:
    """The Anthropic API's error document for ``status``."""
    kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
    text = message or {429: "Rate limited", 529: "Overloaded"}.get(status, "Error")
    return {"type": "error", "error": {"type": kind, "message": text}}


#: What ``anthropic-ratelimit-unified-representative-claim`` names (read in Claude Code 2.1.332).
CLAIMS = ("five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet", "overage")


def usage_limit(resets_at: float, claim: str = "five_hour", count: int | None = None) -> Refusal:
    """A plan's usage limit as a subscription account meets it: 429 with the unified headers
    (``status: rejected``, the claim that ran out and when it resets, as epoch seconds)."""
    if claim not in CLAIMS:
        raise Error(f"unknown claim {claim!r}; use one of {', '.join(CLAIMS)}")
    reset = str(int(resets_at))
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": reset,
        "anthropic-ratelimit-unified-representative-claim": claim,
        "anthropic-ratelimit-unified-5h-status": "rejected" if claim == "five_hour" else "allowed",
        "anthropic-ratelimit-unified-5h-reset": reset,
        "anthropic-ratelimit-unified-5h-utilization": "1.0" if claim == "five_hour" else "0.5",
        "anthropic-ratelimit-unified-7d-status": "rejected" if claim == "seven_day" else "allowed",
        "anthropic-ratelimit-unified-7d-reset": reset
        if claim == "seven_day"
        else str(int(resets_at) + 5 * 86400),
        "anthropic-ratelimit-unified-7d-utilization": "1.0" if claim == "seven_day" else "0.4",
        "anthropic-ratelimit-unified-overage-status": "rejected",
        "anthropic-ratelimit-unified-overage-disabled-reason": "org_level_disabled",
        "anthropic-ratelimit-unified-fallback-percentage": "0.5",
    }
    return Refusal(429, headers, error_body(429, "Rate limited"), count)


def rate_limited(retry_after: float, count: int | None = None) -> Refusal:
    """A plain rate limit: 429 with ``retry-after`` (seconds) and no unified headers."""
    headers = {
        "retry-after": str(int(retry_after))
        if retry_after == int(retry_after)
        else str(retry_after)
    }
    return Refusal(429, headers, error_body(429, "Rate limited"), count)


def overloaded(count: int | None = None) -> Refusal:
    """The API overloaded: 529."""
    return Refusal(529, {}, error_body(529), count)


def load_script(path: Path) -> list[Reply]:
    """Read a ``--script`` file: a JSON list of reply objects."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Error(f"cannot read script {path}: {exc}; give a JSON list of replies") from exc
    if not isinstance(entries, list):
        raise Error(f"script {path} holds {type(entries).__name__}, expected a JSON list")
    return [Reply.from_json(entry) for entry in entries]


def strip_reminders(text: str) -> str:
    """Drop the ``<system-reminder>`` blocks Claude Code wraps around the user's text."""
    return _REMINDER_RE.sub("", text)


def rule_reply(text: str) -> Reply:
    """The reply the rules give for a user text without a tool result (tool names generic)."""
    text = strip_reminders(text)
    sleep = 0.0
    if match := _SLEEP_RE.search(text):
        sleep = float(match.group(1))
    hold = _HOLD_RE.search(text) is not None
    if match := _RUN_RE.search(text):
        command = match.group(1)
        return Reply(
            tool="$shell",
            tool_input={"command": command, "description": "run command"},
            sleep=sleep,
            hold=hold,
        )
    if match := _MCP_RE.search(text):
        raw = match.group(2) or "{}"
        try:
            tool_input = json.loads(raw)
        except ValueError:
            tool_input = {"text": raw}
        return Reply(tool=match.group(1), tool_input=tool_input, sleep=sleep, hold=hold)
    if match := _AGENT_RE.search(text):
        return Reply(
            tool="$agent",
            tool_input={
                "description": "sub task",
                "prompt": match.group(1),
                "subagent_type": "general-purpose",
            },
            sleep=sleep,
            hold=hold,
        )
    return Reply(text="OK", sleep=sleep, hold=hold)


def done_text(result: str) -> str:
    """The text answering a tool result."""
    return f"Done: {result[:200]}"


class FakeServer:
    """A threaded HTTP server on 127.0.0.1 that logs JSON requests and can hold replies."""

    def __init__(self, log_path: Path | None = None, script: list[Reply] | None = None) -> None:
        self._log_path = log_path
        self._script = list(script or [])
        self._lock = threading.Condition()
        self._requests: list[JSON] = []
        self._release_generation = 0
        self._refusal: Refusal | None = None
        self._refused = 0
        self._closing = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, port: int = 0) -> Self:
        """Bind 127.0.0.1:port (0 picks a free port) and serve in a background thread."""
        handler = _make_handler(self)
        self._httpd = _QuietServer(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        """The TCP port served on."""
        if self._httpd is None:
            raise Error(f"{type(self).__name__} is not started; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:41234``."""
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop serving and end every held reply."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what tests look at ----------------------------------------------------------------

    def requests(self, path_prefix: str | None = None) -> list[JSON]:
        """The logged requests so far (optionally only those whose path starts with a prefix)."""
        with self._lock:
            return [
                r
                for r in self._requests
                if path_prefix is None or r["path"].startswith(path_prefix)
            ]

    def wait_for(
        self, predicate: Callable[[list[JSON]], bool], timeout: float = 10.0
    ) -> list[JSON]:
        """Block until ``predicate(requests)`` holds; raise :class:`Error` after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self._requests):
                left = deadline - time.monotonic()
                if left <= 0:
                    paths = [r["path"] for r in self._requests]
                    raise Error(f"condition not met within {timeout} s; requests so far: {paths}")
                self._lock.wait(left)
            return list(self._requests)

    def release(self) -> None:
        """Let every reply currently held by ``HOLD`` go on."""
        with self._lock:
            self._release_generation += 1
            self._lock.notify_all()

    def refuse(self, refusal: Refusal) -> None:
        """Answer every model request with ``refusal`` from now on (until :meth:`lift`)."""
        with self._lock:
            self._refusal = refusal
            self._refused = 0

    def lift(self) -> None:
        """Answer model requests again."""
        with self._lock:
            self._refusal = None

    def refused(self) -> int:
        """How many requests the refusal standing (or the last one) answered."""
        with self._lock:
            return self._refused

    # -- used by the request handler -------------------------------------------------------

    def refusal_for(self, path: str) -> Refusal | None:
        """The refusal that answers a request to ``path`` now, if one stands (counted)."""
        if not self.is_model_path(path):
            return None
        with self._lock:
            refusal = self._refusal
            if refusal is None:
                return None
            self._refused += 1
            if refusal.count is not None and self._refused >= refusal.count:
                self._refusal = None
            self._lock.notify_all()
            return refusal

    def is_model_path(self, path: str) -> bool:
        """Whether ``path`` is a model request (what a refusal answers). Overridden per API."""
        return False

    def record(self, method: str, path: str, headers: dict[str, str], body: Any) -> JSON:
        """Log one request in memory and in the JSONL file."""
        entry: JSON = {
            "ts": time.time(),
            "method": method,
            "path": path,
            "headers": headers,
            "body": body,
        }
        with self._lock:
            self._requests.append(entry)
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")
            self._lock.notify_all()
        return entry

    def next_scripted(self) -> Reply | None:
        """Pop the next scripted reply, if any is left."""
        with self._lock:
            return self._script.pop(0) if self._script else None

    def wait_reply(self, reply: Reply, conn: socket.socket) -> bool:
        """Apply a reply's sleep/hold; False when the client hung up meanwhile."""
        deadline = time.monotonic() + reply.sleep
        with self._lock:
            generation = self._release_generation
        while True:
            with self._lock:
                if self._closing:
                    return False
                released = self._release_generation != generation
            if time.monotonic() >= deadline and (not reply.hold or released):
                return True
            if _peer_closed(conn, 0.05):
                return False

    def handle_post(self, path: str, body: JSON) -> tuple[int, JSON | Iterator[bytes], Reply]:
        """Answer a POST: a JSON body, or an iterator of SSE bytes. Overridden per API."""
        raise NotImplementedError

    def handle_get(self, path: str) -> tuple[int, JSON]:
        """Answer a GET with a JSON body. Overridden per API."""
        return 404, {"error": {"type": "not_found", "message": f"no route GET {path}"}}


class _QuietServer(ThreadingHTTPServer):
    """A threaded server that takes a client hanging up (a killed harness) as normal."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _peer_closed(conn: socket.socket, wait: float) -> bool:
    """Whether the client closed its side; it sends nothing more while awaiting our reply."""
    readable, _, _ = select.select([conn], [], [], wait)
    if not readable:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _make_handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 so SSE can be sent chunked and connections kept alive, as real APIs do.
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the JSONL log says it all; stderr noise would hide test failures

        def _headers(self) -> dict[str, str]:
            return {
                k.lower(): v for k, v in self.headers.items() if k.lower() not in _DROPPED_HEADERS
            }

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                raw = gzip.decompress(raw)
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _send_json(
            self, status: int, payload: JSON | None, headers: dict[str, str] | None = None
        ) -> None:
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def do_HEAD(self) -> None:
            server.record("HEAD", self.path, self._headers(), None)
            self._send_json(200, None)

        def do_GET(self) -> None:
            server.record("GET", self.path, self._headers(), None)
            status, payload = server.handle_get(self.path.split("?", 1)[0])
            self._send_json(status, payload)

        def do_POST(self) -> None:
            body = self._read_body()
            path = self.path.split("?", 1)[0]
            if path == "/_control/release":
                server.release()
                self._send_json(200, {"released": True})
                return
            if path == "/_control/refuse":
                try:
                    server.refuse(Refusal.from_json(body if isinstance(body, dict) else {}))
                except Error as exc:
                    self._send_json(400, {"error": str(exc)})
                    return
                self._send_json(200, {"refusing": True})
                return
            if path == "/_control/lift":
                server.lift()
                self._send_json(200, {"refusing": False})
                return
            server.record("POST", self.path, self._headers(), body)
            refusal = server.refusal_for(path)
            if refusal is not None:
                self._send_json(refusal.status, refusal.body, refusal.headers)
                return
            status, payload, reply = server.handle_post(
                path, body if isinstance(body, dict) else {}
            )
            if not server.wait_reply(reply, self.connection):
                self.close_connection = True
                return
            if isinstance(payload, dict):
                self._send_json(status, payload)
                return
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for chunk in payload:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler


def sse(event: str, data: JSON) -> bytes:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


# -- Anthropic Messages -------------------------------------------------------------------


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict):
        if block.get("type") == "text":
            return str(block.get("text", ""))
        if block.get("type") == "tool_result":
            return _block_text(block.get("content", ""))
    if isinstance(block, list):
        return "".join(_block_text(b) for b in block)
    return ""


def last_user_message(messages: list[Any]) -> Any:
    """The content of the last ``role: user`` message (``role: system`` entries are skipped)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message.get("content", "")
    return ""


def _tool_names(body: JSON) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]


def resolve_tool(generic: str, offered: list[str]) -> str:
    """Map a generic tool (``$shell``, ``$agent``) to the name the client offered."""
    wanted = {"$shell": ("Bash", "bash", "shell"), "$agent": ("Agent", "Task", "task")}.get(generic)
    if wanted is None:
        return generic
    for name in wanted:
        if name in offered:
            return name
    lowered = {n.lower(): n for n in offered}
    for name in wanted:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return wanted[0]


def anthropic_reply(body: JSON) -> Reply:
    """The rule-based reply for one Messages request."""
    content = last_user_message(body.get("messages") or [])
    blocks = content if isinstance(content, list) else [content]
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    if results:
        # A message the person typed mid-turn rides beside the tool result ("The user sent a
        # new message while you were working: ..."): its rules are answered, as a model would.
        typed = rule_reply(_block_text([b for b in blocks if b not in results]))
        if typed.tool is None:
            return Reply(text=done_text(_block_text(results[-1])))
        reply = typed
    else:
        reply = rule_reply(_block_text(blocks))
    if reply.tool is None:
        return reply
    offered = _tool_names(body)
    if not offered and reply.tool.startswith("$"):
        # A side request without tools (titles, summaries): a tool call would be rejected.
        return Reply(text="OK", sleep=reply.sleep, hold=reply.hold)
    return Reply(
        tool=resolve_tool(reply.tool, offered),
        tool_input=reply.tool_input,
        sleep=reply.sleep,
        hold=reply.hold,
    )


def input_tokens(body: JSON) -> int:
    """What the request would cost in input tokens, roughly as the real API counts (a token per
    four characters of its system prompt, messages and tools), so that a conversation fills
    its context window as it grows (Claude Code's status line shows the share)."""
    size = sum(len(json.dumps(body.get(k) or "")) for k in ("system", "messages", "tools"))
    return max(10, size // 4)


def _usage(output_tokens: int, tokens_in: int = 10) -> JSON:
    return {
        "input_tokens": tokens_in,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def _content_block(reply: Reply) -> JSON:
    if reply.tool is not None:
        tool_id = "toolu_" + uuid.uuid4().hex[:24]
        return {"type": "tool_use", "id": tool_id, "name": reply.tool, "input": reply.tool_input}
    return {"type": "text", "text": reply.text}


def message_json(reply: Reply, model: str, tokens_in: int = 10) -> JSON:
    """A complete non-streamed Messages response."""
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_content_block(reply)],
        "stop_reason": "tool_use" if reply.tool else "end_turn",
        "stop_sequence": None,
        "usage": _usage(5, tokens_in),
    }


def message_events(reply: Reply, model: str, tokens_in: int = 10) -> Iterator[bytes]:
    """The SSE stream of a Messages response."""
    message = message_json(reply, model, tokens_in)
    block = message["content"][0]
    yield sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                **message,
                "content": [],
                "stop_reason": None,
                "usage": _usage(1, tokens_in),
            },
        },
    )
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    yield sse(
        "content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}
    )
    yield sse("ping", {"type": "ping"})
    yield sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield sse("message_stop", {"type": "message_stop"})


class FakeAnthropic(FakeServer):
    """The fake Anthropic Messages API (in-process)."""

    def is_model_path(self, path: str) -> bool:
        return path == "/v1/messages"

    def handle_post(self, path: str, body: JSON) -> tuple[int, JSON | Iterator[bytes], Reply]:
        if path == "/v1/messages/count_tokens":
            return 200, {"input_tokens": 10}, Reply()
        if path != "/v1/messages":
            error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
            return 404, error, Reply()
        reply = self.next_scripted() or anthropic_reply(body)
        if reply.status != 200:
            error = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": reply.text},
            }
            return reply.status, error, reply
        model = str(body.get("model") or DEFAULT_MODEL)
        tokens = input_tokens(body)
        if body.get("stream"):
            return 200, message_events(reply, model, tokens), reply
        return 200, message_json(reply, model, tokens), reply

    def handle_get(self, path: str) -> tuple[int, JSON]:
        if path.startswith("/v1/models"):
            model = {
                "type": "model",
                "id": DEFAULT_MODEL,
                "display_name": "Fake Opus",
                "created_at": "2026-01-01T00:00:00Z",
            }
            if path != "/v1/models":
                return 200, {**model, "id": path.rsplit("/", 1)[-1]}
            return 200, {
                "data": [model],
                "has_more": False,
                "first_id": model["id"],
                "last_id": model["id"],
            }
        return 200, {}


def serve_main(server_class: type[FakeServer], argv: list[str] | None = None) -> int:
    """Command-line entry shared by the fakes: print ``PORT n``, serve until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=(server_class.__doc__ or "").strip())
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--log", type=Path, help="append each request to this JSONL file")
    parser.add_argument("--script", type=Path, help="JSON list of replies used first, in order")
    args = parser.parse_args(argv)
    script = load_script(args.script) if args.script else None
    server = server_class(log_path=args.log, script=script).start(args.port)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    print(f"PORT {server.port}", flush=True)
    stop.wait()
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(serve_main(FakeAnthropic))

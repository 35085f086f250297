"""The Model Context Protocol for a tools-only server, without the SDK (JSON-RPC 2.0).

volee's MCP side offers tools and nothing else: ``initialize``, ``ping``, ``tools/list``
and ``tools/call``, and the notifications a client sends (ignored).  The ``mcp`` SDK did
this in the daemon for 42 MB of memory (pydantic, anyio, starlette) to check eight tools'
arguments; this module does it in a few hundred lines, for the relay's line sessions and
the HTTP endpoint alike (``daemon/serving/mcphub.py``, ``daemon/serving/mcphttp.py``).
The SDK's client
is still what the tests drive it with (tests/mcp/), and so is the real Claude Code.

What a tool gets is its arguments, checked against its schema (the JSON Schema subset the
tools use: an object of strings, booleans, lists of strings, each maybe null); what it
returns is both the JSON text (for the model) and ``structuredContent`` (a list as
``{"result": [...]}``, as the SDK did).  A ``ToolError`` it raises becomes a result with
``isError`` and the message, which the model reads; an unknown tool or a malformed
request is a JSON-RPC error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: The protocol revisions this server speaks, newest first (the handshake picks one).
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class Error(Exception):
    """Root of the mcp package's errors."""


class ToolError(Error):
    """A tool's refusal, in words for the model (becomes a result with ``isError``)."""


class RequestError(Error):
    """A request this server cannot take (becomes a JSON-RPC error object)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


#: A tool's body: its session and its checked arguments -> what it returns (JSON).
Run = Callable[[Any, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its JSON type (``string``, ``boolean`` or ``array`` of
    strings), whether it may be left out, its default, and what it is for."""

    name: str
    type: str
    description: str = ""
    required: bool = False
    default: Any = None

    def schema(self) -> dict[str, Any]:
        base: dict[str, Any] = {"type": self.type}
        if self.type == "array":
            base["items"] = {"type": "string"}
        out: dict[str, Any] = base if self.required else {"anyOf": [base, {"type": "null"}]}
        if not self.required:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        return out

    def check(self, value: Any) -> Any:
        if value is None and not self.required:
            return self.default
        fits = {
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "array": isinstance(value, list) and all(isinstance(v, str) for v in value),
        }[self.type]
        if not fits:
            what = "a list of strings" if self.type == "array" else f"a {self.type}"
            raise ToolError(f"{self.name!r} must be {what}, not {json.dumps(value)[:80]}")
        return value


@dataclass(frozen=True)
class Tool:
    """A tool: its name, what it does (the model reads it), its arguments and its body."""

    name: str
    description: str
    run: Run
    params: tuple[Param, ...] = ()

    def listing(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required],
            },
        }

    def arguments(self, given: Any) -> dict[str, Any]:
        """The checked arguments (defaults filled in); a ToolError says what is wrong."""
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise ToolError(f"the arguments of {self.name} must be an object")
        out: dict[str, Any] = {}
        for param in self.params:
            if param.name not in given and param.required:
                raise ToolError(f"{self.name} needs {param.name!r}")
            out[param.name] = param.check(given.get(param.name))
        return out


def negotiate(asked: Any) -> str:
    """The revision to speak: the client's when this server knows it, else the newest."""
    return asked if asked in VERSIONS else VERSIONS[0]


def result_of(value: Any) -> dict[str, Any]:
    """A tool's return value as a ``tools/call`` result: the JSON text and the structure."""
    structured = value if isinstance(value, dict) else {"result": value}
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def tool_failed(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def error_reply(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def parse(data: bytes) -> Any:
    """One JSON-RPC message from bytes (RequestError(PARSE_ERROR) when it is not JSON)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise RequestError(PARSE_ERROR, f"not JSON: {exc}") from None


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Server:
    """A tools-only MCP server: ``handle(message, session)`` answers one message."""

    name: str
    version: str
    instructions: str
    tools: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, version: str, instructions: str, tools: list[Tool]) -> Server:
        return cls(name, version, instructions, {t.name: t for t in tools})

    def initialized(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocolVersion": negotiate(params.get("protocolVersion")),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.name, "version": self.version},
            "instructions": self.instructions,
        }

    async def call(self, params: dict[str, Any], session: Any) -> dict[str, Any]:
        name = params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RequestError(INVALID_PARAMS, f"unknown tool: {name!r}")
        try:
            return result_of(await tool.run(session, tool.arguments(params.get("arguments"))))
        except ToolError as exc:
            return tool_failed(str(exc))

    async def handle(self, message: Any, session: Any) -> dict[str, Any] | None:
        """The reply to ``message`` (None for a notification or a client's response)."""
        if not isinstance(message, dict):
            # JSON-RPC batches went out of MCP in 2025-06-18; nothing volee talks to sends one.
            return error_reply(None, INVALID_REQUEST, "a JSON-RPC message is one JSON object")
        request_id = message.get("id")
        method = message.get("method")
        if "id" not in message or not isinstance(method, str):
            return None  # a notification (initialized, cancelled…) or a response: no answer
        if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
            return error_reply(None, INVALID_REQUEST, "a request's id is a string or a number")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error_reply(request_id, INVALID_PARAMS, "params must be an object")
        try:
            if method == "initialize":
                result = self.initialized(params)
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": [t.listing() for t in self.tools.values()]}
            elif method == "tools/call":
                result = await self.call(params, session)
            else:
                raise RequestError(METHOD_NOT_FOUND, f"this server has no method {method!r}")
        except RequestError as exc:
            return error_reply(request_id, exc.code, str(exc))
        except Exception:
            log.exception("the MCP request %s failed", method)
            return error_reply(request_id, INTERNAL_ERROR, f"{method} failed inside volee")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}


__all__ = [
    "VERSIONS",
    "Error",
    "Param",
    "RequestError",
    "Server",
    "Tool",
    "ToolError",
    "encode",
    "error_reply",
    "parse",
    "result_of",
]

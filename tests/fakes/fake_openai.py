"""A scripted, offline OpenAI Responses API for driving the real codex CLI in tests.

Same usage and rules as :mod:`fake_anthropic` (``--port 0 --log FILE [--script FILE]`` prints
``PORT n``; :class:`FakeOpenAI` in-process), on ``POST /v1/responses``: the SSE stream
response.created, response.output_item.added, response.output_text.delta,
response.output_item.done, response.completed. ``RUN: <cmd>`` becomes a function call of the shell
tool the request offers, shaped after that tool's parameters (codex 0.171 offers
``exec_command`` taking ``cmd``); a ``function_call_output`` as the last input gives
``Done: <first 200 chars>``.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any

try:
    from .fake_anthropic import (
        JSON,
        FakeServer,
        Reply,
        done_text,
        rule_reply,
        serve_main,
        sse,
    )
except ImportError:  # run as a script: the sibling module is on sys.path, not the package
    from fake_anthropic import (  # type: ignore[no-redef,import-not-found]
        JSON,
        FakeServer,
        Reply,
        done_text,
        rule_reply,
        serve_main,
        sse,
    )

# Shell tools codex has offered across versions, most recent first.
_SHELL_TOOLS = ("exec_command", "shell_command", "shell", "local_shell")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or part.get("output") or ""))
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return ""


def _function_tools(body: JSON) -> dict[str, JSON]:
    tools: dict[str, JSON] = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if name:
                tools[str(name)] = tool
    return tools


def shell_call(command: str, tools: dict[str, JSON]) -> tuple[str, JSON]:
    """The (tool name, arguments) running ``command`` with the shell tool the request offers."""
    for name in _SHELL_TOOLS:
        tool = tools.get(name)
        if tool is None:
            continue
        params = tool.get("parameters") or (tool.get("function") or {}).get("parameters") or {}
        properties = params.get("properties") or {}
        if "cmd" in properties:
            return name, {"cmd": command}
        command_type = (properties.get("command") or {}).get("type")
        if command_type == "array":
            return name, {"command": ["bash", "-lc", command]}
        return name, {"command": command}
    return "exec_command", {"cmd": command}


def openai_reply(body: JSON) -> Reply:
    """The rule-based reply for one Responses request."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    items = [item for item in items or [] if isinstance(item, dict)]
    # A tool output after the last user message means the tool call just ran.
    for item in reversed(items):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            return Reply(text=done_text(_text_of(item.get("output"))))
        if item.get("role") == "user":
            break
    user_texts = [_text_of(i.get("content")) for i in items if i.get("role") == "user"]
    reply = rule_reply(user_texts[-1] if user_texts else "")
    if reply.tool == "$shell":
        name, arguments = shell_call(str(reply.tool_input["command"]), _function_tools(body))
        return Reply(tool=name, tool_input=arguments, sleep=reply.sleep, hold=reply.hold)
    if reply.tool is not None and reply.tool.startswith("$"):
        return Reply(text="OK", sleep=reply.sleep, hold=reply.hold)
    return reply


def _output_item(reply: Reply, status: str) -> JSON:
    if reply.tool is not None:
        return {
            "type": "function_call",
            "id": "fc_" + uuid.uuid4().hex[:24],
            "call_id": "call_" + uuid.uuid4().hex[:24],
            "name": reply.tool,
            "arguments": json.dumps(reply.tool_input),
            "status": status,
        }
    content = [{"type": "output_text", "text": reply.text, "annotations": []}]
    return {
        "type": "message",
        "id": "msg_" + uuid.uuid4().hex[:24],
        "role": "assistant",
        "status": status,
        "content": content if status == "completed" else [],
    }


def _response(response_id: str, model: str, status: str, output: list[JSON]) -> JSON:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }


def response_events(reply: Reply, model: str) -> Iterator[bytes]:
    """The SSE stream of a Responses reply."""
    response_id = "resp_" + uuid.uuid4().hex[:24]
    done = _output_item(reply, "completed")
    added = {**done, "status": "in_progress"}
    if done["type"] == "message":
        added["content"] = []
    yield sse(
        "response.created",
        {"type": "response.created", "response": _response(response_id, model, "in_progress", [])},
    )
    yield sse(
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": added},
    )
    if done["type"] == "message":
        yield sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": done["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": reply.text,
            },
        )
    else:
        yield sse(
            "response.function_call_arguments.done",
            {
                "type": "response.function_call_arguments.done",
                "item_id": done["id"],
                "output_index": 0,
                "arguments": done["arguments"],
            },
        )
    yield sse(
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    )
    yield sse(
        "response.completed",
        {
            "type": "response.completed",
            "response": _response(response_id, model, "completed", [done]),
        },
    )


class FakeOpenAI(FakeServer):
    """The fake OpenAI Responses API (in-process)."""

    def is_model_path(self, path: str) -> bool:
        return path in ("/v1/responses", "/v1/chat/completions")

    def handle_post(self, path: str, body: JSON) -> tuple[int, JSON | Iterator[bytes], Reply]:
        if path != "/v1/responses":
            error = {"error": {"type": "invalid_request_error", "message": f"no route {path}"}}
            return 404, error, Reply()
        reply = self.next_scripted() or openai_reply(body)
        if reply.status != 200:
            error = {"error": {"type": "invalid_request_error", "message": reply.text}}
            return reply.status, error, reply
        model = str(body.get("model") or "fake-model")
        if body.get("stream", True):
            return 200, response_events(reply, model), reply
        return (
            200,
            _response(
                "resp_" + uuid.uuid4().hex[:24],
                model,
                "completed",
                [_output_item(reply, "completed")],
            ),
            reply,
        )

    def handle_get(self, path: str) -> tuple[int, JSON]:
        if path.startswith("/v1/models"):
            return 200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
        return 200, {}


if __name__ == "__main__":
    sys.exit(serve_main(FakeOpenAI))

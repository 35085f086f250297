"""mcp/protocol.py: the tools-only MCP server, message by message (no daemon, no SDK)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.mcp.test_mcp_server import TOOL_NAMES
from volee_desktop.mcp import protocol
from volee_desktop.mcp.protocol import Param, RequestError, Server, Tool, ToolError
from volee_desktop.mcp.tools import TOOLS, server

SEEN: list[tuple[Any, dict[str, Any]]] = []


async def echo(session: Any, args: dict[str, Any]) -> Any:
    SEEN.append((session, args))
    if args["text"] == "refuse":
        raise ToolError("not that one")
    if args["text"] == "crash":
        raise RuntimeError("a bug")
    if args["text"] == "list":
        return [1, 2]
    return {"said": args["text"], "loud": args["loud"], "to": args["to"]}


ECHO = Tool(
    "echo",
    "Say it back.",
    echo,
    (
        Param("text", "string", "what to say", required=True),
        Param("loud", "boolean", default=False),
        Param("to", "array"),
    ),
)


@pytest.fixture
def srv() -> Server:
    SEEN.clear()
    return Server.of("t", "9.9", "for tests", [ECHO])


async def ask(srv: Server, method: str, params: Any = None, rid: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    reply = await srv.handle(message, "the session")
    assert reply is not None
    assert reply["jsonrpc"] == "2.0"
    return reply


async def test_initialize_keeps_a_known_revision_and_offers_the_newest_otherwise(
    srv: Server,
) -> None:
    for asked, spoken in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2026-07-28", protocol.VERSIONS[0]),
        (None, protocol.VERSIONS[0]),
    ]:
        reply = await ask(srv, "initialize", {"protocolVersion": asked, "capabilities": {}})
        assert reply["id"] == 1
        assert reply["result"] == {
            "protocolVersion": spoken,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "t", "version": "9.9"},
            "instructions": "for tests",
        }
    assert protocol.VERSIONS[0] == "2025-11-25"


async def test_ping_answers_empty_and_an_unknown_method_is_not_found(srv: Server) -> None:
    assert (await ask(srv, "ping", rid="p"))["result"] == {}
    assert (await ask(srv, "ping", rid="p"))["id"] == "p"
    reply = await ask(srv, "server/discover", {})
    assert reply["error"]["code"] == protocol.METHOD_NOT_FOUND == -32601
    assert "server/discover" in reply["error"]["message"]
    assert "result" not in reply


async def test_notifications_and_responses_get_no_answer(srv: Server) -> None:
    assert await srv.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, None) is None
    assert await srv.handle({"jsonrpc": "2.0", "id": 3, "result": {}}, None) is None


async def test_malformed_messages_get_an_error_naming_what_is_wrong(srv: Server) -> None:
    batch = await srv.handle([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None)
    assert batch is not None
    assert batch["error"]["code"] == protocol.INVALID_REQUEST == -32600
    assert batch["id"] is None
    for bad_id in (True, 1.5, None, [1]):
        reply = await srv.handle({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}, None)
        assert reply is not None
        assert reply["error"]["code"] == protocol.INVALID_REQUEST, bad_id
    reply = await ask(srv, "tools/list", params=[1])
    assert reply["error"]["code"] == protocol.INVALID_PARAMS == -32602
    assert reply["id"] == 1


async def test_tools_list_gives_each_schema(srv: Server) -> None:
    (listed,) = (await ask(srv, "tools/list"))["result"]["tools"]
    assert listed == {
        "name": "echo",
        "description": "Say it back.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "what to say"},
                "loud": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": False},
                "to": {
                    "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                    "default": None,
                },
            },
            "required": ["text"],
        },
    }


async def test_a_call_gets_checked_arguments_with_defaults_and_returns_text_and_structure(
    srv: Server,
) -> None:
    reply = await ask(srv, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert SEEN == [("the session", {"text": "hi", "loud": False, "to": None})]
    result = reply["result"]
    assert result["structuredContent"] == {"said": "hi", "loud": False, "to": None}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["content"][0]["type"] == "text"
    assert "isError" not in result
    listed = await ask(srv, "tools/call", {"name": "echo", "arguments": {"text": "list"}})
    assert listed["result"]["structuredContent"] == {"result": [1, 2]}
    given = {"text": "x", "loud": True, "to": ["a", "b"], "extra": 1}
    await ask(srv, "tools/call", {"name": "echo", "arguments": given})
    assert SEEN[-1][1] == {"text": "x", "loud": True, "to": ["a", "b"]}


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "echo needs 'text'"),
        ({"text": None}, "'text' must be a string, not null"),
        ({"text": 3}, "'text' must be a string, not 3"),
        ({"text": "x", "loud": "yes"}, "'loud' must be a boolean"),
        ({"text": "x", "to": "human"}, "'to' must be a list of strings"),
        ({"text": "x", "to": ["a", 1]}, "'to' must be a list of strings"),
        ([1], "the arguments of echo must be an object"),
    ],
)
async def test_bad_arguments_are_a_tool_error_the_model_reads(
    srv: Server, arguments: Any, said: str
) -> None:
    reply = await ask(srv, "tools/call", {"name": "echo", "arguments": arguments})
    assert reply["result"]["isError"] is True
    assert said in reply["result"]["content"][0]["text"]
    assert SEEN == []


async def test_a_tools_refusal_is_its_result_and_a_bug_is_an_internal_error(srv: Server) -> None:
    refused = await ask(srv, "tools/call", {"name": "echo", "arguments": {"text": "refuse"}})
    assert refused["result"] == {
        "content": [{"type": "text", "text": "not that one"}],
        "isError": True,
    }
    crashed = await ask(srv, "tools/call", {"name": "echo", "arguments": {"text": "crash"}})
    assert crashed["error"]["code"] == protocol.INTERNAL_ERROR == -32603
    assert "a bug" not in crashed["error"]["message"]
    unknown = await ask(srv, "tools/call", {"name": "nope"})
    assert unknown["error"]["code"] == protocol.INVALID_PARAMS
    assert "'nope'" in unknown["error"]["message"]
    no_args = await ask(srv, "tools/call", {"name": "echo"})
    assert "echo needs 'text'" in no_args["result"]["content"][0]["text"]


def test_parse_and_encode() -> None:
    assert protocol.parse(b'{"a": 1}') == {"a": 1}
    with pytest.raises(RequestError) as bad:
        protocol.parse(b"{nope")
    assert bad.value.code == protocol.PARSE_ERROR == -32700
    with pytest.raises(RequestError):
        protocol.parse(b"[" * 100_000)
    assert protocol.encode({"b": "é"}) == '{"b":"é"}'.encode()


def test_volees_tools_each_have_a_description_and_an_object_schema() -> None:
    names = [t.name for t in TOOLS]
    assert names == TOOL_NAMES
    s = server()
    assert (s.name, list(s.tools)) == ("volee", names)
    for tool in TOOLS:
        listing = tool.listing()
        assert listing["description"]
        assert listing["inputSchema"]["type"] == "object"
    required = {t.name: t.listing()["inputSchema"]["required"] for t in TOOLS}
    assert required["post_message"] == ["to", "body"]
    assert required["list_workers"] == []


async def test_each_refusal_says_what_is_wrong_and_keeps_the_request_id(
    srv: Server, caplog: pytest.LogCaptureFixture
) -> None:
    batch = await srv.handle([], None)
    assert batch == protocol.error_reply(
        None, protocol.INVALID_REQUEST, "a JSON-RPC message is one JSON object"
    )
    bad_id = await srv.handle({"jsonrpc": "2.0", "id": None, "method": "ping"}, None)
    assert bad_id == protocol.error_reply(
        None, protocol.INVALID_REQUEST, "a request's id is a string or a number"
    )
    bad_params = await ask(srv, "ping", params="x", rid=7)
    assert bad_params == protocol.error_reply(
        7, protocol.INVALID_PARAMS, "params must be an object"
    )
    unknown = await ask(srv, "nope", rid=8)
    assert unknown == protocol.error_reply(
        8, protocol.METHOD_NOT_FOUND, "this server has no method 'nope'"
    )
    unhashable = await ask(srv, "tools/call", {"name": ["echo"]}, rid=9)
    assert unhashable["error"]["code"] == protocol.INVALID_PARAMS
    with caplog.at_level("ERROR", logger="volee_desktop.mcp.protocol"):
        crashed = await ask(srv, "tools/call", {"name": "echo", "arguments": {"text": "crash"}}, 10)
    assert crashed == protocol.error_reply(
        10, protocol.INTERNAL_ERROR, "tools/call failed inside volee"
    )
    assert [r.getMessage() for r in caplog.records] == ["the MCP request tools/call failed"]
    assert caplog.records[0].exc_info is not None


async def test_a_long_bad_value_is_cut_at_80_characters_in_the_message(srv: Server) -> None:
    value = "y" * 200
    reply = await ask(srv, "tools/call", {"name": "echo", "arguments": {"text": "x", "to": value}})
    said = reply["result"]["content"][0]["text"]
    assert said == f"'to' must be a list of strings, not {json.dumps(value)[:80]}"


def test_the_text_is_indented_json_with_the_characters_as_they_are() -> None:
    value = {"body": "café", "to": ["a", "b"]}
    text = protocol.result_of(value)["content"][0]["text"]
    assert text == '{\n  "body": "café",\n  "to": [\n    "a",\n    "b"\n  ]\n}'
    assert protocol.encode({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'.encode()


def test_a_parse_error_says_why() -> None:
    with pytest.raises(RequestError, match=r"^not JSON: Expecting"):
        protocol.parse(b"{nope")

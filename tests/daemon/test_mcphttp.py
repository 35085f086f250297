"""MCP over HTTP (daemon/serving/mcphttp.py): served to agents only, known from the TCP peer.

The clients are real processes (tests/fakes/mcp_http_client.py): run as a generic agent's
program they are that agent; run from the test they are the person.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import close_stopping_agents
from tests.daemon.test_missions import call
from tests.polling import until
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.serving.mcphttp import MAX_BODY, HttpError, parse_head
from volee_desktop.paths import dirs

pytestmark = pytest.mark.e2e

CLIENT = Path(__file__).resolve().parents[1] / "fakes" / "mcp_http_client.py"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
}


def post(to: str, body: str, rid: int = 2) -> dict[str, Any]:
    arguments = {"to": [to], "body": body}
    params = {"name": "post_message", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


@pytest.fixture
async def daemon(fake_claude: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await close_stopping_agents(d)


def url_of(d: Daemon, agent: str = "x") -> str:
    assert d.mcp_http is not None
    url = d.mcp_http.url(agent)
    assert url is not None
    return url


async def as_agent(
    d: Daemon, tmp: Path, requests: list[dict[str, Any]], *, name: str = "client", path: str = ""
) -> tuple[str, list[dict[str, Any]]]:
    """Run the raw client as a generic agent's program; its id and the answers it got."""
    out = tmp / f"{name}.json"
    view = await call(
        d,
        "agents.spawn",
        harness="generic",
        name=name,
        cwd=str(tmp),
        argv=[
            sys.executable,
            str(CLIENT),
            "raw",
            url_of(d, path or "self"),
            str(out),
            json.dumps(requests),
        ],
    )
    answers = await until(
        lambda: out.exists() and json.loads(out.read_text()), what="its answers", timeout=20
    )
    fix = view["id"]
    return fix, answers


def as_person(url: str, tmp: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = tmp / "person.json"
    subprocess.run(
        [sys.executable, str(CLIENT), "raw", url, str(out), json.dumps(requests)],
        check=True,
        timeout=60,
    )
    answers: list[dict[str, Any]] = json.loads(out.read_text())
    return answers


async def test_an_agent_uses_the_tools_over_http_with_no_process_between(
    daemon: Daemon, tmp_path: Path
) -> None:
    requests: list[dict[str, Any]] = [
        {"body": INIT},
        {"body": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
        {"body": {"jsonrpc": "2.0", "id": "l", "method": "tools/list"}},
        {"body": post("human", "hello over http")},
        {"method": "GET", "headers": {"Accept": "text/event-stream"}},
        {"method": "DELETE"},
    ]
    agent, answers = await as_agent(daemon, tmp_path, requests)
    init, note, listed, posted, get, delete = answers
    assert init["status"] == 200
    assert init["headers"]["Content-Type"] == "application/json"
    assert "Mcp-Session-Id" not in init["headers"]  # stateless: nothing to lose in a restart
    assert init["body"]["result"]["protocolVersion"] == "2025-06-18"
    assert init["body"]["result"]["serverInfo"]["name"] == "volee"
    assert (note["status"], note["body"]) == (202, "")
    assert len(listed["body"]["result"]["tools"]) == 8
    message = posted["body"]["result"]["structuredContent"]["message"]
    assert daemon.service.registry.messages[message].sender == agent
    assert (get["status"], get["headers"]["Allow"]) == (405, "POST")
    assert delete["status"] == 405
    assert daemon.mcp_http is not None
    status = daemon.mcp_http.status()
    assert status["opened"] == 1  # one keep-alive connection for all six
    assert status["requests"] == 6
    assert status["refused"] == 0
    assert (await call(daemon, "daemon.status"))["extra"]["mcp_http"]["url"] == url_of(daemon, "")


async def test_the_persons_processes_are_refused_and_nothing_is_done(
    daemon: Daemon, tmp_path: Path
) -> None:
    (answer,) = await asyncio.to_thread(
        as_person, url_of(daemon), tmp_path, [{"body": post("human", "from a web page?")}]
    )
    assert answer["status"] == 403
    assert "serves the agents volee runs" in answer["body"]
    assert "volee mcp" in answer["body"]
    # Found through the socket tables: the client's process, descending from no agent.
    assert "descends from no agent volee knows" in answer["body"]
    assert answer["headers"]["Connection"] == "close"
    assert not daemon.service.registry.messages
    assert daemon.mcp_http is not None
    assert daemon.mcp_http.status()["refused"] == 1


async def test_a_browser_origin_or_another_host_name_is_refused_even_for_an_agent(
    daemon: Daemon, tmp_path: Path
) -> None:
    assert daemon.mcp_http is not None
    port = daemon.mcp_http.port
    requests: list[dict[str, Any]] = [
        {"body": post("human", "a"), "headers": {"Origin": "https://evil.example"}},
        {"body": post("human", "b"), "headers": {"Host": f"evil.example:{port}"}},
        {"body": post("human", "c"), "headers": {"Host": f"localhost:{port}"}},
    ]
    _agent, (origin, host, localhost) = await as_agent(daemon, tmp_path, requests)
    assert origin["status"] == 403
    assert "web pages" in origin["body"]
    assert host["status"] == 403
    assert "evil.example" in host["body"]
    assert localhost["status"] == 200
    bodies = [m.body for m in daemon.service.registry.messages.values()]
    assert bodies == ["c"]


async def test_another_agents_name_in_the_url_is_recorded_and_the_caller_stays_itself(
    daemon: Daemon, tmp_path: Path
) -> None:
    other = await call(daemon, "agents.spawn", harness="generic", argv=["sleep", "30"], name="o")
    requests = [{"body": post("human", "as whom?")}, {"body": post("human", "again", 3)}]
    agent, answers = await as_agent(daemon, tmp_path, requests, path=other["id"])
    assert [a["status"] for a in answers] == [200, 200]
    senders = {m.sender for m in daemon.service.registry.messages.values()}
    assert senders == {agent}
    timeline = await call(daemon, "agents.timeline", agent=agent)
    refused = [e for e in timeline if e.get("type") == "request-refused"]
    assert len(refused) == 1
    assert f"the URL says /mcp/{other['id']}" in refused[0]["reason"]

    posing, _ = await as_agent(daemon, tmp_path, requests[:1], name="posing", path="human")
    senders = {m.sender for m in daemon.service.registry.messages.values()}
    assert senders == {agent, posing}
    timeline = await call(daemon, "agents.timeline", agent=posing)
    (refused,) = [e for e in timeline if e.get("type") == "request-refused"]
    assert "use volee's MCP tools as the person (the URL says /mcp/human)" in refused["reason"]


async def test_bad_requests_get_a_clear_http_error_and_the_endpoint_goes_on(
    daemon: Daemon, tmp_path: Path
) -> None:
    assert daemon.mcp_http is not None
    head = f"POST /mcp/x HTTP/1.1\r\nHost: 127.0.0.1:{daemon.mcp_http.port}\r\n"
    requests: list[dict[str, Any]] = [
        {"body": "{not json"},
        {"body": INIT, "headers": {"MCP-Protocol-Version": "1999-01-01"}},
        {"body": INIT, "path": "/other"},
        {"raw": "GARBAGE\r\n\r\n"},
        {"raw": f"{head}Content-Length: {MAX_BODY + 1}\r\n\r\n"},
        {"raw": f"{head}Transfer-Encoding: chunked\r\n\r\n"},
        {"raw": "POST /mcp/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"},
        {"raw": "POST /mcp/x HTTP/1.1\r\n" + "X: " + "y" * 20_000 + "\r\n\r\n"},
        {"body": post("human", "still here")},
    ]
    _agent, answers = await as_agent(daemon, tmp_path, requests)
    statuses = [a["status"] for a in answers]
    assert statuses == [400, 400, 404, 400, 413, 411, 400, 400, 200]
    assert answers[0]["body"]["error"]["code"] == -32700
    assert "1999-01-01" in answers[1]["body"]
    assert "/mcp/<agent>" in answers[2]["body"]
    assert "most is" in answers[4]["body"]
    assert [m.body for m in daemon.service.registry.messages.values()] == ["still here"]


async def test_the_sdks_streamable_http_client_works_as_is(daemon: Daemon, tmp_path: Path) -> None:
    out = tmp_path / "sdk.json"
    view = await call(
        daemon,
        "agents.spawn",
        harness="generic",
        name="sdk",
        cwd=str(tmp_path),
        argv=[sys.executable, str(CLIENT), "sdk", url_of(daemon, "sdk"), str(out)],
    )
    seen = await until(
        lambda: out.exists() and json.loads(out.read_text()), what="the SDK client", timeout=60
    )
    assert seen["server"] == "volee"
    assert "post_message" in seen["tools"]
    assert seen["posted_error"] is False
    message = seen["posted"]["message"]
    assert daemon.service.registry.messages[message].sender == view["id"]
    assert seen["bad"][0] is True
    assert "'to' must be a list of strings" in seen["bad"][1]


async def test_the_port_is_kept_across_restarts_and_a_taken_one_is_said(fake_claude: Path) -> None:
    d = await Daemon.start(dirs())
    assert d.mcp_http is not None
    port = d.mcp_http.port
    await d.close()
    d = await Daemon.start(dirs())
    try:
        assert d.mcp_http is not None
        assert (d.mcp_http.port, d.mcp_http.moved_from) == (port, None)
    finally:
        await d.close()
    taker = socket.socket()
    taker.bind(("127.0.0.1", port))
    taker.listen()
    try:
        d = await Daemon.start(dirs())
        try:
            assert d.mcp_http is not None
            assert d.mcp_http.port != port
            assert d.mcp_http.status()["moved_from"] == port
        finally:
            await d.close()
    finally:
        taker.close()


async def test_claude_agents_get_the_endpoint_and_without_it_the_relay(
    fake_claude: Path, tmp_path: Path
) -> None:
    d = await Daemon.start(dirs())
    try:
        ctx = d.agents.context("ag_1", "claude")
        assert ctx.mcp_url == url_of(d, "ag_1")
    finally:
        await d.close()
    d = await Daemon.start(dirs(), serve=False)
    try:
        assert d.mcp_http is None
        assert d.agents.context("ag_1", "claude").mcp_url is None
    finally:
        await d.close()


def test_parse_head_reads_a_request_and_refuses_what_is_not_http() -> None:
    request = parse_head(b"POST /mcp/a?x=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\nX-A:  b ")
    assert (request.method, request.path) == ("POST", "/mcp/a")
    assert request.headers == {"host": "h", "connection": "close", "x-a": "b"}
    assert request.keep_alive is False
    assert parse_head(b"GET / HTTP/1.0").keep_alive is True
    for bad in (b"", b"POST /", b"POST / HTTP/2", b"POST / HTTP/1.1\r\nno colon", b"A B C D"):
        with pytest.raises(HttpError) as refused:
            parse_head(bad)
        assert refused.value.status == 400
        assert refused.value.close

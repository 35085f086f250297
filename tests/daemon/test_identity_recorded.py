"""Issue 22, findings 1 and 7 with an in-process daemon: the MCP endpoint's refusals in the
caller's timeline, a TCP peer no one can be named for refused like the person, and a
mismatched ``VOLEE_AGENT`` inside an agent recorded as refused.

The agent's client is a real process (tests/fakes/mcp_http_client.py) run as a generic
agent's program, as in test_mcphttp.py.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.test_mcphttp import INIT, as_agent, daemon, post  # noqa: F401
from tests.daemon.test_missions import call
from tests.polling import until
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.serving.mcphttp import Request
from volee_desktop.ipc.caller import Caller

pytestmark = pytest.mark.e2e


async def test_host_and_origin_refusals_are_in_the_agents_timeline(
    daemon: Daemon,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert daemon.mcp_http is not None
    port = daemon.mcp_http.port
    requests: list[dict[str, Any]] = [
        {"body": post("human", "a"), "headers": {"Origin": "https://evil.example"}},
        {"body": post("human", "b"), "headers": {"Host": f"evil.example:{port}"}},
        # The same again within 30 s: logged, recorded once.
        {"body": post("human", "b"), "headers": {"Host": f"evil.example:{port}"}},
        # localhost is the loopback too: served (docs/trust-model.md).
        {"body": post("human", "c"), "headers": {"Host": f"localhost:{port}"}},
    ]
    agent, answers = await as_agent(daemon, tmp_path, requests)
    assert [a["status"] for a in answers] == [403, 403, 403, 200]
    timeline = await call(daemon, "agents.timeline", agent=agent)
    reasons = [
        e["reason"]
        for e in timeline
        if e.get("type") == "request-refused" and e.get("method") == "mcp.http"
    ]
    assert reasons == [
        "tried to send an MCP request from a web page (Origin https://evil.example)",
        f"tried to send an MCP request for host 'evil.example:{port}'",
    ], timeline
    assert daemon.mcp_http.status()["refused"] == 3


class _Conn:
    def __init__(self, caller: Caller) -> None:
        self.caller = caller


@pytest.mark.parametrize(
    "caller",
    [
        Caller.unknown(None, "no process of yours holds the socket"),
        Caller.unknown(77, "its process (pid 77) ended while volee identified it"),
        Caller.person(5, "descends from no agent volee knows"),
    ],
)
async def test_unidentified_tcp_peer_is_refused_like_the_person(
    daemon: Daemon,  # noqa: F811
    caller: Caller,
) -> None:
    http = daemon.mcp_http
    assert http is not None
    request = Request(
        "POST", "/mcp/x", {"host": f"127.0.0.1:{http.port}"}, json.dumps(INIT).encode()
    )
    session = daemon.mcp.session(_Conn(caller), None)  # type: ignore[arg-type]
    status, body, _ = await http._answer(request, session, _Conn(caller), set())  # type: ignore[arg-type]
    assert status == 403
    assert b"serves the agents volee runs" in body
    assert caller.how.encode() in body


async def test_mismatched_volee_agent_inside_an_agent_is_refused_in_its_timeline(
    daemon: Daemon,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Inside the agent, a command run with VOLEE_AGENT=human (twice: recorded once per 30 s).
    out = tmp_path / "whoami.json"
    whoami = f"{shlex.quote(sys.executable)} -m volee_desktop.cli whoami --json"
    script = f"VOLEE_AGENT=human {whoami} > {out}.1; VOLEE_AGENT=human {whoami} > {out}.part"
    view = await call(
        daemon,
        "agents.spawn",
        harness="generic",
        name="claimer",
        cwd=str(tmp_path),
        argv=["sh", "-c", f"{script}; mv {out}.part {out}; exec sleep 60"],
    )
    who = await until(
        lambda: out.exists() and json.loads(out.read_text()), what="its whoami", timeout=20
    )
    assert (who["kind"], who["agent"]) == ("agent", view["id"])
    timeline = await call(daemon, "agents.timeline", agent=view["id"])
    reasons = [e["reason"] for e in timeline if e.get("type") == "request-refused"]
    assert reasons == ["claimed to be the person (VOLEE_AGENT=human in its environment)"]

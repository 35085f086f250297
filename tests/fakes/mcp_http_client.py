"""An MCP client over HTTP, run as an agent's program (or as the person's) by the tests.

python mcp_http_client.py raw URL OUT REQUESTS_JSON
    sends each request of REQUESTS_JSON (a list of {"method", "path", "headers", "body"},
    body a JSON value or a string sent as it is, "raw": bytes written as they are) on
    one keep-alive connection to URL's host, and writes the answers to OUT (a JSON list
    of {"status", "headers", "body"}); a dropped connection ends the list with
    {"status": null, "error": ...}.
python mcp_http_client.py sdk URL OUT
    the ``mcp`` SDK's streamable HTTP client: initialize, list the tools, post a message
    to the human, read messages; writes what it saw to OUT.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
from typing import Any
from urllib.parse import urlsplit


def _write(out: str, data: Any) -> None:
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, out)


def raw(url: str, out: str, requests: list[dict[str, Any]]) -> None:
    parts = urlsplit(url)
    assert parts.hostname
    assert parts.port
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    answers: list[dict[str, Any]] = []
    for request in requests:
        try:
            if "raw" in request:
                sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
                sock.sendall(request["raw"].encode())
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
                sock.close()
                head, _, body = data.partition(b"\r\n\r\n")
                status = int(head.split(b" ")[1]) if head else None
                answers.append({"status": status, "headers": {}, "body": body.decode()})
                continue
            body = request.get("body")
            if body is not None and not isinstance(body, str):
                body = json.dumps(body)
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            headers.update(request.get("headers", {}))
            conn.request(
                request.get("method", "POST"), request.get("path", parts.path), body, headers
            )
            reply = conn.getresponse()
            text = reply.read().decode()
            try:
                value: Any = json.loads(text)
            except ValueError:
                value = text
            answers.append(
                {"status": reply.status, "headers": dict(reply.getheaders()), "body": value}
            )
            if reply.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        except (OSError, http.client.HTTPException) as exc:
            answers.append({"status": None, "error": repr(exc)})
            conn.close()
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    _write(out, answers)


async def sdk(url: str, out: str) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    seen: dict[str, Any] = {}
    async with streamable_http_client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.server_info.name
            seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            posted = await session.call_tool(
                "post_message", {"to": ["human"], "body": "hello over http"}
            )
            seen["posted"] = posted.structured_content
            seen["posted_error"] = posted.is_error
            bad = await session.call_tool("post_message", {"to": "human", "body": "x"})
            seen["bad"] = [bad.is_error, bad.content[0].text]  # type: ignore[union-attr]
    _write(out, seen)


if __name__ == "__main__":
    mode, url, out = sys.argv[1:4]
    if mode == "raw":
        raw(url, out, json.loads(sys.argv[4]))
    else:
        import anyio

        anyio.run(sdk, url, out)

"""Who and what the MCP endpoint over HTTP admits (``daemon/serving/mcphttp.py``), as pure checks.

Two steps, both before a request reaches the tools:

- the peer (``unidentified``): a TCP connection is identified only when the socket tables
  name a process of the daemon's own user that holds its other end; anything else is a
  caller volee cannot identify (``unknown``: refused);
- each request (``admit``): served at ``/mcp`` or ``/mcp/<agent>`` only, never with an
  ``Origin`` (what browsers add), only for ``Host`` ``127.0.0.1:<port>`` or
  ``localhost:<port>`` (both the loopback; a DNS-rebinding page's Host is its own name), and
  only to an agent's process: the person's processes and unknown peers get 403 (the person's
  own MCP client uses ``volee mcp``).

The agent named in the path is a claim (``claim_of``): the endpoint records another
agent's name there in the caller's timeline and serves the caller as itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...ipc.caller import Caller
from ...ipc.transport import PeerCredentials

HOST = "127.0.0.1"


def unidentified(peer: PeerCredentials | None, uid: int) -> str | None:
    """Why the peer of a connection cannot be identified (in words, for its ``unknown``
    caller); None when it is a process of user ``uid``, whose pid identification reads."""
    if peer is None:
        return "no such connection"
    if peer.uid != uid:
        return f"a process of uid {peer.uid}"
    if peer.pid is None:
        return "no process of yours holds the socket"
    return None


@dataclass(frozen=True)
class Refusal:
    """A request answered with an HTTP error before it reaches the tools."""

    status: int
    message: str
    #: What the caller tried, in words: kept in its timeline when it is an agent (None: a
    #: request at another address, or a caller that is no agent, refused as such).
    attempt: str | None = None

    @property
    def counted(self) -> bool:
        """A refusal (403), counted in the endpoint's status; a 404 is only a wrong address."""
        return self.status == 403


def _path(path: str) -> str:
    return path.rstrip("/")


def admit(
    path: str, headers: Mapping[str, str], port: int | None, caller: Caller
) -> Refusal | None:
    """Why a request to ``path`` with ``headers`` (names in lower case), on the endpoint's
    ``port``, from ``caller``, is refused; None when it goes on to the tools."""
    served = _path(path)
    if served != "/mcp" and not served.startswith("/mcp/"):
        return Refusal(404, f"volee serves MCP at /mcp/<agent>, not {path[:80]}")
    if "origin" in headers:
        origin = headers["origin"][:80]
        return Refusal(
            403,
            "volee's MCP endpoint takes no requests from web pages",
            f"send an MCP request from a web page (Origin {origin})",
        )
    host = headers.get("host", "")
    # Both names of the loopback: Claude Code writes the URL it was given (127.0.0.1), and
    # localhost reaches the same socket; a rebinding page's Host is its own name.
    if host not in (f"{HOST}:{port}", f"localhost:{port}"):
        return Refusal(
            403,
            f"volee's MCP endpoint is {HOST}:{port}, not {host[:80]!r}",
            f"send an MCP request for host {host[:80]!r}",
        )
    if not caller.is_agent:
        return Refusal(
            403,
            "volee's MCP endpoint serves the agents volee runs; this connection is not one of "
            f"them ({caller.how}). Use `volee mcp` for an MCP client of yours.",
        )
    return None


def claim_of(path: str) -> str:
    """The agent a request's path names (``/mcp/<agent>``); "" for ``/mcp``."""
    served = _path(path)
    return served[len("/mcp/") :] if served.startswith("/mcp/") else ""


__all__ = ["HOST", "Refusal", "admit", "claim_of", "unidentified"]

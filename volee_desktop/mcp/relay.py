"""``volee mcp``: the MCP server process a harness starts, a relay to the daemon (stdio <-> socket).

Claude Code on Linux needs none: it speaks to the daemon's HTTP endpoint itself
(``daemon/serving/mcphttp.py``).  The relay is for the rest: the person's own MCP client
(``volee mcp``), and Claude Code where the daemon cannot tell who holds a TCP
socket (macOS).  Agents volee launches run this file directly (``python -I -S
relay.py``, with ``VOLEE_SOCKET`` and ``VOLEE_AGENT`` in its environment): stdlib
only, no site start-up, about 3 MiB of its own memory.  The daemon runs the MCP
protocol once for every session (``mcp/protocol.py``, ``daemon/serving/mcphub.py``); this
process only moves lines.

It opens the daemon's socket, asks for an MCP session (``mcp.session``, one request
of volee's protocol), then the rest of the connection is the MCP session: each line
from stdin goes to the daemon, each line from the daemon to stdout.  It reads just
enough of each JSON-RPC message (with the C scanner of ``json``) to keep two facts:

- the handshake (``initialize`` and ``notifications/initialized``): when the daemon
  restarts, the relay connects again and replays it, dropping the second answer, so
  the harness's session goes on;
- the requests the daemon has not answered: when the connection is lost they are
  answered with an error saying so (the model reads it), never left hanging.

A request made while the daemon cannot be reached is answered with the same error.
"""

from __future__ import annotations

import os
import select
import sys
import time

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: typing alone costs more than the relay
if TYPE_CHECKING or __package__:  # `volee mcp`: imported from the package
    from volee_desktop import lean
else:  # run as a file with -I -S: the package's lean module, without the package
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import lean
if TYPE_CHECKING:
    from typing import Any

CONNECT_TIMEOUT = 10.0
#: How long ``initialize`` waits for a daemon that is not there yet (it may be starting).
INITIALIZE_PATIENCE = 10.0
_CHUNK = 65536
UNREACHABLE = -32000  # JSON-RPC "server error" range


def parse(line: bytes) -> Any:
    """The JSON value of one line, or None when it is not JSON."""
    try:
        return lean.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return None


def _id_text(value: object) -> str:
    if isinstance(value, str):
        return lean.quote(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return "null"


def error_line(request_id: object, method: object, message: str) -> bytes:
    """The answer to a request the daemon cannot answer: for a tool call, a tool error (the
    model reads it, as from any tool); for anything else, a JSON-RPC error."""
    head = '{"jsonrpc": "2.0", "id": ' + _id_text(request_id)
    if method == "tools/call":
        text = lean.quote(message)
        return (
            head + ', "result": {"content": [{"type": "text", "text": ' + text + "}], "
            '"isError": true}}\n'
        ).encode()
    code = str(UNREACHABLE)
    return (
        head + ', "error": {"code": ' + code + ', "message": ' + lean.quote(message) + "}}\n"
    ).encode()


def open_request(agent: str) -> bytes:
    """volee's request that turns the connection into an MCP session for ``agent``."""
    params = '{"agent": ' + (lean.quote(agent) if agent else "null") + "}"
    return ('{"v": 1, "id": 1, "method": "mcp.session", "params": ' + params + "}\n").encode()


class Unreachable(Exception):
    """The daemon cannot be reached (or refused the session): the text says why."""


class Relay:
    """Moves MCP lines between the harness (two fds) and the daemon (a socket)."""

    def __init__(self, socket_path: str, agent: str, stdin: int = 0, stdout: int = 1) -> None:
        self.socket_path = socket_path
        self.agent = agent
        self.stdin = stdin
        self.stdout = stdout
        self.sock: Any = None
        self.from_harness = b""
        self.from_daemon = b""
        self.handshake: list[bytes] = []  # initialize, then notifications/initialized
        self.initialize_id: object = None
        self.swallow: object = None  # the id of a replayed initialize, answered twice
        self.pending: dict[object, tuple[object, object]] = {}  # key -> (id, method)

    # --- the daemon side -------------------------------------------------------------------

    def connect(self) -> None:
        """Connect and open a session (Unreachable); replay the handshake if there was one."""
        try:
            sock = lean.connect(self.socket_path, CONNECT_TIMEOUT)
            try:
                buf = self._open(sock)
            except BaseException:
                sock.close()
                raise
        except OSError as exc:
            raise Unreachable(
                f"cannot reach the volee daemon at {self.socket_path} ({exc})"
            ) from None
        line, _, rest = buf.partition(b"\n")
        reply = parse(line)
        if not isinstance(reply, dict) or "error" in reply:
            sock.close()
            error = reply.get("error") if isinstance(reply, dict) else None
            said = error.get("message") if isinstance(error, dict) else None
            raise Unreachable(f"the volee daemon refused the MCP session: {said or line[:200]!r}")
        sock.settimeout(None)
        self.sock = sock
        self.from_daemon = rest
        if self.handshake:
            self.swallow = self.initialize_id
            for saved in self.handshake:
                self._to_daemon(saved)

    def _open(self, sock: Any) -> bytes:
        """Ask for the MCP session; what the daemon said, up to its first line break."""
        sock.sendall(open_request(self.agent))
        buf = b""
        while b"\n" not in buf:
            chunk = sock.recv(_CHUNK)
            if not chunk:
                raise Unreachable("the daemon closed the connection")
            buf += chunk
        return buf

    def disconnect(self, why: str) -> None:
        """The connection is lost: answer what it left unanswered."""
        if self.sock is not None:
            self.sock.close()
        self.sock = None
        self.from_daemon = b""
        self.swallow = None
        pending, self.pending = self.pending, {}
        for request_id, method in pending.values():
            said = f"the volee daemon is not reachable: {why}"
            self._to_harness(error_line(request_id, method, said))

    def _to_daemon(self, line: bytes) -> None:
        try:
            self.sock.sendall(line + b"\n")
        except OSError as exc:
            self.disconnect(f"the connection was lost ({exc})")

    def on_daemon_line(self, line: bytes) -> None:
        message = parse(line)
        if isinstance(message, dict) and "method" not in message and "id" in message:
            request_id = message["id"]
            if self.swallow is not None and request_id == self.swallow:
                self.swallow = None  # the replayed initialize's answer: the harness has one
                return
            self.pending.pop(_key(request_id), None)
        self._to_harness(line + b"\n")

    # --- the harness side ------------------------------------------------------------------

    def _to_harness(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.stdout, view)
            view = view[written:]

    def on_harness_line(self, line: bytes) -> None:
        message = parse(line)
        method = message.get("method") if isinstance(message, dict) else None
        is_request = isinstance(message, dict) and method is not None and "id" in message
        if method == "initialize" and is_request:
            assert isinstance(message, dict)
            self.handshake = [line]
            self.initialize_id = message["id"]
        elif method == "notifications/initialized":
            self.handshake = [*self.handshake[:1], line]
        if self.sock is None:
            patience = INITIALIZE_PATIENCE if method == "initialize" else 0.0
            why = self._reconnect(patience, replay=method != "initialize")
            if why is not None:
                if is_request:
                    assert isinstance(message, dict)
                    self._to_harness(error_line(message["id"], method, why))
                return
        if is_request:
            assert isinstance(message, dict)
            self.pending[_key(message["id"])] = (message["id"], method)
        self._to_daemon(line)

    def _reconnect(self, patience: float, *, replay: bool) -> str | None:
        """Connect (retrying for ``patience`` seconds); None once connected, else why not."""
        saved = self.handshake
        if not replay:
            self.handshake = []  # this line is the handshake: it is sent as it comes
        deadline = time.monotonic() + patience
        try:
            while True:
                try:
                    self.connect()
                    return None
                except Unreachable as exc:
                    if time.monotonic() >= deadline:
                        return f"the volee daemon is not reachable: {exc}"
                    time.sleep(0.25)
        finally:
            self.handshake = saved

    # --- the loop --------------------------------------------------------------------------

    def run(self) -> int:
        """Relay until the harness closes stdin."""
        poller = select.poll()
        poller.register(self.stdin, select.POLLIN)
        watched: Any = None
        while True:
            if self.sock is not watched:
                if watched is not None:
                    try:
                        poller.unregister(watched)
                    except (KeyError, ValueError, OSError):
                        pass
                watched = self.sock
                if watched is not None:
                    poller.register(watched, select.POLLIN)
            for fd, _events in poller.poll():
                if fd == self.stdin:
                    chunk = os.read(self.stdin, _CHUNK)
                    if not chunk:
                        if self.sock is not None:
                            self.sock.close()
                        return 0
                    self.from_harness += chunk
                    while b"\n" in self.from_harness:
                        line, _, self.from_harness = self.from_harness.partition(b"\n")
                        if line.strip():
                            self.on_harness_line(line)
                elif self.sock is not None and fd == self.sock.fileno():
                    try:
                        chunk = self.sock.recv(_CHUNK)
                    except OSError as exc:
                        self.disconnect(f"the connection was lost ({exc})")
                        continue
                    if not chunk:
                        self.disconnect("the daemon closed the connection (stopped or restarting)")
                        continue
                    self.from_daemon += chunk
                    while self.sock is not None and b"\n" in self.from_daemon:
                        line, _, self.from_daemon = self.from_daemon.partition(b"\n")
                        if line.strip():
                            self.on_daemon_line(line)


def _key(request_id: object) -> object:
    # 1 and "1" are different JSON-RPC ids; True is no id at all.
    return (type(request_id).__name__, request_id)


def main(argv: list[str]) -> int:
    """Entry point (``volee mcp``); the arguments are unused."""
    del argv
    env = os.environ
    path = env.get("VOLEE_SOCKET")
    if not path:
        # Run as `volee mcp` by hand or from a configuration volee did not write.
        from volee_desktop.paths import dirs

        path = str(dirs().socket)
    try:
        return Relay(path, env.get("VOLEE_AGENT", "")).run()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""``volee hook EVENT``: forward a harness hook payload to the daemon, or spool it.

Agents volee launches run this file directly (``python -I -S hookshim.py EVENT``, with
``VOLEE_SOCKET`` and ``VOLEE_SPOOL`` in their environment): stdlib only, no site start-up.

Runs on every hook of every agent, so it imports as little as possible (no
argparse, no asyncio, no platformdirs when VOLEE_HOME is set) and never fails
the harness: whatever happens it exits 0, and a payload it cannot hand over is
written to ``<state>/spool/`` (write, fsync, rename) for the daemon to ingest
when it starts.

It writes and reads its one JSON line with the C halves of ``json`` and ``socket``
(``_json``, ``_socket``): the Python modules pull in ``re`` and ``enum``, which cost two thirds
of the shim's CPU time (``bench/hook.py``).
"""

from __future__ import annotations

import os
import sys
import time
from _json import encode_basestring_ascii as _quote
from _json import make_scanner

# Not `typing.TYPE_CHECKING`: importing typing alone costs more than the rest of the shim.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

TIMEOUT = 5.0


class _Parsing:
    """What ``_json.make_scanner`` reads from a decoder: plain JSON, like ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": -float("inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


def _dumps(params: dict[str, Any]) -> str:
    """``json.dumps`` for the flat dicts the shim sends: str, None, float and int values."""
    parts = []
    for key, value in params.items():
        if value is None:
            text = "null"
        elif isinstance(value, str):
            text = _quote(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            text = repr(value)
        elif isinstance(value, dict):
            text = _dumps(value)
        else:
            raise TypeError(f"cannot send {type(value).__name__} in a hook request")
        parts.append(f"{_quote(key)}: {text}")
    return "{" + ", ".join(parts) + "}"


def _loads(text: str) -> Any:
    """``json.loads`` of one complete JSON value (``ValueError`` when it is not one)."""
    scan: Callable[[str, int], tuple[Any, int]] = make_scanner(_Parsing())  # type: ignore[arg-type]
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"not JSON at {exc.value}") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError(f"extra data after JSON at {end}")
    return value


def _spool(state_spool: str, params: dict[str, object]) -> None:
    os.makedirs(state_spool, mode=0o700, exist_ok=True)
    name = f"{params['key']}.json"
    tmp = os.path.join(state_spool, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, _dumps(params).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, os.path.join(state_spool, name))
    dfd = os.open(state_spool, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def main(argv: list[str]) -> int:
    """Entry point; ``argv`` are the arguments after ``hook``."""
    received_at = time.time()
    event = argv[0] if argv else ""
    try:
        data = sys.stdin.buffer.read(8 << 20)
    except (OSError, ValueError):
        data = b""
    env = os.environ
    params: dict[str, object] = {
        "event": event,
        "payload": data.decode("utf-8", errors="replace"),
        "agent": env.get("VOLEE_AGENT") or None,
        "harness": env.get("VOLEE_HARNESS") or "claude",
        # A key unique to this payload: the daemon commits it with the events, so a
        # payload that is both answered and spooled is still ingested exactly once.
        "key": f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}",
        "received_at": received_at,
    }
    socket_path = env.get("VOLEE_SOCKET")
    spool = env.get("VOLEE_SPOOL")
    if not socket_path or not spool:
        # Run as `volee hook` by hand or by a harness volee did not launch.
        from volee_desktop.paths import dirs

        folders = dirs()
        socket_path, spool = str(folders.socket), str(folders.spool)
    try:
        _send(socket_path, params)
    except Exception as exc:  # any failure: keep the payload, never fail the harness
        try:
            _spool(spool, params)
        except OSError as spool_exc:
            print(
                f"volee hook: daemon unreachable ({exc}) and spool failed: {spool_exc}",
                file=sys.stderr,
            )
    return 0


def _send(path: str, params: dict[str, object]) -> None:
    import _socket

    request = {"v": 1, "id": 1, "method": "hook", "params": params}
    line = _dumps(request).encode() + b"\n"
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TIMEOUT)
        sock.connect(path)
        sock.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            buf += chunk
    finally:
        sock.close()
    reply = _loads(buf.decode("utf-8"))
    if not isinstance(reply, dict):
        raise ConnectionError("the daemon's reply is not a JSON object")
    if "error" in reply:
        raise ConnectionError(reply["error"].get("message", "error"))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

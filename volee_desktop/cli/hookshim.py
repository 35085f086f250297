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
# The largest payload the shim reads; a larger one is refused whole ("too large"), never cut.
MAX_PAYLOAD = 8 << 20


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
    """Entry point; ``argv`` are the arguments after ``hook``.

    Exits 0 whatever happens before, in or after the hand-over (a hook must never fail the
    harness), except when the payload could be kept nowhere: then it says so on stderr and
    exits 1, which the harnesses show in their log without stopping (Claude Code blocks only
    on 2), so nothing is lost silently.
    """
    try:
        return _main(argv)
    except BaseException as exc:  # the harness must never see a traceback
        try:
            print(f"volee hook: failed ({exc!r}); this is a bug in volee", file=sys.stderr)
        except Exception:  # stderr itself may be gone
            pass
        return 0


def _main(argv: list[str]) -> int:
    received_at = time.time()
    event = argv[0] if argv else ""
    try:
        data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
    except (OSError, ValueError):
        data = b""
    too_large = len(data) > MAX_PAYLOAD
    if too_large:
        # Drain the rest so the harness never blocks writing to a closed pipe.
        try:
            while sys.stdin.buffer.read(1 << 20):
                pass
        except (OSError, ValueError):
            pass
        data = b""
        print(
            f"volee hook: the {event} payload is too large (over {MAX_PAYLOAD} bytes); "
            "volee did not read it and records it as rejected",
            file=sys.stderr,
        )
    return hand_over(event, data, received_at, MAX_PAYLOAD if too_large else 0)


def hand_over(event: str, data: bytes, received_at: float, too_large: int = 0) -> int:
    """Send one payload to the daemon, else spool it; 0, or 1 when it was kept nowhere
    (the status-line wrapper, ``statusline.py``, hands its payloads over here too)."""
    env = os.environ
    params: dict[str, object] = {
        "event": event,
        "payload": data.decode("utf-8", errors="replace"),
        "agent": env.get("VOLEE_AGENT") or None,
        # None: the daemon decides (core.model.DEFAULT_HARNESS); the shim imports no volee.
        "harness": env.get("VOLEE_HARNESS") or None,
        # A key unique to this payload: the daemon commits it with the events, so a
        # payload that is both answered and spooled is still ingested exactly once.
        "key": f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}",
        "received_at": received_at,
    }
    if too_large:
        params["too_large"] = too_large
    socket_path = env.get("VOLEE_SOCKET")
    spool = env.get("VOLEE_SPOOL")
    failure: object = None
    if not socket_path or not spool:
        # Run as `volee hook` by hand or by a harness volee did not launch.
        socket_path, spool, failure = _default_places()
    if socket_path:
        try:
            _send(socket_path, params)
            return 0
        except Exception as exc:  # any failure: keep the payload
            failure = exc
    if not spool:
        print(f"volee hook: payload NOT kept: {failure}", file=sys.stderr)
        return 1
    try:
        _spool(spool, params)
    except OSError as spool_exc:
        print(
            f"volee hook: payload NOT kept: the daemon did not take it ({failure}) and the "
            f"spool {spool} is not writable ({spool_exc}); check that folder's owner, "
            "permissions and free space",
            file=sys.stderr,
        )
        return 1
    return 0


def _default_places() -> tuple[str | None, str | None, object]:
    """The socket and the spool of this user, or None for what cannot be used, and why."""
    from volee_desktop import paths

    try:
        folders = paths.dirs()
    except Exception as exc:  # e.g. a runtime folder of another user
        # The socket's folder is unusable, the state folder may not be: spool there.
        try:
            return None, str(paths.state_dir() / "spool"), exc
        except Exception as state_exc:
            return None, None, f"{exc}; {state_exc}"
    try:
        paths.check_private_dir(folders.runtime)
    except OSError as exc:
        return None, str(folders.spool), exc
    return str(folders.socket), str(folders.spool), None


def _send(path: str, params: dict[str, object]) -> None:
    import _socket

    request = {"v": 1, "id": 1, "method": "hook", "params": params}
    line = _dumps(request).encode() + b"\n"
    _check_ours(path)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TIMEOUT)
        sock.connect(path)
        _check_peer(sock, path)
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


def _check_ours(path: str) -> None:
    """Refuse a socket, or a folder of it, that another user owns or may write (the payload
    holds the person's prompt): the same rule as ``ipc.transport.check_server_path``."""
    me = os.geteuid()
    folder = os.path.dirname(path) or "."
    st = os.lstat(folder)
    if st.st_uid != me or st.st_mode & 0o022 or (st.st_mode & 0o170000) != 0o040000:
        raise PermissionError(f"the folder {folder} is not a private folder of yours")
    st = os.lstat(path)
    if st.st_uid != me or (st.st_mode & 0o170000) != 0o140000:
        raise PermissionError(f"{path} is not a socket of yours (owner uid {st.st_uid})")


def _check_peer(sock: Any, path: str) -> None:
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:  # macOS and the BSDs: the owner checks above stand alone
        return
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    uid = int.from_bytes(raw[4:8], sys.byteorder)
    if uid != os.geteuid():
        raise PermissionError(f"{path} is served by uid {uid}, not by you")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""``volee hook EVENT``: forward a harness hook payload to the daemon, or spool it.

Agents volee launches run this file directly (``python -I -S hookshim.py EVENT``, with
``VOLEE_SOCKET`` and ``VOLEE_SPOOL`` in their environment): stdlib only, no site start-up.

Runs on every hook of every agent, so it imports as little as possible (no
argparse, no asyncio, no platformdirs when VOLEE_HOME is set) and never fails
the harness: whatever happens it exits 0, and a payload it cannot hand over is
written to ``<state>/spool/`` (write, fsync, rename) for the daemon to ingest
when it starts.

It writes and reads its one JSON line with the C halves of ``json`` and ``socket``
(``_json``, ``_socket``, through ``lean.py``, which it loads by its folder, not through the
package): the Python modules pull in ``re`` and ``enum``, which cost two thirds of the shim's
CPU time (``bench/hook.py``).  It refuses a socket another user owns or may write to by the
rule every client keeps (``lean.socket_refusal``).
"""

from __future__ import annotations

import os
import sys
import time

# Not `typing.TYPE_CHECKING`: importing typing alone costs more than the rest of the shim.
TYPE_CHECKING = False
if TYPE_CHECKING or __package__:  # `volee hook`: imported from the package
    from volee_desktop import lean
else:  # run as a file with -I -S: the package's lean module, without the package
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import lean
TIMEOUT = 5.0
# The daemon's limit for one request line (ipc.protocol.MAX_MESSAGE; the shim imports no volee).
MAX_MESSAGE = 1 << 20
# The largest payload the shim reads; a larger one is refused whole ("too large"), never cut.
MAX_PAYLOAD = 8 << 20


def _spool(state_spool: str, params: dict[str, object], name: str = "") -> str:
    """Write ``params`` to ``<spool>/<key>.json`` (or ``name``): write, fsync, rename."""
    os.makedirs(state_spool, mode=0o700, exist_ok=True)
    name = name or f"{params['key']}.json"
    tmp = os.path.join(state_spool, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, lean.dumps(params).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    target = os.path.join(state_spool, name)
    os.replace(tmp, target)
    dfd = os.open(state_spool, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return target


def _too_large_for_one_message(payload: str) -> bool:
    # Escaped as JSON a character takes at most 12 bytes (a surrogate pair): most payloads
    # are known to fit without encoding them twice.
    return len(payload) > MAX_MESSAGE // 12 and len(lean.quote(payload)) > MAX_MESSAGE - 4096


def _hand_over_large(socket_path: str, spool: str, params: dict[str, object]) -> None:
    """A payload too large for one message: written to ``.<key>.big`` in the spool, then named
    in a small request, so the connection (which the daemon identifies) vouches for it; a
    spool file alone speaks for nobody (docs/trust-model.md).  If the request fails the file
    becomes an ordinary spool file (an OSError here: kept nowhere, said by the caller)."""
    big = _spool(spool, params, f".{params['key']}.big")
    small = {k: v for k, v in params.items() if k != "payload"}
    small["handover"] = params["key"]
    try:
        _send(socket_path, small)
    except Exception:  # kept: the spool file the daemon takes at its start
        os.replace(big, os.path.join(spool, f"{params['key']}.json"))


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
            if spool and _too_large_for_one_message(str(params["payload"])):
                _hand_over_large(socket_path, spool, params)
            else:
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
    request = {"v": 1, "id": 1, "method": "hook", "params": params}
    line = lean.dumps(request).encode() + b"\n"
    sock = lean.connect(path, TIMEOUT)
    try:
        sock.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            buf += chunk
    finally:
        sock.close()
    reply = lean.loads(buf.decode("utf-8"))
    if not isinstance(reply, dict):
        raise ConnectionError("the daemon's reply is not a JSON object")
    if "error" in reply:
        raise ConnectionError(reply["error"].get("message", "error"))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

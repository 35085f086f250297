"""Start a host for an agent, and talk to a running host over its socket.

``launch_host`` starts the host detached (its own session, reparented to init) and returns
once the host says the program started, or raises ``HostError`` with the reason it could
not.  The host is the native one (``hosts/native``, about 1 MB RSS) when it is built, else
``volee_desktop.hosts.main`` under ``python -I -S`` (8.4 MB): ``VOLEE_HOST=python`` forces the
Python host, ``VOLEE_HOST=native`` requires the native one (``host_kind``).  ``HostClient``
makes blocking requests (the daemon calls them in a thread); ``HostStream`` is one
attached connection; ``hosts.attach.attach`` connects a terminal to the agent's PTY.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import volee_desktop
from volee_desktop.hosts import native, recordio, wire
from volee_desktop.hosts.errors import HostError, RecordError
from volee_desktop.hosts.records import ExitStatus, HostRecord, host_alive, read_record

# The folder that holds the volee_desktop package: the host finds it there without site.
PACKAGE_ROOT = Path(volee_desktop.__file__).resolve().parents[1]
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from volee_desktop.hosts.main import cli; cli()"
)
# sun_path is 108 bytes on Linux and 104 on macOS, NUL included.
MAX_SOCKET_PATH = 103
LAUNCH_TIMEOUT = 15.0
#: Which host to start: "python", "native", or unset (native when it is built).
HOST_ENV = "VOLEE_HOST"
DETACH_KEY = b"\x1d"  # Ctrl-]


def _check_program(argv0: str, cwd: Path, env: Mapping[str, str]) -> None:
    """Fail early, with a clear message, on what the host would fail on anyway."""
    if "/" in argv0:
        path = cwd / argv0
        if not path.exists():
            raise HostError(f"cannot start {argv0!r}: no such file; check the path")
        if not os.access(path, os.X_OK) or path.is_dir():
            raise HostError(f"cannot start {argv0!r}: it is not an executable file")
        return
    if shutil.which(argv0, path=env.get("PATH", os.defpath)) is None:
        raise HostError(
            f"cannot start {argv0!r}: not found on PATH; install it or give its full path"
        )


def host_kind() -> str:
    """Which host ``launch_host`` starts: "native" or "python" (``VOLEE_HOST``, else "native"
    when the native host is built and fresh).  HostError when native is required but missing."""
    wanted = os.environ.get(HOST_ENV, "")
    if wanted == "python":
        return "python"
    if native.binary() is not None:
        return "native"
    if wanted == "native":
        raise HostError(
            f"{HOST_ENV}=native but the native host is not built (or is older than its "
            "source); run: python -m volee_desktop.hosts.native build"
        )
    return "python"


def host_command(python: str = sys.executable) -> list[str]:
    """The host's command line up to its options (``launch_host`` adds them)."""
    if host_kind() == "native":
        found = native.binary()
        assert found is not None
        return [str(found)]
    # No site, no environment: the site hooks (an editable install's finder, .pth files)
    # cost every host a MiB, and the host needs only the stdlib and its package.
    return [python, "-I", "-S", "-c", _BOOT, str(PACKAGE_ROOT)]


def _host_env() -> dict[str, str]:
    """The host interpreter's own environment (the program gets the one it is given)."""
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    for key in ("LANG", "LC_ALL", "TMPDIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


#: Held while a host's first process is forked and exec'd, until the kernel shows its
#: command line. Between ``setsid`` and ``exec`` the child is a child of the daemon outside
#: its session with the daemon's command line: to the daemon's search for what a gone host
#: left behind (``daemon/agents/leftovers.py``, which holds this lock too) it looked like a
#: leftover, and a resume right after a stop had its new host killed ("the host ... exited
#: before starting").  ``Popen`` returns as soon as exec closes the close-on-exec fds, which
#: is before the new image's arguments are set up: for that moment ``/proc/PID/cmdline`` is
#: empty, the search could not tell the host for one (it took the native host so in loaded
#: full runs), so the lock is held until the command line is there (``_recognisable``).
SPAWNING = threading.Lock()


def launch_host(
    agent_id: str,
    argv: Sequence[str],
    cwd: Path | str,
    env: Mapping[str, str],
    record_path: Path | str,
    socket_path: Path | str,
    python: str = sys.executable,
    *,
    rows: int = 40,
    cols: int = 120,
    linger: float = 2.0,
    timeout: float = LAUNCH_TIMEOUT,
) -> HostRecord:
    """Start a detached host running ``argv`` in a PTY; return its record once it started.

    Raises HostError when the program cannot start (missing binary, missing folder), when a
    live host already serves this agent, or when the host fails before reporting.
    """
    if not argv:
        raise HostError(f"no program given for agent {agent_id}")
    cwd = Path(cwd).absolute()
    record_path = Path(record_path)
    socket_path = Path(socket_path)
    if not cwd.is_dir():
        raise HostError(f"directory {cwd} does not exist; create it or pick another")
    _check_program(argv[0], cwd, env)
    if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
        raise HostError(
            f"socket path {socket_path} is longer than {MAX_SOCKET_PATH} bytes; "
            "use a shorter runtime folder"
        )
    try:
        old = read_record(record_path)
    except RecordError:
        old = None  # unreadable: whatever wrote it is not a host we can talk to
    if old is not None and host_alive(old):
        raise HostError(
            f"a host already runs for agent {agent_id} (pid {old.host_pid}); "
            "attach to it or stop it first"
        )
    for folder in (record_path.parent, socket_path.parent):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    head = host_command(python)
    env_file = record_path.parent / f".{agent_id}.env.{os.getpid()}.{threading.get_ident()}"
    fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(dict(env), f)
    log_path = record_path.with_suffix(".log")
    ready_r, ready_w = os.pipe()
    cmd = [
        *head,
        "--agent",
        agent_id,
        "--record",
        str(record_path),
        "--socket",
        str(socket_path),
        "--cwd",
        str(cwd),
        "--env-file",
        str(env_file),
        "--rows",
        str(rows),
        "--cols",
        str(cols),
        "--linger",
        str(linger),
        "--ready-fd",
        str(ready_w),
        "--",
        *argv,
    ]
    try:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(log_fd, 0o600)
        with os.fdopen(log_fd, "ab") as log, SPAWNING:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd="/",
                env=_host_env(),
                start_new_session=True,
                pass_fds=(ready_w,),
            )
            _recognisable(proc)
    except OSError as exc:
        os.close(ready_r)
        os.close(ready_w)
        env_file.unlink(missing_ok=True)
        raise HostError(f"cannot run the host {cmd[0]}: {exc.strerror}") from exc
    os.close(ready_w)
    try:
        message = _read_ready(ready_r, timeout)
    finally:
        os.close(ready_r)
        # The first host process forks the real host and exits at once: reap it.
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        env_file.unlink(missing_ok=True)
    if message is None:
        raise HostError(
            f"the host for agent {agent_id} exited before starting {argv[0]!r}: "
            f"{_log_tail(log_path) or 'no message'} (log: {log_path})"
        )
    if not message.get("ok"):
        raise HostError(str(message.get("error") or "the host failed without a reason"))
    return HostRecord.from_dict(message["record"])


def _recognisable(proc: subprocess.Popen[bytes], timeout: float = 2.0) -> None:
    """Return once ``/proc`` shows the new host's command line, or it has ended (a host's
    first process forks the real host and exits at once), or there is no ``/proc``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        argv = recordio.command_line(proc.pid)
        if argv is None or argv or proc.poll() is not None:
            return
        time.sleep(0.0005)


def _read_ready(fd: int, timeout: float) -> dict[str, Any] | None:
    """The host's one-line report, or None if it closed the pipe without one."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            raise HostError(f"the host did not report within {timeout:.0f} s")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    if b"\n" not in data:
        return None
    message: dict[str, Any] = json.loads(data.split(b"\n", 1)[0])
    return message


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class HostStatus:
    """What a running host says about itself."""

    record: HostRecord
    running: bool
    bracketed_paste: bool
    rows: int
    cols: int
    attached: int


class HostStream:
    """One attached connection: program output in, keyboard input out."""

    def __init__(self, sock: socket.socket, rows: int, cols: int) -> None:
        self.sock = sock
        self.rows = rows
        self.cols = cols
        self.exit: ExitStatus | None = None
        self.closed = False
        self._reader = wire.FrameReader()

    def fileno(self) -> int:
        """The socket's fd, for select()."""
        return self.sock.fileno()

    def read(self, timeout: float | None = None) -> bytes:
        """Output that arrived within ``timeout``; b"" if none (check ``exit``/``closed``)."""
        if self.closed:
            return b""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return b""
        return self.take()

    def take(self) -> bytes:
        """Read what the socket has now (call when it is readable)."""
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return b""
        out = bytearray()
        for kind, payload in self._reader.feed(data):
            if kind == wire.OUTPUT:
                out += payload
            elif kind == wire.JSON:
                event = wire.decode_json(payload)
                if event.get("event") == "exit":
                    self.exit = ExitStatus.from_dict(event["exit"])  # type: ignore[arg-type]
        return bytes(out)

    def read_until(self, needle: bytes, timeout: float) -> bytes:
        """Read until ``needle`` appears in the output; HostError if it does not in time."""
        deadline = time.monotonic() + timeout
        seen = bytearray()
        while needle not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                raise HostError(f"{needle!r} did not appear; got {bytes(seen[-400:])!r}")
            seen += self.read(left)
        return bytes(seen)

    def write(self, data: bytes) -> None:
        """Type ``data`` into the program."""
        self.sock.sendall(wire.frame(wire.INPUT, data))

    def resize(self, rows: int, cols: int) -> None:
        """Set the PTY's size (no reply is awaited on a stream)."""
        self.sock.sendall(wire.json_frame({"op": "resize", "rows": rows, "cols": cols}))

    def close(self) -> None:
        """Detach: the program keeps running."""
        self.closed = True
        self.sock.close()

    def __enter__(self) -> HostStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _peer_pid(sock: socket.socket) -> int | None:
    """The pid at the other end of a connected Unix socket (Linux SO_PEERCRED), else None."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, option, 12)
    except OSError:
        return None
    pid = int.from_bytes(raw[0:4], sys.byteorder, signed=True)
    return pid or None


class HostClient:
    """Blocking requests to one host's socket; each request uses its own connection."""

    def __init__(self, socket_path: Path | str, timeout: float = 5.0) -> None:
        self.socket_path = str(socket_path)
        self.timeout = timeout

    def _connect(self, timeout: float) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as exc:
            sock.close()
            raise HostError(
                f"cannot reach the host at {self.socket_path}: {exc.strerror or exc}; "
                "it may have ended"
            ) from exc
        return sock

    def request(self, op: str, timeout: float | None = None, **fields: object) -> dict[str, Any]:
        """Send one request and return the reply; HostError on a refusal or a lost host."""
        wait = self.timeout if timeout is None else timeout
        sock = self._connect(wait)
        try:
            sock.sendall(wire.json_frame({"op": op, **fields}))
            reply = self._read_reply(sock, wire.FrameReader())
        except (OSError, wire.FrameError) as exc:
            raise HostError(f"host at {self.socket_path} failed on {op!r}: {exc}") from exc
        finally:
            sock.close()
        if not reply.get("ok"):
            raise HostError(f"host refused {op!r}: {reply.get('error')}")
        return reply

    @staticmethod
    def _read_reply(sock: socket.socket, reader: wire.FrameReader) -> dict[str, Any]:
        while True:
            data = sock.recv(65536)
            if not data:
                raise OSError("the host closed the connection without a reply")
            for kind, payload in reader.feed(data):
                if kind == wire.JSON:
                    return wire.decode_json(payload)

    def hello(self) -> tuple[dict[str, Any], int | None]:
        """Ask whose host this is; returns the reply and the pid that serves the socket (as
        the kernel says, None where it does not).  A host older than ``hello`` answers
        ``ok: false`` (unknown request)."""
        sock = self._connect(self.timeout)
        try:
            pid = _peer_pid(sock)
            sock.sendall(wire.json_frame({"op": "hello"}))
            reply = self._read_reply(sock, wire.FrameReader())
        except (OSError, wire.FrameError) as exc:
            raise HostError(f"host at {self.socket_path} failed on 'hello': {exc}") from exc
        finally:
            sock.close()
        return reply, pid

    def send_text(self, text: str, enter: bool = True) -> None:
        """Type ``text`` as one paste (if the program asked for bracketed paste), then Enter."""
        self.request("send", text=text, enter=enter)

    def screen(self, lines: int = 40) -> str:
        """The last ``lines`` lines of output as plain text."""
        return str(self.request("screen", lines=lines)["text"])

    def resize(self, rows: int, cols: int) -> None:
        """Set the PTY's size; the program gets SIGWINCH."""
        self.request("resize", rows=rows, cols=cols)

    def signal(self, sig: int | str) -> bool:
        """Send a signal to the program's process group; False if it had ended."""
        value = signal.Signals(sig).name if isinstance(sig, int) else sig
        return bool(self.request("signal", signal=value)["delivered"])

    def stop(self, grace: float = 5.0) -> ExitStatus:
        """End the program (SIGTERM, SIGKILL after ``grace``); return how it ended."""
        reply = self.request("stop", timeout=grace + self.timeout, grace=grace)
        return ExitStatus.from_dict(reply["exit"])

    def status(self) -> HostStatus:
        """The host's record and live facts."""
        reply = self.request("status")
        return HostStatus(
            record=HostRecord.from_dict(reply["record"]),
            running=bool(reply["running"]),
            bracketed_paste=bool(reply["bracketed_paste"]),
            rows=int(reply["rows"]),
            cols=int(reply["cols"]),
            attached=int(reply["attached"]),
        )

    def close(self) -> None:
        """Let a host whose program has ended exit now instead of after its linger."""
        self.request("close")

    def open_stream(self, rows: int | None = None, cols: int | None = None) -> HostStream:
        """Attach: the recent output is replayed first, then everything new."""
        sock = self._connect(self.timeout)
        req: dict[str, object] = {"op": "attach"}
        if rows and cols:
            req.update(rows=rows, cols=cols)
        try:
            sock.sendall(wire.json_frame(req))
            # Read the reply frame alone so output after it stays in the stream's reader.
            reply = self._read_reply_exact(sock)
        except (OSError, wire.FrameError) as exc:
            sock.close()
            raise HostError(f"cannot attach to {self.socket_path}: {exc}") from exc
        if not reply.get("ok"):
            sock.close()
            raise HostError(f"host refused to attach: {reply.get('error')}")
        sock.settimeout(None)
        return HostStream(sock, int(reply["rows"]), int(reply["cols"]))

    @staticmethod
    def _read_reply_exact(sock: socket.socket) -> dict[str, Any]:
        header = _recv_exact(sock, wire.HEADER_SIZE)
        size = int.from_bytes(header[1:], "big")
        payload = _recv_exact(sock, size)
        if header[:1] != wire.JSON:
            raise wire.FrameError(f"expected a reply, got a {header[:1]!r} frame")
        return wire.decode_json(payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("the host closed the connection")
        data += chunk
    return bytes(data)


__all__ = [
    "DETACH_KEY",
    "HostClient",
    "HostStatus",
    "HostStream",
    "launch_host",
]

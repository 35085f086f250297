"""The host: one lean process per agent that holds the program in a PTY and serves a socket.

Started as ``python -m volee_desktop.hosts.main`` (its command line and start-up are in
``main.py``); the launcher starts it with ``python -I -S``.

Life of a host:

1. It forks once more and the parent exits, so the host is in its own session (the
   launcher starts it with ``setsid``) but not its leader: it can never grab a controlling
   terminal, and the launcher reaps the short-lived parent at once.
2. It opens a PTY (120x40 unless told), forks the program into it as a session leader with
   the PTY as controlling terminal, in the given folder and environment.  An exec failure
   (binary missing, folder gone) comes back over a close-on-exec pipe, is written to the
   record as ``error`` and reported on ``--ready-fd``.
3. It writes its record (``recordio``) when the program started and again when it ended,
   then tells the launcher on ``--ready-fd`` (one JSON line) and closes that fd.
4. It serves a Unix socket (0600, peer uid checked) with the ``wire`` framing: ``attach``
   (output streamed to every attached client, each first replayed the recent output),
   ``watch`` (the daemon: the exit, and the output at most every ``every_ms``), ``flush``,
   ``send``, ``resize``, ``screen``, ``signal``, ``stop``, ``status`` and ``close``.
5. When the program ends it records the exit, tells attached clients, lingers ``--linger``
   seconds (default 2) so clients can still read the screen, then exits.  ``close`` ends
   the linger early.  A SIGTERM/SIGHUP to the host hangs up the program (SIGHUP to its
   group, SIGKILL after a grace) and records ``host_signal`` in the exit, so the daemon can
   tell a machine stopping from the program ending by itself.
6. Whatever the program left behind is ended before the host exits: on Linux the host is
   the subreaper of the program's tree, so every leftover (``&``, ``nohup``, ``setsid`` and a
   double fork) is its descendant; they get SIGTERM when the program ends, SIGKILL after
   ``LEFTOVER_GRACE``, and the host exits only once it has no child left (or after
   ``LEFTOVER_WAIT``: a process of another user it cannot signal).  Elsewhere the program's
   process group gets the same.  Nothing of an agent outlives its host as the person
   (docs/trust-model.md).

Stdlib only, one thread, one ``poller``: a host runs for every agent and must stay small
(target <= 6 MiB USS).  Never import the daemon, store, core or ``dataclasses`` here, nor
``json``, ``socket``, ``signal`` or ``selectors``: they pull in ``re`` and ``enum``, 1.5 MiB of
every host.  The host uses their C halves (``_socket``, ``_signal``, ``lean`` over
``_json``, ``poller`` over ``select.epoll``); ``tests/hosts/test_lean.py`` keeps it so.
"""

from __future__ import annotations

import _socket
import errno
import os
import struct
import sys
import time

from volee_desktop import lean
from volee_desktop.hosts import recordio, tree, wire
from volee_desktop.hosts.poller import EVENT_READ, EVENT_WRITE, Poller
from volee_desktop.hosts.requests import HOLD_LIMIT, STIRRED, Requests, _Client
from volee_desktop.hosts.ring import Ring
from volee_desktop.hosts.spawn import HOST_SIGNALS, become_subreaper, spawn_in_pty

# Not typing.TYPE_CHECKING: importing typing would cost every host its memory.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # _signal has no stubs: it is signal's C half
else:
    import _signal

SCROLLBACK_BYTES = 256 * 1024
# A client that stops reading while the program prints is dropped past this much backlog.
CLIENT_BACKLOG_LIMIT = 4 * 1024 * 1024
DEFAULT_LINGER = 2.0
HANGUP_GRACE = 3.0
# What the program left behind gets this long after SIGTERM before SIGKILL; the host waits
# for them at most LEFTOVER_WAIT more (SIGKILL cannot be refused, but another user's can).
LEFTOVER_GRACE = 1.0
LEFTOVER_WAIT = 5.0
LEFTOVER_CHECK = 0.05
# The loop wakes at least this often (epoll counts its timeout in int milliseconds).
_MAX_WAIT = 3600.0
PASTE_ON = b"\x1b[?2004h"
PASTE_OFF = b"\x1b[?2004l"
_SIGNALS = {getattr(_signal, name): name for name in HOST_SIGNALS}  # number: name


def _log(msg: str) -> None:
    try:
        sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} host[{os.getpid()}] {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _peer_uid(sock: _socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, or None if unknown."""
    if hasattr(_socket, "SO_PEERCRED"):
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if sys.platform == "darwin":
        # LOCAL_PEERCRED (SOL_LOCAL=0, option 1) returns a struct xucred.
        raw = sock.getsockopt(0, 1, 76)
        return int(struct.unpack_from("=I", raw, 4)[0])
    return None


class Host(Requests):
    """The host's state and its single-threaded event loop."""

    def __init__(
        self,
        agent: str,
        record_path: str,
        socket_path: str,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        rows: int = 40,
        cols: int = 120,
        linger: float = DEFAULT_LINGER,
    ) -> None:
        self.agent = agent
        self.record_path = record_path
        self.socket_path = socket_path
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.rows = rows
        self.cols = cols
        self.linger = linger
        self.record: dict[str, object] = {}
        self.pid = 0
        self.subreaper = False  # adopts the program's orphans (Linux; _spawn)
        self.master = -1
        self.scrollback = Ring(SCROLLBACK_BYTES)
        self.paste_mode = False
        self._paste_tail = b""
        self.stirred_at = float("-inf")  # keys or a size last sent to the program (STIRRED)
        self.to_pty = bytearray()
        self.sel = Poller()
        self.clients: dict[int, _Client] = {}
        self.listener: _socket.socket | None = None
        self.exit: dict[str, object] | None = None
        self.stop_requested = False
        self.host_signal: str | None = None
        self.stop_waiters: list[_Client] = []
        self.sends: list[tuple[_Client, bytes, bool]] = []
        self.send_busy = False
        self.timers: list[tuple[float, object]] = []
        self.done = False
        self.linger_over = False
        # Ending the program's leftovers: None (not begun or done), else when to give up.
        self.leftovers_until: float | None = None
        self._sig_r = -1

    # -- start ---------------------------------------------------------------

    def base_record(self) -> dict[str, object]:
        """The record before the program starts (fields as ``records.HostRecord``)."""
        return {
            "v": 1,
            "agent": self.agent,
            "host_pid": os.getpid(),
            "host_create_time": recordio.start_time(os.getpid()),
            "host_start_ticks": recordio.start_ticks(os.getpid()),
            "program_pid": None,
            "program_create_time": None,
            "program_start_ticks": None,
            "boot_time": recordio.boot_time(),
            "boot_id": recordio.boot_id(),
            "started_at": time.time(),
            "argv": self.argv,
            "cwd": self.cwd,
            "socket": self.socket_path,
            "exit": None,
            "error": None,
        }

    def start(self) -> str | None:
        """Start the program in a PTY and write the record; return an error or None."""
        base = self.record = self.base_record()
        error = self._spawn()
        if error is not None:
            base["error"] = error
            self.write_record()
            return error
        base["program_pid"] = self.pid
        base["program_create_time"] = recordio.start_time(self.pid)
        base["program_start_ticks"] = recordio.start_ticks(self.pid)
        self.write_record()
        return None

    def _spawn(self) -> str | None:
        self.subreaper = become_subreaper()
        result = spawn_in_pty(self.argv, self.cwd, self.env, self.rows, self.cols)
        if isinstance(result, str):
            return result
        self.pid, self.master = result
        os.set_blocking(self.master, False)
        return None

    def write_record(self) -> None:
        try:
            recordio.write_json_atomic(self.record_path, lean.dumps(self.record, indent=1))
        except OSError as exc:
            _log(f"cannot write record {self.record_path}: {exc}")

    # -- serve ---------------------------------------------------------------

    def listen(self) -> None:
        """Bind the socket (0600, in a folder only this user may enter)."""
        folder = os.path.dirname(self.socket_path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            probe.connect(self.socket_path)
        except OSError:
            pass  # nobody serves it: a leftover (or nothing) to replace
        else:
            raise OSError(errno.EADDRINUSE, "another host serves this socket")
        finally:
            probe.close()
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(self.socket_path)
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        sock.listen(16)
        sock.setblocking(False)
        self.listener = sock
        self.sel.register(sock.fileno(), EVENT_READ, self._on_accept)

    def run(self) -> None:
        """Serve until the program has ended and the linger is over."""
        sig_r, sig_w = os.pipe()
        os.set_blocking(sig_r, False)
        os.set_blocking(sig_w, False)
        self._sig_r = sig_r
        _signal.set_wakeup_fd(sig_w)
        for signum in (_signal.SIGCHLD, *_SIGNALS):
            _signal.signal(signum, lambda *_: None)
        self.sel.register(sig_r, EVENT_READ, self._on_signal)
        self.sel.register(self.master, EVENT_READ, self._on_master)
        self._reap()  # the program may have ended before SIGCHLD had a handler
        while not self.done:
            timeout = None
            # A deadline of NaN is never due and one far away (a stop's grace of 1e300) never
            # comes: neither may spin the loop nor overflow epoll's milliseconds.
            soon = [t[0] for t in self.timers if t[0] == t[0]]
            if soon:
                timeout = min(_MAX_WAIT, max(0.0, min(soon) - time.monotonic()))
            for fd, events, callback in self.sel.select(timeout):
                callback(fd, events)
            now = time.monotonic()
            due = [t for t in self.timers if t[0] <= now]
            if due:
                self.timers = [t for t in self.timers if t[0] > now]
                for _, fn in due:
                    fn()  # type: ignore[operator]
        for client in list(self.clients.values()):
            self._flush_blocking(client)
            self._drop(client)
        if self.listener is not None:
            self.listener.close()
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass
        if self.master >= 0:
            os.close(self.master)

    def _later(self, delay: float, fn: object) -> None:
        self.timers.append((time.monotonic() + delay, fn))

    # -- the program ---------------------------------------------------------

    def _on_signal(self, fd: int, events: int) -> None:
        try:
            data = os.read(self._sig_r, 512)
        except BlockingIOError:
            return
        for signum in data:
            if signum == _signal.SIGCHLD:
                self._reap()
            elif signum in _SIGNALS:
                self._host_signalled(_SIGNALS[signum])

    def _host_signalled(self, name: str) -> None:
        _log(f"got {name}; hanging up the program")
        if self.exit is not None:
            if self.leftovers_until is not None:
                self._kill_leftovers()  # no more grace: the host is told to go
            self._end_linger()
            return
        if self.host_signal is None:
            self.host_signal = name
            self._killpg(_signal.SIGHUP)
            self._later(HANGUP_GRACE, lambda: self._killpg(_signal.SIGKILL))

    def _killpg(self, sig: int) -> bool:
        if self.exit is not None:
            return False
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            try:  # the program may have left its own group
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return False
        return True

    def _reap(self) -> None:
        # As a subreaper the host also adopts the program's orphans: it reaps them as they end.
        while True:
            try:
                pid, status = os.waitpid(-1 if self.subreaper else self.pid, os.WNOHANG)
            except ChildProcessError:
                if self.leftovers_until is not None and self.subreaper:
                    self._leftovers_ended()  # no child: nothing of the tree is left
                return
            if pid == 0:
                return
            if pid == self.pid and self.exit is None:
                self._ended(status)
            if not self.subreaper:
                return

    def _ended(self, status: int) -> None:
        self._drain_master()
        exit_info = recordio.exit_fields(status)
        exit_info["stop_requested"] = self.stop_requested
        exit_info["host_signal"] = self.host_signal
        self.exit = exit_info
        self.record["exit"] = exit_info
        self.write_record()
        _log(f"program {self.pid} ended: {exit_info}")
        event = wire.json_frame({"event": "exit", "exit": exit_info})
        for client in list(self.clients.values()):
            if client.attached or client.watching:
                self._queue(client, event)
        for client in self.stop_waiters:
            self._reply(client, {"ok": True, "exit": exit_info})
        self.stop_waiters.clear()
        for client, _, _ in self.sends:
            self._reply(client, {"ok": False, "error": "the program ended before the text"})
        self.sends.clear()
        self._end_leftovers()
        if self.host_signal is not None:
            self._end_linger()
        else:
            self._later(self.linger, self._end_linger)

    def _end_linger(self) -> None:
        self.linger_over = True
        self.done = self.leftovers_until is None

    # -- what the program left behind ----------------------------------------

    def _leftovers(self) -> list[int]:
        """What is left of the program's tree: on Linux, as its subreaper, every process the
        tree left is a descendant of the host; elsewhere its process group (pid) is known."""
        if self.subreaper:
            return tree.descendants([os.getpid()])
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [-self.pid]  # os.kill of a negative pid signals the group

    def _end_leftovers(self) -> None:
        """The program ended: SIGTERM what it left behind, SIGKILL it after a grace."""
        left = self._leftovers()
        if not left:
            return
        _log(f"the program left {left} behind; ending them")
        self.leftovers_until = time.monotonic() + LEFTOVER_GRACE + LEFTOVER_WAIT
        tree.signal_each(left, _signal.SIGTERM)
        tree.signal_each(left, _signal.SIGCONT)  # a stopped process gets its SIGTERM too
        self._later(LEFTOVER_GRACE, self._kill_leftovers)

    def _kill_leftovers(self) -> None:
        if self.leftovers_until is None:
            return
        self._reap()
        left = self._leftovers()
        if not left:
            self._leftovers_ended()
            return
        if time.monotonic() > self.leftovers_until:
            _log(f"could not end {left}; leaving them")
            self._leftovers_ended()
            return
        tree.signal_each(left, _signal.SIGKILL)
        self._later(LEFTOVER_CHECK, self._kill_leftovers)  # until the tree is empty

    def _leftovers_ended(self) -> None:
        self.leftovers_until = None
        self.done = self.linger_over

    def _drain_master(self) -> None:
        while self.master >= 0:
            try:
                data = os.read(self.master, 65536)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            self._output(data)

    def _on_master(self, fd: int, events: int) -> None:
        if events & EVENT_READ:
            try:
                data = os.read(self.master, 65536)
            except BlockingIOError:
                data = None
            except OSError:  # EIO: every slave fd is closed; SIGCHLD tells the rest
                data = b""
            if data:
                self._output(data)
            elif data is not None:
                self.sel.unregister(self.master)
                self.to_pty.clear()
                return
        if events & EVENT_WRITE:
            self._flush_pty()

    def _output(self, data: bytes) -> None:
        self.scrollback.write(data)
        # Track bracketed paste mode; a marker may straddle two reads.
        probe = self._paste_tail + data
        on, off = probe.rfind(PASTE_ON), probe.rfind(PASTE_OFF)
        if on != off:
            self.paste_mode = on > off
        self._paste_tail = probe[-(len(PASTE_ON) - 1) :]
        out = wire.frame(wire.OUTPUT, data)
        for client in list(self.clients.values()):
            if client.output and client.every and not client.attached:
                self._hold(client, data, out)
            elif client.attached or client.output:
                self._queue(client, out)

    def _hold(self, client: _Client, data: bytes, out: bytes) -> None:
        """Output to a client that takes it at most once every ``every`` seconds (the daemon's
        watch): at once after a quiet spell or within ``STIRRED`` of keys or a size, else held
        and sent as one frame when the spell ends, from ``HOLD_LIMIT`` bytes, or before others."""
        now = time.monotonic()
        quiet = not client.held and now - client.sent_at >= client.every
        if quiet or now - self.stirred_at < STIRRED:
            self._queue(client, out)
            return
        client.held += data
        if len(client.held) >= HOLD_LIMIT:
            self._queue(client, b"")
        elif not client.armed:
            client.armed = True
            self._later(client.sent_at + client.every - now, lambda: self._release(client))

    def _release(self, client: _Client) -> None:
        client.armed = False
        if client.held:
            self._queue(client, b"")

    def _write_pty(self, data: bytes) -> None:
        if self.exit is not None or not data:
            return
        self.stirred_at = time.monotonic()
        self.to_pty += data
        self._flush_pty()

    def _flush_pty(self) -> None:
        while self.to_pty:
            try:
                n = os.write(self.master, self.to_pty)
            except BlockingIOError:
                break
            except OSError:
                self.to_pty.clear()
                break
            del self.to_pty[:n]
        try:
            self.sel.modify(
                self.master,
                EVENT_READ | (EVENT_WRITE if self.to_pty else 0),
                self._on_master,
            )
        except (KeyError, ValueError):
            pass

    # -- clients -------------------------------------------------------------

    def _on_accept(self, fd: int, events: int) -> None:
        assert self.listener is not None
        try:
            # _socket's accept gives a descriptor (socket.socket.accept wraps it the same way).
            conn, _ = self.listener._accept()  # type: ignore[attr-defined]
        except (BlockingIOError, InterruptedError):
            return
        sock = _socket.socket(self.listener.family, self.listener.type, self.listener.proto, conn)
        try:
            uid = _peer_uid(sock)
        except OSError as exc:  # a peer whose user cannot be read is refused (fail closed)
            _log(f"refused a connection whose peer cannot be read: {exc}")
            sock.close()
            return
        if uid is not None and uid != os.getuid():
            _log(f"refused a connection from uid {uid}")
            sock.close()
            return
        sock.setblocking(False)
        client = _Client(sock)
        self.clients[sock.fileno()] = client
        self.sel.register(sock.fileno(), EVENT_READ, self._on_client)

    def _on_client(self, fd: int, events: int) -> None:
        client = self.clients.get(fd)
        if client is None:
            return
        if events & EVENT_WRITE:
            self._flush(client)
        if not events & EVENT_READ:
            return
        try:
            data = client.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(client)
            return
        try:
            frames = client.reader.feed(data)
            for kind, payload in frames:
                if kind == wire.INPUT:
                    if client.attached:
                        self._write_pty(payload)
                elif kind == wire.JSON:
                    self._request(client, wire.decode_json(payload))
        except wire.FrameError as exc:
            self._reply(client, {"ok": False, "error": str(exc)})
            self._flush_blocking(client)
            self._drop(client)

    def _queue(self, client: _Client, data: bytes) -> None:
        if client.sock.fileno() < 0:
            return
        if client.output:  # what is held goes first (``_hold``)
            if client.held:
                client.out += wire.frame(wire.OUTPUT, bytes(client.held))
                client.held.clear()
            client.sent_at = time.monotonic()
        client.out += data
        if len(client.out) > CLIENT_BACKLOG_LIMIT:
            _log("dropped a client that stopped reading")
            self._drop(client)
            return
        self._flush(client)

    def _flush(self, client: _Client) -> None:
        while client.out:
            try:
                n = client.sock.send(client.out)
            except BlockingIOError:
                break
            except OSError:
                self._drop(client)
                return
            del client.out[:n]
        want = EVENT_READ | (EVENT_WRITE if client.out else 0)
        try:
            self.sel.modify(client.sock.fileno(), want, self._on_client)
        except (KeyError, ValueError):
            pass

    def _flush_blocking(self, client: _Client) -> None:
        """Best effort before closing: give the client a second to take what is queued."""
        if client.sock.fileno() < 0 or not client.out:
            return
        try:
            client.sock.settimeout(1.0)
            client.sock.sendall(client.out)
        except OSError:
            pass
        client.out.clear()

    def _drop(self, client: _Client) -> None:
        fd = client.sock.fileno()
        if fd >= 0:
            try:
                self.sel.unregister(fd)
            except (KeyError, ValueError):
                pass
            self.clients.pop(fd, None)
            client.sock.close()
        if client in self.stop_waiters:
            self.stop_waiters.remove(client)

    def _reply(self, client: _Client, obj: dict[str, object]) -> None:
        self._queue(client, wire.json_frame(obj))

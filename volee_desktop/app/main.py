"""``volee app``: the QApplication on a qasync loop that embeds the daemon or joins the running one.

``run_app(argv, start_daemon=..., connect=...)`` is what the CLI calls:

- one tray app per user (``<state>/app.lock``); a second start asks the first
  to show its list (``<runtime>/app.sock``) and returns 0;
- it connects to the daemon that runs for this user; when none answers and
  ``start_daemon`` is given, it runs the daemon inside its own event loop
  (``start_daemon(stop_event)`` returns once ``stop_event`` is set), and it does
  so again later if the daemon it was a client of goes away;
- the tray icon is shown and painted first (``first_frame.py``), then the link is made
  and the daemon embedded, in the same loop;
- with ``local_daemon=False`` (``volee app --no-daemon``, and always on Windows) it neither
  joins nor embeds a daemon: it keeps the links to the machines of ``[machines]`` itself
  (``machines_only.py``, D-nolocal in docs/decisions.md);
- Quit sets an asyncio.Event that ends ``amain`` (stopping the loop while a
  future is pending would raise); the embedded daemon stops, hosts and
  agents keep running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .errors import AlreadyRunning
from .link import DaemonLink

log = logging.getLogger(__name__)

DaemonStarter = Callable[[asyncio.Event], Awaitable[Any]]
Connector = Callable[[], Awaitable[DaemonLink]]

EMBED_AFTER = 3.0  # seconds without a daemon before the app runs one itself
DAEMON_READY_TIMEOUT = 15.0
DAEMON_STOP_TIMEOUT = 10.0
#: How often the app tries its socket while the daemon it embeds starts: the list is linked
#: this long at most after the daemon serves (a failed try costs about 0.1 ms; issue 27).
DAEMON_POLL = 0.01
#: The longest the link (and so the embedded daemon's import and start) waits for the icon's
#: first paint (first_frame.py); a panel that never exposes the icon does not hold it longer.
FIRST_FRAME_WAIT = 1.0
WAKE_MESSAGE = b"show\n"


def _default_connect() -> Connector:
    async def connect() -> DaemonLink:
        from .link import IpcDaemonLink

        return await IpcDaemonLink.connect()

    return connect


class _Default:
    """Marks an argument left out: use the real thing."""


REAL = _Default()


def run_app(
    argv: list[str],
    *,
    start_daemon: DaemonStarter | _Default | None = REAL,
    connect: Connector | None = None,
    options: Any = None,
    local_daemon: bool = True,
) -> int:
    """Run the tray app until the person quits; the process exit status.

    ``start_daemon(stop)`` runs the daemon in this loop until ``stop`` is set
    (default: the real daemon, ``embed.run_embedded_daemon``; None: never
    embed one, only connect); ``connect()`` returns a ``DaemonLink`` or raises
    when no daemon answers (default: the local socket).  ``options`` is an
    ``AppOptions`` (tests replace the terminal, the sinks, ...).  ``local_daemon=False``:
    no daemon on this machine, the app's own links to the other machines instead.
    """
    from volee_desktop.memtrim import one_arena
    from volee_desktop.paths import dirs

    one_arena()  # before Qt's threads: each thread's own arena kept its pages (memtrim.py)
    paths = dirs()
    if not local_daemon:
        from .machines_only import connector

        start_daemon = None
        connect = connect or connector(paths.config_file)
    if isinstance(start_daemon, _Default):
        from .embed import run_embedded_daemon

        start_daemon = run_embedded_daemon
    _setup_logging()
    from volee_desktop.pidlock import PidLock

    lock = PidLock(paths.app_lock, AlreadyRunning)
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        if _wake_running(paths.runtime / "app.sock"):
            print("volee is already running; its agent list is open.", file=sys.stderr)
        else:
            print(f"volee: {exc}", file=sys.stderr)
        return 0
    try:
        return _run(argv, start_daemon, connect or _default_connect(), options, paths, local_daemon)
    finally:
        lock.release()


def _setup_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(
            level=os.environ.get("VOLEE_LOG", "INFO").upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )


def _run(
    argv: list[str],
    start_daemon: DaemonStarter | None,
    connect: Connector,
    options: Any,
    paths: Any,
    local_daemon: bool = True,
) -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    from .controller import AppController
    from .gcguard import GuiCollector
    from .options import AppOptions

    app = QApplication.instance() or QApplication(argv or ["volee"])
    assert isinstance(app, QApplication)
    app.setApplicationName("volee")
    app.setApplicationDisplayName("volee")
    app.setDesktopFileName("volee")
    app.setQuitOnLastWindowClosed(False)
    collector = GuiCollector(app)  # cycles freed on the GUI thread only (gcguard.py)
    collector.start()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    opts = options if options is not None else AppOptions(config_path=paths.config_file)
    controller = AppController(opts)
    app.setWindowIcon(controller.icons.app_icon())
    session = AppSession(
        controller, connect, start_daemon, paths.runtime / "app.sock", local_daemon
    )
    try:
        with loop:
            return int(loop.run_until_complete(session.run()))
    finally:
        asyncio.set_event_loop(None)
        collector.stop()


def _wake_running(socket: Path) -> bool:
    """Ask the running app to show its list; False when it does not answer."""
    import socket as sk

    if not hasattr(sk, "AF_UNIX"):  # Windows: no wake-up socket (see _listen_wake)
        return False
    try:
        with sk.socket(sk.AF_UNIX, sk.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(str(socket))
            s.sendall(WAKE_MESSAGE)
        return True
    except OSError:
        return False


class AppSession:
    """The app's lifetime: connect or embed the daemon, feed the UI, quit cleanly."""

    def __init__(
        self,
        controller: Any,
        connect: Connector,
        start_daemon: DaemonStarter | None,
        wake_socket: Path | None = None,
        local_daemon: bool = True,
    ) -> None:
        self.controller = controller
        self.local_daemon = local_daemon
        self.connect = connect
        self.start_daemon = start_daemon
        self.wake_socket = wake_socket
        self.quit = asyncio.Event()
        self.daemon_stop = asyncio.Event()
        self.daemon_task: asyncio.Task[Any] | None = None
        self.link: DaemonLink | None = None
        self.stopped_on_request = False
        self._wake_server: asyncio.AbstractServer | None = None
        controller.quit_requested.connect(self.quit.set)
        controller.live.observe_connection(self._connection_changed)

    @property
    def embedded(self) -> bool:
        return self.daemon_task is not None and not self.daemon_task.done()

    async def run(self) -> int:
        self._install_signals()
        await self._listen_wake()
        self.controller.show()
        # The icon painted first, then the daemon (issue 27): its import and start hold the
        # loop, and an icon not painted yet is an empty square in the panel meanwhile.
        from .first_frame import first_frame

        await first_frame(FIRST_FRAME_WAIT)
        linker = asyncio.ensure_future(self._link_up())
        await self.quit.wait()
        log.info("quitting; agents keep running")
        linker.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await linker
        await self.shutdown()
        return 0

    async def shutdown(self) -> None:
        self.controller.close()
        if self._wake_server is not None:
            self._wake_server.close()
            with contextlib.suppress(Exception):
                await self._wake_server.wait_closed()
        if self.link is not None:
            with contextlib.suppress(Exception):
                await self.link.close()
        self.controller.tasks.cancel_all()
        await self._stop_daemon()

    async def _link_up(self) -> None:
        """Connect (embedding the daemon if none answers), then subscribe; retry until it works."""
        delay = 0.2
        while True:
            try:
                link = await self._connect_or_embed()
                await self.controller.attach(link)
                if not self.local_daemon:
                    where = "none on this machine (the app reaches the other machines itself)"
                else:
                    where = "inside the app" if self.embedded else "a separate process"
                self.controller.daemon_where = where
                self.link = link
                # The list window was left out of the first frame and the daemon's start: it
                # is built now, before the person's first click on the icon.
                self.controller.build_list_soon()
                log.info(
                    "connected to the volee daemon (%s; %d agents)",
                    where,
                    len(self.controller.live.registry.agents),
                )
                return
            except Exception as exc:
                log.warning("no volee daemon yet: %s", exc)
                self.controller.live.on_connection(False, f"no volee daemon: {exc}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _connect_or_embed(self) -> DaemonLink:
        try:
            return await self.connect()
        except Exception as first:
            if self.start_daemon is None:
                raise
            log.info("no daemon answers (%s): running it inside the app", first)
        self._embed()
        return await self._wait_for_daemon()

    def _embed(self) -> None:
        if self.embedded or self.start_daemon is None:
            return
        self.daemon_stop = asyncio.Event()
        self.daemon_task = asyncio.ensure_future(self.start_daemon(self.daemon_stop))
        self.daemon_task.add_done_callback(self._daemon_ended)

    def _daemon_ended(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or self.quit.is_set():
            return
        exc = task.exception()
        if exc is not None:
            log.error("the embedded daemon stopped: %s", exc, exc_info=exc)
        else:
            # Someone asked it to stop (`volee daemon stop`): do not bring it back on our
            # own; the link still joins any daemon that starts later.
            self.stopped_on_request = True
            log.info("the daemon inside the app was asked to stop; the app stays a client")

    async def _wait_for_daemon(self) -> DaemonLink:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DAEMON_READY_TIMEOUT
        last: BaseException | None = None
        while loop.time() < deadline:
            try:
                return await self.connect()
            except Exception as exc:
                last = exc
            task = self.daemon_task
            if task is not None and task.done():
                # It may have lost the race to a daemon started elsewhere: one more try.
                try:
                    return await self.connect()
                except Exception:
                    error = task.exception() if not task.cancelled() else None
                    raise RuntimeError(f"the daemon could not start: {error or last}") from error
            await asyncio.sleep(DAEMON_POLL)
        raise TimeoutError(f"the daemon did not answer within {DAEMON_READY_TIMEOUT:g} s: {last}")

    async def _stop_daemon(self) -> None:
        task = self.daemon_task
        if task is None or task.done():
            return
        self.daemon_stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), DAEMON_STOP_TIMEOUT)
        except TimeoutError:
            log.warning("the daemon did not stop within %g s; cancelling it", DAEMON_STOP_TIMEOUT)
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        except BaseException as exc:  # its failure is logged by _daemon_ended
            log.debug("daemon ended with %r", exc)

    def _connection_changed(self, connection: Any) -> None:
        """The daemon we were a client of went away: run one ourselves if it stays away."""
        if (
            connection.connected
            or self.start_daemon is None
            or self.link is None
            or self.stopped_on_request
        ):
            return
        loop = asyncio.get_event_loop()

        def check() -> None:
            if (
                not self.controller.live.connection.connected
                and not self.quit.is_set()
                and not self.stopped_on_request
            ):
                log.info("the daemon is still away: running it inside the app")
                self._embed()

        loop.call_later(EMBED_AFTER, check)

    def _install_signals(self) -> None:
        loop = asyncio.get_event_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.quit.set)
            except (NotImplementedError, RuntimeError, ValueError):
                signal.signal(sig, lambda *_: loop.call_soon_threadsafe(self.quit.set))

    async def _listen_wake(self) -> None:
        if self.wake_socket is None:
            return
        if not hasattr(asyncio, "start_unix_server"):
            # Windows: no Unix socket; a second `volee app` only says that one runs.
            log.info("no wake-up socket here: a second `volee` will only say it runs")
            return
        path = self.wake_socket
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(path.parent, 0o700)
            path.unlink(missing_ok=True)

        async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = await asyncio.wait_for(reader.readline(), 2.0)
                if line == WAKE_MESSAGE:
                    log.info("another `volee` asked for the agent list")
                    self.controller.show_list()
            except (TimeoutError, OSError):
                pass
            finally:
                writer.close()

        try:
            self._wake_server = await asyncio.start_unix_server(on_client, path=str(path))
            os.chmod(path, 0o600)
        except (OSError, NotImplementedError) as exc:
            log.info("no wake-up socket (%s): a second `volee` will only say it runs", exc)

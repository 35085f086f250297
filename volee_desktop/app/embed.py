"""The real daemon inside the tray app's event loop (the default ``start_daemon`` of run_app)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from volee_desktop.paths import Dirs

log = logging.getLogger(__name__)


async def run_embedded_daemon(stop: asyncio.Event, dirs: Dirs | None = None) -> None:
    """Run ``volee_desktop.daemon`` on the running (qasync) loop until ``stop`` is set.

    Returns early when the daemon is asked to stop by itself (``volee daemon
    stop``).  Raises what ``Daemon.start`` raises (AlreadyRunning when a
    headless daemon won the lock first).  Hosts are separate processes: they
    keep running when this returns.
    """
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.paths import dirs as default_dirs

    daemon = await Daemon.start(dirs or default_dirs())
    stopped = asyncio.ensure_future(daemon.stopped())
    quitting = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({stopped, quitting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (stopped, quitting):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await daemon.close()
        log.info("the daemon inside the app stopped")

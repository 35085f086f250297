"""What every runner of the daemon is built with: one typed context, made by ``daemon/main.py``.

``Context`` holds the service, the config, the folders, the clock, the background tasks,
the IPC method table, the status board and the close hooks.  A runner receives it (and the
other runners it needs) in its constructor and adds its methods, status and close hook there;
nothing reaches back into the daemon.  ``Clients`` is the one answer to "is a person
watching": the subscriptions that count it, and discovery, which lists sooner when one is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..ipc.server import MethodTable
from ..paths import Dirs
from .clock import Clock
from .service import Service

log = logging.getLogger(__name__)

RECANCEL = 1.0  # seconds between cancels of a task that ignored one

CloseHook = Callable[[], Awaitable[None]]


class Tasks:
    """Background tasks of the daemon: failures are logged, all are cancelled at close."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background until it ends or the daemon closes."""

        async def run() -> Any:
            try:
                return await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background task %s failed", name)
                return None

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if isinstance(coro, Coroutine):
            # Cancelled before it ran (a close right after start): close it, so that it is not
            # reported as never awaited. A no-op for one that ran.
            task.add_done_callback(lambda _t: coro.close())
        return task

    async def cancel_all(self) -> None:
        """Cancel every task still running and wait for them to end.

        A task that lets one cancel go (a library catching it, or 3.11's ``wait_for`` when
        its future ends at the same moment) is cancelled again each second until it ends.
        """
        pending = set(self._tasks)
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=RECANCEL)


class StatusBoard:
    """The parts of ``daemon.status``'s ``extra``: one reader per runner, in the order added."""

    def __init__(self) -> None:
        self._parts: dict[str, Callable[[], Any]] = {}

    def add(self, name: str, read: Callable[[], Any]) -> None:
        if name in self._parts:
            raise ValueError(f"status part {name!r} is added twice")
        self._parts[name] = read

    def read(self) -> dict[str, Any]:
        return {name: read() for name, read in self._parts.items()}


class CloseHooks:
    """What runners do when the daemon closes, in the order they were added."""

    def __init__(self) -> None:
        self._hooks: list[CloseHook] = []

    def add(self, hook: CloseHook) -> None:
        self._hooks.append(hook)

    async def run(self) -> None:
        for hook in self._hooks:
            try:
                await hook()
            except Exception:
                log.exception("close hook failed")


class Clients:
    """How many interactive clients (the tray, a CLI watching) are subscribed right now."""

    def __init__(self) -> None:
        self.count = 0
        self._on_join: list[Callable[[], None]] = []

    def on_join(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` each time an interactive client subscribes."""
        self._on_join.append(fn)

    def joined(self) -> None:
        self.count += 1
        for fn in self._on_join:
            fn()

    def left(self) -> None:
        self.count = max(0, self.count - 1)


@dataclass(frozen=True)
class Context:
    """What the runners share; built once by ``Daemon``."""

    service: Service
    config: Config
    dirs: Dirs
    clock: Clock
    tasks: Tasks
    methods: MethodTable
    status: StatusBoard
    closing: CloseHooks

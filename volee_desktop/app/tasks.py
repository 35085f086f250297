"""Running coroutines from Qt slots: keep a reference, and report what failed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

ErrorReporter = Callable[[str, BaseException], None]


class Tasks:
    """Starts tasks on the running loop, keeps them alive, hands failures to ``on_error``."""

    def __init__(self, on_error: ErrorReporter | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_error = on_error

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> asyncio.Task[Any]:
        task = asyncio.get_event_loop().create_task(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if t.cancelled():
                return
            exc = t.exception()
            if exc is not None:
                log.error("%s failed: %s", what, exc, exc_info=exc)
                if self.on_error is not None:
                    self.on_error(what, exc)

        task.add_done_callback(done)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for every running task (used on quit and by tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

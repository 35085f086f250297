"""The host's event loop waits here: ``selectors.DefaultSelector`` for file descriptors.

On Linux it is ``select.epoll`` itself, with ``selectors.EpollSelector``'s semantics (the
same events, errors and timeout rounding): ``selectors`` imports ``enum``, ``collections``
and ``math``, a MiB of every host.  Elsewhere (macOS: ``kqueue``; ``poll`` does not work on
a PTY there) it is ``selectors.DefaultSelector`` as before.  Stdlib only: the host imports it.
"""

from __future__ import annotations

import select
import sys

# Not typing.TYPE_CHECKING: importing typing would cost every host its memory.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import selectors
    from collections.abc import Callable

    Callback = Callable[[int, int], None]

EVENT_READ = 1  # selectors.EVENT_READ
EVENT_WRITE = 2  # selectors.EVENT_WRITE


class Poller:
    """Register file descriptors with a callback; ``select`` says which are ready."""

    __slots__ = ("_epoll", "_keys", "_selector")

    def __init__(self) -> None:
        self._keys: dict[int, tuple[int, Callback]] = {}
        self._selector: selectors.BaseSelector | None = None
        if sys.platform.startswith("linux"):
            self._epoll = select.epoll()
        else:  # pragma: no cover - macOS
            import selectors

            self._selector = selectors.DefaultSelector()

    def register(self, fd: int, events: int, callback: Callback) -> None:
        """Watch ``fd`` for ``events``; KeyError if it is watched already."""
        if self._selector is not None:  # pragma: no cover - macOS
            self._selector.register(fd, events, callback)
            return
        if fd < 0:
            raise ValueError(f"Invalid file descriptor: {fd}")
        if not events or events & ~(EVENT_READ | EVENT_WRITE):
            raise ValueError(f"Invalid events: {events!r}")
        if fd in self._keys:
            raise KeyError(f"{fd!r} (FD {fd}) is already registered")
        self._keys[fd] = (events, callback)
        try:
            self._epoll.register(fd, _epoll_events(events))
        except BaseException:
            del self._keys[fd]
            raise

    def modify(self, fd: int, events: int, callback: Callback) -> None:
        """Watch ``fd`` for other ``events``; KeyError if it is not watched."""
        if self._selector is not None:  # pragma: no cover - macOS
            self._selector.modify(fd, events, callback)
            return
        if fd < 0:
            raise ValueError(f"Invalid file descriptor: {fd}")
        try:
            old, _ = self._keys[fd]
        except KeyError:
            raise KeyError(f"{fd!r} is not registered") from None
        if events != old:
            if not events or events & ~(EVENT_READ | EVENT_WRITE):
                raise ValueError(f"Invalid events: {events!r}")
            try:
                self._epoll.modify(fd, _epoll_events(events))
            except BaseException:
                del self._keys[fd]
                raise
        self._keys[fd] = (events, callback)

    def unregister(self, fd: int) -> None:
        """Stop watching ``fd``; KeyError if it is not watched."""
        if self._selector is not None:  # pragma: no cover - macOS
            self._selector.unregister(fd)
            return
        if fd < 0:
            raise ValueError(f"Invalid file descriptor: {fd}")
        try:
            del self._keys[fd]
        except KeyError:
            raise KeyError(f"{fd!r} is not registered") from None
        try:
            self._epoll.unregister(fd)
        except OSError:
            pass

    def select(self, timeout: float | None) -> list[tuple[int, int, Callback]]:
        """Wait up to ``timeout`` seconds (None: for ever): the (fd, events, callback) ready."""
        if self._selector is not None:  # pragma: no cover - macOS
            return [(k.fd, ev, k.data) for k, ev in self._selector.select(timeout)]
        if timeout is None:
            timeout = -1
        elif timeout <= 0:
            timeout = 0
        else:
            # epoll_wait() counts milliseconds: round up to wait *at least* the timeout.
            ms = int(timeout * 1e3)
            timeout = (ms + (ms < timeout * 1e3)) * 1e-3
        try:
            ready = self._epoll.poll(timeout, max(len(self._keys), 1))
        except InterruptedError:
            return []
        found = []
        for fd, flags in ready:
            key = self._keys.get(fd)
            if key is not None:
                events = (EVENT_WRITE if flags & ~select.EPOLLIN else 0) | (
                    EVENT_READ if flags & ~select.EPOLLOUT else 0
                )
                found.append((fd, events & key[0], key[1]))
        return found


def _epoll_events(events: int) -> int:
    return (select.EPOLLIN if events & EVENT_READ else 0) | (
        select.EPOLLOUT if events & EVENT_WRITE else 0
    )

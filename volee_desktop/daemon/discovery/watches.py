"""What wakes discovery: the harnesses' session folders changing, and watched processes ending.

Two cheap triggers instead of listing on a clock (issue 13):

- ``folder_watch``: the platform's file notification on Claude Code's session registry
  (``<config>/sessions/``: a file per live session, rewritten when its status
  changes, deleted on a clean exit), codex's ``sessions/`` and pi's
  ``agent/sessions/``.  A folder that does not exist yet is waited for through its
  nearest existing parent (not recursively), then watched itself.  On Linux it is
  inotify read by the loop (``daemon/discovery/inotify.py``): nothing runs while nothing
  changes.  Elsewhere ``FolderWatch`` (FSEvents, ReadDirectoryChangesW through
  ``watchfiles``), whose Rust loop wakes every ``STEP`` ms to look at its stop flag
  (a thread, no Python): about 0.01 % of a core per folder, and the latency of a
  change is STEP to 2 x DEBOUNCE.
- ``ExitWatch``: a process whose end would not be written anywhere (a session killed
  with -9 leaves its file behind and changes nothing) is waited for with a pidfd
  (Linux); elsewhere (``failed`` says why) the seed's cadence finds it while someone
  looks, the slow safety listing otherwise.

Both call ``notify(harness)``; what to do about it is the discovery loop's decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from ...core.model import Harness, Location
from ...core.registry import Registry
from .folderwait import nearest_existing, on_the_way
from .listers import claude_dir, codex_sessions, pi_sessions

log = logging.getLogger(__name__)
# watchfiles logs every batch of changes at INFO: the daemon's log is not the place for them.
logging.getLogger("watchfiles").setLevel(logging.WARNING)

STEP_MS = 300
DEBOUNCE_MS = 600
#: Tests that drive discovery with a listing the watch cannot see turn it off.
WATCH = True

Notify = Callable[[Harness], None]


class FolderWatch:
    """Watches folders (one ``watchfiles`` watcher each) and says which harness changed."""

    def __init__(self, targets: dict[Path, Harness], notify: Notify) -> None:
        self.targets = targets
        self.notify = notify
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.failed: str | None = None
        self.changes = 0
        self._armed: dict[Path, Path] = {}

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for path, harness in self.targets.items():
            self._tasks.append(loop.create_task(self._follow(path, harness)))

    @property
    def running(self) -> bool:
        return bool(self._tasks) and self.failed is None

    @property
    def armed(self) -> dict[Path, Path]:
        """Each target with a watcher in place: the folder watched for it (itself, or the
        nearest existing folder on its way while it does not exist)."""
        return dict(self._armed)

    async def close(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    async def _follow(self, target: Path, harness: Harness) -> None:
        try:
            from watchfiles import awatch
        except ImportError as exc:  # pragma: no cover - a dependency
            self.failed = f"watchfiles is not installed ({exc})"
            log.warning("discovery: %s; listing on a clock instead", self.failed)
            return
        armed_late = False
        try:
            while not self._stop.is_set():
                base = await asyncio.to_thread(nearest_existing, target)
                if base is None:
                    self.failed = f"nothing of {target} exists"
                    return
                if base == target:
                    if armed_late:
                        # It appeared while no watcher was on it: what was written in between
                        # is only seen by a listing once this watcher is in place.
                        loop = asyncio.get_running_loop()
                        loop.call_later(2 * STEP_MS / 1000, self.notify, harness)
                    # awatch places its watcher before it first waits: armed from here on.
                    self._armed[target] = target
                    async for _changes in awatch(
                        target,
                        stop_event=self._stop,
                        step=STEP_MS,
                        debounce=DEBOUNCE_MS,
                        rust_timeout=0,
                        recursive=True,
                    ):
                        self.changes += 1
                        self.notify(harness)
                        if not target.is_dir():
                            break  # removed: wait for it again
                    del self._armed[target]
                    armed_late = True
                    continue
                # Not there yet: wait for the next folder on the way to appear.
                self._armed[target] = base
                async for changes in awatch(
                    base,
                    stop_event=self._stop,
                    step=STEP_MS,
                    debounce=DEBOUNCE_MS,
                    rust_timeout=0,
                    recursive=False,
                ):
                    if any(on_the_way(Path(p), target) for _change, p in changes):
                        break
                del self._armed[target]
                armed_late = True
                self.notify(harness)  # it may hold sessions already
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # inotify limits, a folder we may not read...
            self.failed = f"cannot watch {target}: {exc}"
            log.warning("discovery: %s; listing on a clock instead", self.failed)
            self.notify(harness)
        finally:
            self._armed.pop(target, None)


class Watch(Protocol):
    """A folder watch as discovery uses it (``FolderWatch``, or ``InotifyWatch`` on Linux)."""

    failed: str | None
    changes: int

    @property
    def running(self) -> bool: ...
    @property
    def armed(self) -> dict[Path, Path]: ...
    def start(self) -> None: ...
    async def close(self) -> None: ...


def folder_watch(targets: dict[Path, Harness], notify: Notify) -> Watch:
    """The watch of this platform: inotify on the loop on Linux (no thread, nothing awake
    while nothing changes), ``watchfiles`` elsewhere."""
    from . import inotify

    if inotify.available():
        return inotify.InotifyWatch(targets, notify)
    return FolderWatch(targets, notify)


class ExitWatch:
    """Calls ``notify(harness)`` when a watched process ends (pidfd; Linux only)."""

    def __init__(self, notify: Notify) -> None:
        self.notify = notify
        self._fds: dict[int, tuple[int, Harness]] = {}
        self.supported = hasattr(os, "pidfd_open")
        #: Why some followed process has no pidfd (then only a listing sees its end).
        self.failed: str | None = None if self.supported else "no pidfd on this platform"

    def follow(self, pids: Iterable[tuple[int, Harness]]) -> None:
        """Watch exactly these processes (others are dropped)."""
        if not self.supported:
            return
        wanted = dict(pids)
        for pid in list(self._fds):
            if pid not in wanted:
                self._drop(pid)
        loop = asyncio.get_running_loop()
        failed = None
        for pid, harness in wanted.items():
            if pid in self._fds:
                continue
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue  # gone already: the listing will tell
            except OSError as exc:  # out of descriptors, a sandbox refusing pidfd_open...
                failed = f"cannot follow process {pid} with a pidfd: {exc}"
                continue
            self._fds[pid] = (fd, harness)
            loop.add_reader(fd, self._ended, pid)
        if failed is not None and self.failed is None:
            log.warning("discovery: %s; listing on a clock instead", failed)
        self.failed = failed

    def _ended(self, pid: int) -> None:
        entry = self._fds.get(pid)
        self._drop(pid)
        if entry is not None:
            self.notify(entry[1])

    def _drop(self, pid: int) -> None:
        entry = self._fds.pop(pid, None)
        if entry is None:
            return
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(entry[0])
        with contextlib.suppress(OSError):
            os.close(entry[0])

    def close(self) -> None:
        for pid in list(self._fds):
            self._drop(pid)

    @property
    def watched(self) -> int:
        return len(self._fds)


def watched_folders(env: dict[str, str] | None = None) -> dict[Path, Harness]:
    """The session folders the watch follows (they need not exist yet)."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or str(Path.home()))
    return {
        claude_dir(env) / "sessions": Harness.CLAUDE,
        codex_sessions(home): Harness.CODEX,
        pi_sessions(home): Harness.PI,
    }


def followed_processes(registry: Registry) -> list[tuple[int, Harness]]:
    """The processes of agents discovery follows (not in volee hosts): their end is news."""
    return [
        (a.pid, a.harness)
        for a in registry.agents.values()
        if a.pid and a.live and a.location in (Location.TERMINAL, Location.BACKGROUND)
    ]

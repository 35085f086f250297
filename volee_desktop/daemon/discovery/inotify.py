"""Folder watches on Linux: inotify read by the daemon's own loop, nothing awake at rest.

``watchfiles`` (the other platforms' watch, ``daemon/discovery/watches.py``) runs a Rust thread per
folder that wakes every 300 ms to look at its stop flag: about 0.01 % of a core each,
for ever.  inotify needs no thread at all: one file descriptor, read by the asyncio loop
when the kernel has something to say (``loop.add_reader``).

A target is watched with everything under it (a watch per folder; new folders get
theirs as they appear).  A target that does not exist yet is waited for through its
nearest existing parent (that folder only), one level at a time, then watched itself; a
target that goes away is waited for again.  Changes are told after ``DEBOUNCE`` seconds
of quiet at most ``DEBOUNCE`` after the first (a burst of writes is one call).  When
the kernel's queue overflowed (``IN_Q_OVERFLOW``) every target is told: a listing finds
what was missed.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import logging
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...core.model import Harness
from .folderwait import nearest_existing, on_the_way

log = logging.getLogger(__name__)

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_MASK_ADD = 0x20000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

#: What counts as a change inside a watched target.
CHANGES = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
#: What a folder on the way to a missing target is watched for.
ON_THE_WAY = IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
#: Seconds of quiet before a burst of changes is told.
DEBOUNCE = 0.3
_EVENT = struct.Struct("iIII")

Notify = Callable[[Harness], None]


def available() -> bool:
    return sys.platform.startswith("linux") and _libc() is not None


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        except (OSError, AttributeError):
            return None
        _LIBC = libc
    return _LIBC


@dataclass(frozen=True)
class Event:
    """One inotify event: its watch, what happened, and the name inside a watched folder."""

    wd: int
    mask: int
    name: str


def parse(data: bytes) -> list[Event]:
    """The events of one ``read`` of an inotify descriptor."""
    events = []
    offset = 0
    while offset + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        offset += _EVENT.size
        raw = data[offset : offset + length]
        offset += length
        events.append(Event(wd, mask, os.fsdecode(raw.rstrip(b"\0"))))
    return events


def limit_hint(exc: OSError) -> str:
    """Which of the kernel's inotify limits an error says was reached (else nothing)."""
    if exc.errno == errno.ENOSPC:
        return " (the inotify watch limit is reached: sysctl fs.inotify.max_user_watches)"
    if exc.errno == errno.EMFILE:
        return " (the inotify instance limit is reached: sysctl fs.inotify.max_user_instances)"
    return ""


class Inotify:
    """An inotify descriptor: ``add`` a folder, ``read`` what happened."""

    def __init__(self) -> None:
        libc = _libc()
        if libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self._libc = libc
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        self.fd = fd

    def add(self, path: Path, mask: int) -> int:
        """Watch ``path`` for ``mask`` too: a folder watched already keeps its watch (the same
        descriptor) with both masks."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask | IN_MASK_ADD)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"cannot watch {path}: {os.strerror(code)}")
        return int(wd)

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)  # gone already: EINVAL, nothing to do

    def read(self) -> list[Event]:
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                return events
            if not data:
                return events
            events += parse(data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class _Target:
    path: Path
    harness: Harness
    #: The watches of the target's tree (wd -> folder); empty while it is waited for.
    tree: dict[int, Path] = field(default_factory=dict)
    #: The watch of the folder on the way (and that folder), while the target does not exist.
    waiting: int | None = None
    waiting_on: Path = Path("/")


class InotifyWatch:
    """``FolderWatch`` on Linux: the same calls, with inotify on the loop (no thread)."""

    def __init__(self, targets: dict[Path, Harness], notify: Notify) -> None:
        self.targets = targets
        self.notify = notify
        self.failed: str | None = None
        self.changes = 0
        self._inotify: Inotify | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watches: list[_Target] = [_Target(p, h) for p, h in targets.items()]
        # One folder has one watch, whoever asked: the targets waiting on it (three folders
        # under one missing HOME) and the trees it is part of.
        self._by_wd: dict[int, list[_Target]] = {}
        self._pending: dict[Harness, asyncio.TimerHandle] = {}

    @property
    def running(self) -> bool:
        return self._inotify is not None and self.failed is None

    @property
    def armed(self) -> dict[Path, Path]:
        """Each target with a watch in place: the folder watched for it (itself, or the
        nearest existing folder on its way while it does not exist)."""
        return {
            t.path: t.path if t.tree else t.waiting_on
            for t in self._watches
            if t.tree or t.waiting is not None
        }

    @property
    def descriptor(self) -> int | None:
        """The inotify descriptor the loop reads (None once closed)."""
        return None if self._inotify is None else self._inotify.fd

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            self._inotify = Inotify()
            for target in self._watches:
                self._arm(target)
        except OSError as exc:
            self._fail(f"cannot watch the session folders: {exc}{limit_hint(exc)}")
            return
        self._loop.add_reader(self._inotify.fd, self._on_readable)

    async def close(self) -> None:
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        if self._inotify is not None:
            if self._loop is not None:
                self._loop.remove_reader(self._inotify.fd)
            self._inotify.close()
            self._inotify = None

    def _fail(self, why: str) -> None:
        self.failed = why
        log.warning("discovery: %s; listing on a clock instead", why)
        if self._inotify is not None and self._loop is not None:
            self._loop.remove_reader(self._inotify.fd)
        for target in self._watches:
            self.notify(target.harness)

    # --- watches ------------------------------------------------------------------------

    def _arm(self, target: _Target) -> None:
        """Watch the target's tree, or the nearest existing folder on its way."""
        assert self._inotify is not None
        base = nearest_existing(target.path)
        if base is None:
            raise OSError(errno.ENOENT, f"nothing of {target.path} exists")
        if base == target.path:
            self._add_tree(target, target.path)
            return
        wd = self._inotify.add(base, ON_THE_WAY)
        target.waiting, target.waiting_on = wd, base
        self._use(wd, target)

    def _add_tree(self, target: _Target, top: Path) -> None:
        assert self._inotify is not None
        for folder, subfolders, _files in os.walk(top):
            try:
                wd = self._inotify.add(Path(folder), CHANGES | IN_ONLYDIR)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    subfolders.clear()  # gone meanwhile
                    continue
                raise
            target.tree[wd] = Path(folder)
            self._use(wd, target)

    def _use(self, wd: int, target: _Target) -> None:
        users = self._by_wd.setdefault(wd, [])
        if target not in users:
            users.append(target)

    def _drop(self, wd: int, target: _Target, *, gone: bool = False) -> None:
        """``target`` no longer needs watch ``wd``; the last one to need it removes it
        (unless the kernel did: ``gone``)."""
        users = self._by_wd.get(wd, [])
        if target in users:
            users.remove(target)
        if not users:
            self._by_wd.pop(wd, None)
            if not gone and self._inotify is not None:
                self._inotify.remove(wd)

    def _disarm(self, target: _Target) -> None:
        for wd in [*target.tree, *([target.waiting] if target.waiting is not None else [])]:
            self._drop(wd, target)
        target.tree.clear()
        target.waiting = None

    # --- events -------------------------------------------------------------------------

    def _on_readable(self) -> None:
        assert self._inotify is not None
        try:
            events = self._inotify.read()
            for event in events:
                self._on_event(event)
        except OSError as exc:
            self._fail(f"the watch of the session folders broke: {exc}{limit_hint(exc)}")

    def _on_event(self, event: Event) -> None:
        if event.mask & IN_Q_OVERFLOW:
            for each in self._watches:
                self._told(each.harness)
            return
        for target in list(self._by_wd.get(event.wd, [])):
            self._on_target_event(target, event)

    def _on_target_event(self, target: _Target, event: Event) -> None:
        if event.wd == target.waiting:
            self._on_the_way(target, event)
            return
        folder = target.tree.get(event.wd)
        if folder is None:
            return
        if event.mask & IN_IGNORED:
            del target.tree[event.wd]
            self._drop(event.wd, target, gone=True)
        root_gone = folder == target.path and event.mask & (
            IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
        )
        if root_gone:
            # Removed (or moved away): wait for it to be there again.
            self._disarm(target)
            self._arm(target)
        elif event.mask & IN_ISDIR and event.mask & (IN_CREATE | IN_MOVED_TO) and event.name:
            self._add_tree(target, folder / event.name)
        self._told(target.harness)

    def _on_the_way(self, target: _Target, event: Event) -> None:
        assert target.waiting is not None
        gone = event.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)
        if gone or (event.name and on_the_way(target.waiting_on / event.name, target.path)):
            self._disarm(target)
            self._arm(target)
            if target.tree:
                self._told(target.harness)  # it may hold sessions already

    def _told(self, harness: Harness) -> None:
        """Tell ``harness`` changed, once per burst."""
        self.changes += 1
        if harness in self._pending or self._loop is None:
            return

        def fire() -> None:
            self._pending.pop(harness, None)
            self.notify(harness)

        self._pending[harness] = self._loop.call_later(DEBOUNCE, fire)


__all__ = ["Event", "Inotify", "InotifyWatch", "available", "parse"]

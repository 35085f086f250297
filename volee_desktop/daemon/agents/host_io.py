"""Talking to one host process from the daemon: is this process the host of that agent, type
keys into its PTY, ask a host whose program ended to go and wait for it to be gone, read its
record without raising (the blocking ones run in a thread: ``asyncio.to_thread``), and the
daemon's watch connection to it (``WatchProtocol``)."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from ...hosts import wire
from ...hosts.errors import Error as HostsError
from ...hosts.launcher import HostClient
from ...hosts.records import HostRecord, host_alive, read_record

log = logging.getLogger(__name__)

#: The daemon's watch takes a program's output at most once every so often: output after a
#: quiet spell comes at once, the rest is held by the host and sent as one frame (hosts/host.py
#: ``_hold``).  A busy Claude Code redraws its spinner every 110-230 ms, and one asking blinks
#: its bullet every 600 ms; each frame woke the daemon (issue 27: 0.054 s of its CPU in 40 s
#: busy, 0.019 s held).  Every read that decides something has the held output sent first
#: (``Screens.snapshot(fresh=True)``: a person's, and where a key is typed); the rest (the
#: limits watcher, the look for a dialog answered in the agent's own terminal) takes what came.
#: Not longer: a dialog drawn and answered in the agent's own terminal within one held frame
#: would never be seen by that look.  Once it was seen, the hold is longer
#: (answers.DIALOG_EVERY_MS, ``WatchProtocol.hold``).
WATCH_EVERY_MS = 500


def is_host_command(argv: list[str], agent_id: str, socket_path: Path) -> bool:
    """Whether ``argv`` is volee's host for ``agent_id`` serving ``socket_path``."""
    pairs = dict(itertools.pairwise(argv))
    return (
        any("volee_desktop" in arg for arg in argv)
        and pairs.get("--agent") == agent_id
        and pairs.get("--socket") == str(socket_path)
    )


def type_keys(client: HostClient, keys: bytes) -> None:
    """Type ``keys`` as they are (no paste, no Enter), as an attached terminal would."""
    with client.open_stream() as stream:
        stream.write(keys)
        # Closing with unread output would reset the connection, and the host could lose the
        # keys with it: say we are done writing, then read until the host hangs up.
        stream.sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + 5.0
        while not stream.closed and time.monotonic() < deadline:
            stream.read(0.5)


def end_linger(record: HostRecord, client: HostClient, timeout: float = 5.0) -> bool:
    """Ask a host whose program has ended to exit now; True once it is gone."""
    try:
        client.close()
    except (HostsError, OSError) as exc:
        log.info("host %d would not close (%s); waiting for its linger", record.host_pid, exc)
    deadline = time.monotonic() + timeout
    while host_alive(record):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


async def wait_gone(record: HostRecord, timeout: float) -> None:
    """Return once the host of ``record`` has ended (or after ``timeout``), as its pidfd says
    (Linux >= 5.3).  Without one, at once: the host ends its own leftovers (hosts/host.py)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return
    try:
        fd: int = opener(record.host_pid)
    except OSError:
        return  # gone already
    try:
        if not host_alive(record):
            return  # gone, or the pid is another process's now
        loop = asyncio.get_running_loop()
        ended = asyncio.Event()
        loop.add_reader(fd, ended.set)
        try:
            await asyncio.wait_for(ended.wait(), timeout)
        except TimeoutError:
            log.info("host %d still runs %.0f s after its program ended", record.host_pid, timeout)
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)


def read_quietly(path: Path) -> HostRecord | None:
    try:
        return read_record(path)
    except HostsError as exc:
        log.warning("host record %s unreadable: %s", path, exc)
        return None


class WatchProtocol(asyncio.Protocol):
    """The daemon's watch connection to one host: its program's output to ``output`` as it
    comes, its size to ``started`` and ``resized``, and whether it told its program's exit.

    A protocol, not a stream: each output is handed on in the callback that received it,
    where a stream reader woke the watching task for each (Claude Code redraws its spinner
    several times a second while it works, and its bullet twice a second while it asks;
    issue 27)."""

    def __init__(
        self,
        output: Callable[[bytes], None],
        started: Callable[[int | None, int | None], None],
        resized: Callable[[int, int], None],
        exited: Callable[[], None],
    ) -> None:
        self.output, self.started, self.resized = output, started, resized
        self.exited = exited  # told at once: the screen is the last one from then on
        self.frames = wire.FrameReader()
        self.replied = False
        self.ended = False  # the host told the program's exit
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.flushes: collections.deque[asyncio.Future[None]] = collections.deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(
            wire.json_frame({"op": "watch", "output": True, "every_ms": WATCH_EVERY_MS})
        )

    def data_received(self, data: bytes) -> None:
        if self.ended:
            return
        try:
            frames = self.frames.feed(data)
        except wire.FrameError as exc:
            log.warning("a host's watch connection sent what is not a frame: %s", exc)
            self._close()
            return
        for kind, payload in frames:
            if kind == wire.OUTPUT:
                self.output(payload)
                continue
            if kind != wire.JSON:
                continue
            msg = json.loads(payload)
            if not self.replied:
                self.replied = True
                self.started(msg.get("rows"), msg.get("cols"))
            elif "ok" in msg:  # a flush's or a hold's reply (an older host's refusal too)
                if self.flushes:
                    _resolve(self.flushes.popleft())
            elif msg.get("event") == "resize":
                self.resized(msg["rows"], msg["cols"])
            elif msg.get("event") == "exit":
                self.ended = True
                self.exited()
                self._close()
                return

    async def flush(self, timeout: float) -> None:
        """Have the host send the output it holds (``WATCH_EVERY_MS``) and return once it came
        (at most ``timeout`` later): a screen read for a person shows all of it."""
        done = self.done.done() or not self.replied
        if done or self.transport is None or self.transport.is_closing():
            return
        heard = asyncio.get_running_loop().create_future()
        self.flushes.append(heard)
        self.transport.write(wire.json_frame({"op": "flush"}))
        try:
            await asyncio.wait_for(asyncio.shield(heard), timeout)
        except TimeoutError:
            log.info("a host did not answer a flush in %.1f s", timeout)

    def hold(self, every_ms: int | None) -> None:
        """Have the host hold output back ``every_ms`` from now on (None: WATCH_EVERY_MS): a
        ``watch`` again on this connection, which sends what it holds, then its reply, and
        replays nothing (an older host replies the same and holds nothing)."""
        done = self.done.done() or not self.replied
        if done or self.transport is None or self.transport.is_closing():
            return
        # Its reply is one "ok", in order with the flushes' (data_received).
        self.flushes.append(asyncio.get_running_loop().create_future())
        every = WATCH_EVERY_MS if every_ms is None else every_ms
        self.transport.write(wire.json_frame({"op": "watch", "every_ms": every}))

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        while self.flushes:
            _resolve(self.flushes.popleft())
        if not self.done.done():
            self.done.set_result(None)


def _resolve(heard: asyncio.Future[None]) -> None:
    if not heard.done():
        heard.set_result(None)

"""The agents' screens: each host's PTY output rendered by a terminal emulator (pyte).

The host stays lean (it only forwards its output on the daemon's watch connection, the
same one that tells of the program's end); the daemon keeps one emulated screen per live
agent.  Output is only queued as it arrives; it is fed to the emulator when someone looks
(``volee output``, the agent window, an answer checking its dialog), so an agent nobody
looks at costs a byte copy, not an emulation.  The last screen of an agent whose program
ended is written to ``<state>/screens/<agent>.json`` and kept: a failed agent shows what
it printed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import msgspec

from ...atomicfile import write_atomic
from ...paths import ensure_private_dir
from ..clock import Clock

log = logging.getLogger(__name__)

#: Output queued for an agent before the oldest is dropped (the screen is then rebuilt from
#: what is left: a full-screen program redraws it soon enough).
PENDING_LIMIT = 256 * 1024
#: The outputs a probe is given at most (``Term.probe``): it is given the whole screen (the
#: rows an output changed rendered again, up to 1.4 ms for 40 rows of 120), so a dialog never
#: found (a request whose dialog does not match it) does not cost that on every output while
#: it asks; reads still look after it.
PROBE_OUTPUTS = 64
DEFAULT_ROWS, DEFAULT_COLS = 40, 120
#: How long a read for a person waits for the output a host holds back (it answers at once).
FLUSH_WAIT = 1.0


@dataclass(frozen=True)
class Snapshot:
    """An agent's screen as text: ``lines`` are the screen's rows (``history`` above them)."""

    lines: list[str]
    rows: int
    cols: int
    cursor: tuple[int, int]
    at: float
    live: bool
    version: int  # bytes of output seen: unchanged means the screen is unchanged
    history: list[str] = field(default_factory=list)

    def tail(self, count: int) -> list[str]:
        """The last ``count`` lines (history included), blank lines at the end dropped."""
        lines = [*self.history, *self.lines]
        while lines and not lines[-1].strip():
            lines.pop()
        return lines[-count:] if count > 0 else []

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["cursor"] = list(self.cursor)
        return data

    @classmethod
    def from_json(cls, data: bytes) -> Snapshot:
        """A kept screen read back (``ValueError`` when it is not one); never live."""
        kept = msgspec.json.decode(data, type=_Kept)
        return cls(
            lines=kept.lines,
            rows=kept.rows or DEFAULT_ROWS,
            cols=kept.cols or DEFAULT_COLS,
            cursor=kept.cursor,
            at=kept.at,
            live=False,
            version=kept.version,
            history=kept.history,
        )


class _Kept(msgspec.Struct):
    """A last screen as ``Screens`` keeps it on disk (``Snapshot.to_dict``); what a file
    lacks (one of an older volee) is its default, what it holds besides is ignored."""

    lines: list[str] = []
    rows: int = DEFAULT_ROWS
    cols: int = DEFAULT_COLS
    cursor: tuple[int, int] = (0, 0)
    at: float = 0.0
    version: int = 0
    history: list[str] = []


class Term:
    """One agent's emulated terminal and the output not yet fed to it."""

    def __init__(
        self, rows: int, cols: int, on_rows: Callable[[list[str]], None] | None = None
    ) -> None:
        self.rows, self.cols = rows, cols
        #: Told the rows each output changed, as it is fed (in the feeding thread): what a
        #: screen showed for a moment between two reads (Claude Code's retry line, drawn as
        #: the cells that change, reads "API Error" by the time anyone looks).
        self.on_rows = on_rows
        # pyte (and wcwidth's tables) load with the first screen, not with the daemon: a
        # daemon or an app with no agent yet starts without them (issue 27).
        from .emulator import new_screen

        self.screen, self.stream = new_screen(cols, rows)
        self.pending: list[bytes | tuple[int, int]] = []
        self.pending_size = 0
        self.version = 0
        self.rebuild = False
        self.queue_lock = threading.Lock()  # guards pending (the loop adds, a thread takes)
        self.feed_lock = threading.Lock()  # one feeder at a time
        self.cached: Snapshot | None = None  # the screen as last read, while nothing came
        #: The rows as text when last read, and the rows changed since (pyte's ``dirty``,
        #: taken as each output is fed when a row watcher clears it): a read renders only
        #: those. Claude Code blinks one cell twice a second while it asks (issue 27): a read
        #: of a screen of 40 rows rendered all 40 for it.
        self.lines: list[str] | None = None
        self.stale: set[int] = set()
        self.closed = False  # let go: the emulator is released once no feed runs
        self.exited = False  # the program's exit was told: no longer live, kept until ended
        self.released = False
        #: Given the whole screen after each output is fed (in the feeding thread) until it
        #: says True: a dialog drawn and answered between two reads is still seen.
        self.probe: Callable[[list[str]], bool] | None = None
        self.probed = 0  # outputs the probe was given
        self.probe_key: str | None = None  # what it looks for (armed again only for another)

    def close(self) -> None:
        """Let the emulator go now (from any thread, without waiting): pyte's screen would
        otherwise wait in a reference cycle for the oldest generation's collection
        (``emulator.py``).  A feed or read running meanwhile releases it as it ends; a read
        after gives the last screen read."""
        self.closed = True
        self._release_if_idle()

    def _release_if_idle(self) -> None:
        # Called after setting ``closed`` (close) or after letting go of the feed lock (a
        # feeder): whichever comes second finds the lock free and the flag set.
        if self.closed and not self.released and self.feed_lock.acquire(blocking=False):
            try:
                if not self.released:
                    from .emulator import release

                    self.released = True
                    release(self.screen, self.stream)
            finally:
                self.feed_lock.release()

    def add(self, data: bytes) -> None:
        with self.queue_lock:
            self.pending.append(data)
            self.pending_size += len(data)
            self.version += len(data)
            while self.pending_size > PENDING_LIMIT and len(self.pending) > 1:
                dropped = self.pending.pop(0)
                if isinstance(dropped, bytes):
                    self.pending_size -= len(dropped)
                self.rebuild = True

    def resize(self, rows: int, cols: int) -> None:
        with self.queue_lock:
            self.pending.append((rows, cols))

    def feed(self) -> None:
        """Feed what is queued (blocking: run it in a thread); the next read renders."""
        with self.feed_lock:
            if self.released:
                return
            with self.queue_lock:
                items, self.pending, self.pending_size = self.pending, [], 0
                rebuild, self.rebuild = self.rebuild, False
            if items or rebuild:
                self.cached = None
                self._feed(items, rebuild)
        self._release_if_idle()

    def feed_now(self, limit: int) -> set[int] | None:
        """Feed what is queued in the calling thread when it is at most ``limit`` bytes and
        no other feed runs; the rows it changed (an empty set: none), or None when it was not
        fed or cannot say (a resize or a rebuild queued)."""
        if self.pending_size > limit or not self.feed_lock.acquire(blocking=False):
            return None
        try:
            if self.released:
                return None
            with self.queue_lock:
                if self.rebuild or self.pending_size > limit:
                    return None
                items, self.pending, self.pending_size = self.pending, [], 0
            if not items:
                return set()
            resized = any(isinstance(item, tuple) for item in items)
            changed: set[int] | None = None if resized else set()
            self.cached = None
            self._feed(items, False, changed)
            return changed
        finally:
            self.feed_lock.release()
            self._release_if_idle()

    def _feed(
        self,
        items: list[bytes | tuple[int, int]],
        rebuild: bool,
        changed: set[int] | None = None,
    ) -> None:
        from .emulator import line_text, new_screen, release

        if rebuild:
            release(self.screen, self.stream)  # the screen replaced is freed at once
            self.screen, self.stream = new_screen(self.cols, self.rows)
        screen = self.screen
        watch = self.on_rows
        if watch is not None:  # the watcher is told the rows each output changed
            self.stale.update(screen.dirty)
            screen.dirty.clear()
        for item in items:
            if isinstance(item, tuple):
                self.rows, self.cols = item
                screen.resize(self.rows, self.cols)
                continue
            try:
                self.stream.feed(item)
            except Exception:  # a sequence pyte cannot take must not lose the screen
                log.exception("the terminal emulator failed on the output")
            if changed is not None:
                changed.update(screen.dirty)
            if watch is not None and screen.dirty:
                rows = sorted(y for y in screen.dirty if 0 <= y < screen.lines)
                self.stale.update(screen.dirty)
                screen.dirty.clear()
                watch([line_text(screen.buffer[y], screen.columns) for y in rows])
            probe = self.probe
            if probe is None:
                continue
            self.probed += 1
            if (
                probe(self._lines()) or self.probed >= PROBE_OUTPUTS
            ) and self.probe is probe:  # not one the loop put in its place meanwhile
                self.probe = None

    def _lines(self) -> list[str]:
        """Every row of the screen as text (a new list), rendering only the rows changed
        since the last call; the feeder's lock is held."""
        from .emulator import line_text, screen_lines

        screen = self.screen
        lines, stale = self.lines, self.stale
        stale.update(screen.dirty)
        screen.dirty.clear()
        if lines is None or len(lines) != screen.lines:
            lines = self.lines = screen_lines(screen)
        else:
            # pyte joins a combining mark drawn at a row's start to the last cell of the row
            # above, and marks only the row it drew on: the row above each is read again.
            for y in stale.union([y - 1 for y in stale]):
                if 0 <= y < screen.lines:
                    lines[y] = line_text(screen.buffer[y], screen.columns)
        stale.clear()
        return list(lines)

    def render(self, live: bool) -> Snapshot:
        """Feed what is queued, then read the screen (blocking: run it in a thread)."""
        try:
            return self._render(live)
        finally:
            self._release_if_idle()

    def _render(self, live: bool) -> Snapshot:
        with self.feed_lock:
            if self.released:  # closed: the screen as last read
                return self.cached or Snapshot(
                    [], self.rows, self.cols, (0, 0), time.time(), live, 0
                )
            with self.queue_lock:
                items, self.pending, self.pending_size = self.pending, [], 0
                rebuild, self.rebuild = self.rebuild, False
                version = self.version
            cached = self.cached
            if not items and not rebuild and cached is not None and cached.live == live:
                return cached  # nothing new: the same screen (a window polls it each second)
            self._feed(items, rebuild)
            screen = self.screen
            self.cached = Snapshot(
                lines=self._lines(),
                rows=screen.lines,
                cols=screen.columns,
                cursor=(screen.cursor.x, screen.cursor.y),
                at=time.time(),
                live=live,
                version=version,
                history=list(screen.history),
            )
            return self.cached


class Screens:
    """Every live agent's terminal, and the last screens of those that ended."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.terms: dict[str, Term] = {}
        self.last: dict[str, Snapshot] = {}
        self._changed: dict[str, asyncio.Event] = {}
        #: Called with the agent's id at each of its outputs (cheap: nothing is rendered).
        self.on_output: list[Callable[[str], None]] = []
        #: Called with the agent's id and the output itself (agents/limits.py looks for a word).
        self.on_data: list[Callable[[str, bytes], None]] = []
        #: Called with the agent's id and the rows an output changed, as its screen is fed
        #: (in a worker thread: only cheap, thread-safe work; agents/limits.py).
        self.on_rows: list[Callable[[str, list[str]], None]] = []
        #: Each watched agent's flush (agents/hosts.py): its host holds output back a moment
        #: (host_io.WATCH_EVERY_MS), and a read for a person first has it sent.
        self.flushers: dict[str, Callable[[float], Awaitable[None]]] = {}
        #: Each watched agent's hold (agents/hosts.py): how long its host holds output back
        #: from now on (None: the watch's own), and what each was last told (absent: None).
        self.holders: dict[str, Callable[[int | None], None]] = {}
        self.holding: dict[str, int] = {}

    def hold(self, agent_id: str, every_ms: int | None) -> None:
        """Have a watched agent's host hold its output back ``every_ms`` from now on (None:
        as its watch asked, host_io.WATCH_EVERY_MS); told once per change."""
        holder = self.holders.get(agent_id)
        if holder is None or self.holding.get(agent_id) == every_ms:
            return
        if every_ms is None:
            del self.holding[agent_id]
        else:
            self.holding[agent_id] = every_ms
        holder(every_ms)

    def path_of(self, agent_id: str) -> Path:
        return self.folder / f"{agent_id}.json"

    # --- from the watch connection (the event loop) ----------------------------------------

    def started(self, agent_id: str, rows: int | None, cols: int | None) -> None:
        """A (new) watch connection: a fresh terminal; the host replays its recent output."""
        watchers = self.on_rows

        def rows_of(lines: list[str]) -> None:
            for fn in watchers:
                fn(agent_id, lines)

        self.holding.pop(agent_id, None)  # a new watch holds as it asked
        old = self.terms.get(agent_id)
        self.terms[agent_id] = Term(
            rows or DEFAULT_ROWS, cols or DEFAULT_COLS, rows_of if watchers else None
        )
        if old is not None:
            old.close()

    def output(self, agent_id: str, data: bytes) -> None:
        term = self.terms.get(agent_id)
        if term is not None:
            term.add(data)
        changed = self._changed.pop(agent_id, None)
        if changed is not None:
            changed.set()
        for fn in self.on_output:
            fn(agent_id)
        for data_fn in self.on_data:
            data_fn(agent_id, data)

    def exited(self, agent_id: str) -> None:
        """The host told the program's exit: its screen reads as the last one at once, until
        ``ended`` keeps it."""
        term = self.terms.get(agent_id)
        if term is not None:
            term.exited = True

    def changed(self, agent_id: str) -> asyncio.Event:
        """An event set at the agent's next output (to wait for a screen to change)."""
        return self._changed.setdefault(agent_id, asyncio.Event())

    def probe(
        self, agent_id: str, probe: Callable[[list[str]], bool] | None, key: str | None = None
    ) -> None:
        """Give the agent's whole screen to ``probe`` after each output fed to it (in the
        feeding thread), until it says True, ``PROBE_OUTPUTS`` outputs have passed, or
        another probe (or None) replaces it.  A probe for the ``key`` this terminal was
        given one for already (armed or spent) is not armed again."""
        term = self.terms.get(agent_id)
        if term is None or (key is not None and key == term.probe_key):
            return
        term.probe_key = key
        term.probed = 0
        term.probe = probe

    def resized(self, agent_id: str, rows: int, cols: int) -> None:
        term = self.terms.get(agent_id)
        if term is not None and rows > 0 and cols > 0:
            term.resize(rows, cols)

    async def ended(self, agent_id: str) -> Snapshot | None:
        """The program ended: keep its last screen (in memory and on disk)."""
        self.holding.pop(agent_id, None)
        term = self.terms.pop(agent_id, None)
        if term is None:
            return None
        try:
            snapshot = await asyncio.to_thread(term.render, False)
        finally:
            term.close()
        self.last[agent_id] = snapshot
        try:
            await asyncio.to_thread(self._save, agent_id, snapshot)
        except OSError:
            log.exception("could not keep the last screen of %s", agent_id)
        return snapshot

    def _save(self, agent_id: str, snapshot: Snapshot) -> None:
        ensure_private_dir(self.folder)  # 0700, like every folder of volee's
        write_atomic(self.path_of(agent_id), json.dumps(snapshot.to_dict()).encode())

    def forget(self, agent_id: str) -> None:
        term = self.terms.pop(agent_id, None)
        if term is not None:
            term.close()
        self.last.pop(agent_id, None)
        self._changed.pop(agent_id, None)
        self.path_of(agent_id).unlink(missing_ok=True)

    # --- reading ----------------------------------------------------------------------------

    def last_text(self, agent_id: str) -> str:
        """The agent's live screen as text, fed up to now (blocking; for tests and tools)."""
        term = self.terms.get(agent_id)
        snapshot = term.render(not term.exited) if term is not None else self.last.get(agent_id)
        return "\n".join(snapshot.lines) if snapshot is not None else ""

    def live(self, agent_id: str) -> bool:
        term = self.terms.get(agent_id)
        return term is not None and not term.exited

    def feed_now(self, agent_id: str, limit: int) -> set[int] | None:
        """Feed a live agent's small queued output on the loop (``Term.feed_now``): the rows
        it changed, or None (no terminal, too much queued, a feed running, a resize)."""
        term = self.terms.get(agent_id)
        return term.feed_now(limit) if term is not None else None

    async def feed(self, agent_id: str) -> None:
        """Feed a live agent's screen what its output queued (its row watchers hear it)."""
        term = self.terms.get(agent_id)
        if term is not None:
            await asyncio.to_thread(term.feed)

    async def moved(
        self,
        agent_id: str,
        version: int,
        clock: Clock,
        within: float,
        past: Callable[[Snapshot], bool] | None = None,
    ) -> bool:
        """Whether the agent's screen moved on from ``version`` (the bytes of output seen before
        a key was typed) within ``within`` seconds: output came, the screen is gone, or
        ``past`` says a read is past what the key answered.  How a key is checked to have been
        taken (a harness that drops a key prints nothing)."""
        deadline = clock.now() + within
        while True:
            changed = self.changed(agent_id)
            # Fresh: what the harness printed after the key may be held by its host.
            snapshot = await self.snapshot(agent_id, fresh=True)
            if snapshot is None or snapshot.version != version:
                return True
            if past is not None and past(snapshot):
                return True
            remaining = deadline - clock.now()
            if remaining <= 0:
                return False
            await clock.wait(changed, min(remaining, 0.2))

    async def snapshot(self, agent_id: str, fresh: bool = False) -> Snapshot | None:
        """The agent's screen now (live), or the last one it left; None if volee has none.
        ``fresh``: with the output its host holds back (for a person's eyes)."""
        flush = self.flushers.get(agent_id) if fresh else None
        if flush is not None:
            await flush(FLUSH_WAIT)
        term = self.terms.get(agent_id)
        if term is not None:
            return await asyncio.to_thread(term.render, not term.exited)
        if agent_id in self.last:
            return self.last[agent_id]
        try:
            data = await asyncio.to_thread(self.path_of(agent_id).read_bytes)
        except FileNotFoundError:
            return None
        except OSError:
            log.exception("could not read the last screen of %s", agent_id)
            return None
        try:
            snapshot = Snapshot.from_json(data)
        except ValueError:  # msgspec's errors are ValueErrors
            log.warning("the last screen of %s is unreadable", agent_id)
            return None
        self.last[agent_id] = snapshot
        return snapshot

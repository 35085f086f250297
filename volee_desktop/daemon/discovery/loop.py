"""The discovery loop: list the sessions started outside volee, reconcile, commit (seed 002).

What wakes it (docs/discovery.md, "The cadence"): the watch of the session folders and
the exit watch (``discovery/watches.py``) call ``on_change`` / ``on_exit``; a change of Claude
Code's registry lists only when its signature moved (sessions outside volee hosts).  While
both watches work (``use_watch``: the folder watch runs and a pidfd follows each session),
only a slow safety listing (``safety_discovery_interval``) runs on a clock, whoever is
subscribed (docs/decisions.md D8), without Claude Code's part while its registry holds only
volee's own sessions and reads as at the last listing; a new interactive subscription and
``discovery.refresh`` list only when the watch saw something new.  With the folder watch
but no exit watch (no pidfd: another platform), the safety listing with no interactive
client and the seed's short cadence while one is there.  Without the folder watch, the
seed's cadence:

Cadence: list when the daemon starts; while an interactive client is
subscribed, wait ``discovery_interval`` (2 s) after a listing that changed
something and twice as long after each listing that changed nothing, up to
``max_discovery_interval`` (10 s); with no interactive client, wait
``idle_discovery_interval`` (30 s).  A new interactive subscription and a
``discovery.refresh`` request list at once and bring the short wait back; a
refresh answers once a listing that *started after it* is applied, and the
requests made meanwhile share that listing.  Hook events never shorten the
wait.  Each wait starts when the previous listing ends.

The listing (``listers.SystemLister``) runs outside any lock, with a timeout.  A
failing listing changes nothing, is logged once, and again when it works.
Claude Code missing, or too old to have ``agents --json``: discovery stays off
and ``volee daemon status`` says why.

Seams: the daemon's ``Clock`` (``now`` and ``wait``) and a ``Lister`` (one listing), so
the cadence is tested on a fake clock with a fake lister.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

from ...config import DiscoveryConfig
from ...core.model import Harness
from ...core.reconcile import Listing, reconcile
from ...harness.listing import ListingError
from ...ipc.server import Connection
from ..clock import Clock
from ..context import Clients
from ..errors import Broken, Refused
from ..params import NoParameters
from ..service import Service
from .listers import Lister, ListingFailed, Signature, Unavailable, hosted_sessions
from .watches import ExitWatch, Watch, followed_processes

log = logging.getLogger(__name__)


class Refreshed(TypedDict):
    """``discovery.refresh``: whether a listing ran (with the events it made), or why not;
    ``fresh`` when the watch had seen nothing new since the last one."""

    listed: bool
    reason: NotRequired[str]
    fresh: NotRequired[bool]
    events: NotRequired[int]


# --- the loop -----------------------------------------------------------------------------


class Discovery:
    """The discovery loop, its cadence, ``discovery.refresh`` and its status."""

    def __init__(
        self,
        service: Service,
        config: DiscoveryConfig,
        lister: Lister | None,
        clock: Clock,
        clients: Clients,
        *,
        off: str | None = None,
    ) -> None:
        self.service = service
        self.config = config
        self.lister = lister
        self.clock = clock
        self.clients = clients
        self.off = off if lister is not None else (off or "no lister")
        self.failing: str | None = None
        self.listings = 0
        self.applied = 0
        self.last_listed_at: float | None = None
        self.wait = config.discovery_interval
        self.previous: Listing | None = None
        self._wake = asyncio.Event()
        self._reset = True  # the first listing counts as a reset: the short wait follows it
        self._next: asyncio.Future[Refreshed] | None = None
        # The watch (watches.py): while it runs, a change or an exit says when to list.
        self.watching = False
        self.signature: Signature | None = None  # reads Claude Code's session registry
        self._seen: tuple[tuple[Any, ...], ...] | None = None  # at the last Claude listing
        self._dirty: set[Harness] = set()  # changed since their last listing
        self._folder_changed = False  # Claude's folder changed: compare signatures
        self.changes = 0
        self.skipped = 0  # wakes that found nothing to list
        self.safety_without_claude = 0  # safety listings Claude Code's part was spared
        self.on_listed: Callable[[], None] | None = None  # after each listing (the exit watch)
        # Both watches work (use_watch): no cadence but the safety listing, clients or not.
        self.exits_followed = False
        self.seed_because: str | None = "no watch"  # why the seed's cadence is in force
        self._changes: Watch | None = None
        self._exits: ExitWatch | None = None
        # A new interactive subscription: list at once, the short wait comes back.
        clients.on_join(self._joined)

    # --- the watches --------------------------------------------------------------------------

    def use_watch(self, changes: Watch, exits: ExitWatch, signature: Signature) -> None:
        """Be woken by ``changes`` (started already) and ``exits`` (followed after each
        listing), and read Claude Code's registry with ``signature``."""
        self.signature = signature
        self._changes, self._exits = changes, exits
        self._check_watch()

        def follow() -> None:
            exits.follow(followed_processes(self.service.registry))
            self._check_watch()

        self.on_listed = follow

    def _check_watch(self) -> None:
        """Which cadence is in force, from what the watches say now."""
        changes, exits = self._changes, self._exits
        if changes is None or exits is None:
            return
        self.watching = changes.running
        self.exits_followed = exits.failed is None
        if not self.watching:
            self.seed_because = changes.failed or "the folder watch is not running"
        elif exits.failed is not None:
            self.seed_because = exits.failed
        else:
            self.seed_because = None

    @property
    def quiet(self) -> bool:
        """Both watches work: starts and ends are told, nothing is listed on a short clock."""
        return self.watching and self.exits_followed

    def cadence(self) -> str:
        """For ``volee daemon status``: which cadence is in force (``seed_because`` says why
        it is the seed's)."""
        return "watch" if self.quiet else "seed"

    # --- triggers ---------------------------------------------------------------------------

    def _poke(self) -> None:
        self._reset = True
        self._wake.set()

    def _joined(self) -> None:
        """A new interactive subscription: the seed lists at once so the interface opens on
        fresh data; while both watches work the data is fresh unless they saw something."""
        if self.quiet and self.nothing_new():
            return
        self._poke()

    def on_change(self, harness: Harness) -> None:
        """A harness's session folder changed (the watch): list if it says something new."""
        self.changes += 1
        if harness is Harness.CLAUDE and self.signature is not None:
            self._folder_changed = True
        else:
            self._dirty.add(harness)
        self._wake.set()

    def on_exit(self, harness: Harness) -> None:
        """A process discovery follows ended (the exit watch): list its harness."""
        self._dirty.add(harness)
        self._wake.set()

    def _claude_news(self) -> bool:
        """Whether Claude Code's session registry says something the last listing did not
        (its signature leaves out the sessions of agents in volee hosts: hooks tell those)."""
        if Harness.CLAUDE in self._dirty or self.signature is None or self._seen is None:
            return True
        # Compared with today's hosted agents on both sides: an agent that got its host since
        # the last listing is no news.
        hosted = hosted_sessions(self.service.registry)
        now = [e for e in self.signature() if e[1] not in hosted]
        return now != [e for e in self._seen if e[1] not in hosted]

    def _only_ours(self) -> bool:
        """Claude Code's registry holds only sessions of agents in volee hosts (or none), as
        at its last listing: what `agents --json` says of them the hooks already told."""
        if self.previous is None or self._claude_news():
            return False
        # No news: the registry outside volee's hosts reads as at that listing (one read).
        assert self._seen is not None
        hosted = hosted_sessions(self.service.registry)
        return all(entry[1] in hosted for entry in self._seen)

    def nothing_new(self) -> bool:
        """The watch runs and has seen nothing since the last listing that still matters."""
        if not self.watching or self.failing or self.previous is None:
            return False
        others = self._dirty - {Harness.CLAUDE}
        return not others and not self._claude_news()

    async def refresh(self) -> Refreshed:
        """Answer once a listing that started after this call is applied; at once when the
        watch has seen nothing new since the last one (``volee ls`` polled by a status bar
        costs a folder read, not a Node process)."""
        if self.off:
            return {"listed": False, "reason": self.off}
        if self.nothing_new():
            return {"listed": False, "fresh": True, "events": 0}
        future = self._upcoming()
        self._poke()
        return await asyncio.shield(future)

    async def api_refresh(self, _conn: Connection, _params: NoParameters) -> Refreshed:
        return await self.refresh()

    def _upcoming(self) -> asyncio.Future[Refreshed]:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        return self._next

    # --- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """List, reconcile and wait, until cancelled or discovery turns off."""
        try:
            timed_out = True  # the first listing is due
            remaining = self.wait
            while not self.off:
                reset = self._reset
                self._reset = False
                self._wake.clear()
                quiet = self.quiet
                self._check_watch()
                # A watch that broke: list now, and the seed's cadence from there.
                due = reset or timed_out or not self.watching or (quiet and not self.quiet)
                # The safety listing, both watches working, when Claude Code's registry holds
                # no session outside volee's hosts and says what it said at the last listing:
                # its listing could tell nothing, so codex's and pi's part alone (D8 amended).
                light = timed_out and not reset and quiet and self.quiet and self._only_ours()
                claude = (
                    (due and not light)
                    or Harness.CLAUDE in self._dirty
                    or (self._folder_changed and self._claude_news())
                )
                if light and not claude:
                    self.safety_without_claude += 1
                if due or claude or self._dirty:
                    changed = await self.list_once(claude=claude)
                    if self.off:
                        break
                    self.wait = remaining = self.next_wait(changed or reset)
                else:
                    self.skipped += 1  # a change that says nothing new: keep waiting
                    self._folder_changed = False
                timed_out = False
                if not self._wake.is_set():
                    began = self.clock.now()
                    await self.clock.wait(self._wake, remaining)
                    timed_out = not self._wake.is_set()
                    # Woken by a change: the rest of the wait still counts after it.
                    remaining = max(0.0, remaining - (self.clock.now() - began))
        finally:
            self._settle({"listed": False, "reason": self.off or "discovery stopped"})

    def next_wait(self, changed: bool) -> float:
        """Seconds to wait after a listing."""
        cfg = self.config
        if self.quiet:
            # Starts and ends are told within half a second: a slow safety listing remains.
            return cfg.safety_discovery_interval
        if self.clients.count <= 0:
            # The watch says when something changed: only a slow safety listing remains.
            return cfg.safety_discovery_interval if self.watching else cfg.idle_discovery_interval
        if changed:
            return cfg.discovery_interval
        return min(max(self.wait, cfg.discovery_interval) * 2, cfg.max_discovery_interval)

    def _settle(self, answer: Refreshed) -> None:
        future, self._next = self._next, None
        if future is not None and not future.done():
            future.set_result(answer)

    async def list_once(self, *, claude: bool = True) -> bool:
        """One listing, reconciled and committed; whether it changed anything.

        ``claude`` False: only codex and pi changed, and a lister that can
        (``SystemLister.observe``) keeps the previous Claude Code part (no Node process).
        """
        assert self.lister is not None
        future = self._upcoming()
        self._next = None  # requests from now on wait for the next listing
        self.listings += 1
        dirty, self._dirty = self._dirty, set()
        self._folder_changed = False
        seen = self.signature() if self.signature is not None else None
        observe = getattr(self.lister, "observe", None)
        try:
            if observe is not None and not claude:
                observed = await observe(self.clock.now(), claude=False)
            else:
                observed = await self.lister(self.clock.now())
            if claude:
                self._seen = seen
        except Unavailable as exc:
            self.off = str(exc)
            log.warning("discovery is off: %s", exc)
            future.set_result({"listed": False, "reason": self.off})
            return False
        except (ListingFailed, ListingError) as exc:
            self._dirty |= dirty  # still to be listed
            if self.failing is None:
                log.warning("discovery: listing failed (retrying quietly): %s", exc)
            self.failing = str(exc)
            future.set_result({"listed": False, "reason": self.failing})
            return False
        except asyncio.CancelledError:
            future.set_result({"listed": False, "reason": "discovery stopped"})
            raise
        if self.failing is not None:
            log.info("discovery: listing works again")
            self.failing = None
        self.last_listed_at = self.clock.now()
        events = reconcile(
            self.service.current(),
            observed.listing,
            self.previous,
            observed.processes,
            self.clock.now(),
        )
        self.previous = observed.listing
        committed = False
        if events:
            try:
                await self.service.commit(events)
                committed = True
                self.applied += len(events)
            except (Refused, Broken) as exc:
                log.warning("discovery: %d reconciled events refused: %s", len(events), exc)
        future.set_result({"listed": True, "events": len(events) if committed else 0})
        if self.on_listed is not None:
            self.on_listed()
        return committed

    # --- status -----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """For ``volee daemon status``."""
        self._check_watch()
        if self.off:
            state = "off"
        elif self.failing:
            state = "failing"
        else:
            state = "on"
        out: dict[str, Any] = {
            "state": state,
            "listings": self.listings,
            "events": self.applied,
            "last_listed_at": self.last_listed_at,
            "wait": self.wait,
            "interactive_clients": self.clients.count,
            "watch": "on" if self.watching else "off",
            "cadence": self.cadence(),
            "changes": self.changes,
            "skipped": self.skipped,
            "safety_without_claude": self.safety_without_claude,
        }
        if not self.quiet:
            out["seed_because"] = self.seed_because or "the exit watch is not running"
        reason = self.off or self.failing
        if reason:
            out["reason"] = reason
        claude_off = getattr(self.lister, "claude_off", None)
        if isinstance(claude_off, str):
            out["claude"] = f"off: {claude_off}"
        cpu = getattr(self.lister, "cpu_seconds", None)
        if isinstance(cpu, float):
            out["cpu_seconds"] = round(cpu, 3)
        return out

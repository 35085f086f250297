"""The discovery loop: list the sessions started outside volee, reconcile, commit (seed 002).

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
from typing import Any

from ..config import DiscoveryConfig
from ..core.reconcile import Listing, reconcile
from ..harness.listing import ListingError
from ..ipc.server import Connection
from .clock import Clock
from .context import Clients
from .errors import Broken, Refused
from .listers import Lister, ListingFailed, Unavailable
from .service import Service

log = logging.getLogger(__name__)


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
        self._next: asyncio.Future[dict[str, Any]] | None = None
        # A new interactive subscription: list at once, the short wait comes back.
        clients.on_join(self._poke)

    # --- triggers ---------------------------------------------------------------------------

    def _poke(self) -> None:
        self._reset = True
        self._wake.set()

    async def refresh(self) -> dict[str, Any]:
        """Answer once a listing that started after this call is applied."""
        if self.off:
            return {"listed": False, "reason": self.off}
        future = self._upcoming()
        self._poke()
        return await asyncio.shield(future)

    async def api_refresh(self, _conn: Connection, _params: dict[str, Any]) -> Any:
        return await self.refresh()

    def _upcoming(self) -> asyncio.Future[dict[str, Any]]:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        return self._next

    # --- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """List, reconcile and wait, until cancelled or discovery turns off."""
        try:
            while not self.off:
                reset = self._reset
                self._reset = False
                self._wake.clear()
                changed = await self.list_once()
                if self.off:
                    break
                self.wait = self.next_wait(changed or reset)
                if not self._wake.is_set():
                    await self.clock.wait(self._wake, self.wait)
        finally:
            self._settle({"listed": False, "reason": self.off or "discovery stopped"})

    def next_wait(self, changed: bool) -> float:
        """Seconds to wait after a listing."""
        cfg = self.config
        if self.clients.count <= 0:
            return cfg.idle_discovery_interval
        if changed:
            return cfg.discovery_interval
        return min(max(self.wait, cfg.discovery_interval) * 2, cfg.max_discovery_interval)

    def _settle(self, answer: dict[str, Any]) -> None:
        future, self._next = self._next, None
        if future is not None and not future.done():
            future.set_result(answer)

    async def list_once(self) -> bool:
        """One listing, reconciled and committed; whether it changed anything."""
        assert self.lister is not None
        future = self._upcoming()
        self._next = None  # requests from now on wait for the next listing
        self.listings += 1
        try:
            observed = await self.lister(self.clock.now())
        except Unavailable as exc:
            self.off = str(exc)
            log.warning("discovery is off: %s", exc)
            future.set_result({"listed": False, "reason": self.off})
            return False
        except (ListingFailed, ListingError) as exc:
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
        return committed

    # --- status -----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """For ``volee daemon status``."""
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
        }
        reason = self.off or self.failing
        if reason:
            out["reason"] = reason
        cpu = getattr(self.lister, "cpu_seconds", None)
        if isinstance(cpu, float):
            out["cpu_seconds"] = round(cpu, 3)
        return out

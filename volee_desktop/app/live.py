"""The app's copy of the daemon's registry, kept live from the feed, and what each event changed.

``LiveRegistry`` is a ``LinkListener``: it applies the snapshot and then every
event to a local ``core.registry.Registry`` (no polling) and tells its
observers, per event, exactly which agents and which mission changed (before
and after), so the list model can update rows by id and the notification
policy can see transitions.  It is Qt-free.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, Agent, Mission
from volee_desktop.core.registry import Registry

from .summary import StateCounts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """One applied event and what it changed: agents (before, after) and a mission."""

    seq: int
    event: ev.Event
    agents: tuple[tuple[Agent | None, Agent | None], ...] = ()
    mission: tuple[Mission | None, Mission | None] | None = None


class LiveObserver(Protocol):
    """Whoever shows the live registry: the list model, the tray, the notifier."""

    def on_reset(self, registry: Registry) -> None: ...

    def on_change(self, change: Change) -> None: ...


@dataclass
class Connection:
    """Whether the feed is up, and the last thing the daemon said about itself."""

    connected: bool = False
    detail: str = "connecting to the volee daemon"
    notices: list[dict[str, Any]] = field(default_factory=list)


def _touched_agents(registry: Registry, event: ev.Event) -> list[str]:
    """Ids of the agents ``event`` may change (looked up before it is applied)."""
    if isinstance(event, ev.AgentEvent):
        return [event.agent]
    if isinstance(event, ev.MissionUpdated) and event.status is not None:
        # An ending mission holds every agent of it.
        return [a.id for a in registry.mission_agents(event.mission)]
    if isinstance(event, ev.MessagePosted) and event.sender == HUMAN:
        return [r for r in event.recipients if r in registry.agents]  # a message lifts a hold
    return []


def _touched_mission(event: ev.Event) -> str | None:
    if isinstance(event, ev.MissionCreated | ev.MissionUpdated | ev.WorkerAssessed):
        return event.mission
    return None


class LiveRegistry:
    """A local registry fed by a ``DaemonLink``; tells observers what changed, event by event."""

    def __init__(self) -> None:
        self.registry = Registry()
        self.counts = StateCounts()
        self.connection = Connection()
        self._observers: list[LiveObserver] = []
        self._connection_observers: list[Callable[[Connection], None]] = []
        self.on_gap: Callable[[], None] | None = None
        self.synced = False

    def observe(self, observer: LiveObserver) -> None:
        """Add an observer; it gets the current registry right away."""
        self._observers.append(observer)
        observer.on_reset(self.registry)

    def observe_connection(self, callback: Callable[[Connection], None]) -> None:
        self._connection_observers.append(callback)

    # --- LinkListener ----------------------------------------------------------------------

    def on_snapshot(self, registry: Registry, seq: int) -> None:
        registry.seq = seq
        self.registry = registry
        self.counts = StateCounts.of(registry.agents.values())
        self.synced = True
        for observer in self._observers:
            observer.on_reset(registry)
        self._set_connection(True, "connected")

    def on_event(self, seq: int, event: ev.Event) -> None:
        registry = self.registry
        if self.synced and seq != registry.seq + 1:
            log.warning("event %d follows %d: a gap; asking for a new snapshot", seq, registry.seq)
            self._resync()
            return
        ids = _touched_agents(registry, event)
        before = [registry.agents.get(i) for i in ids]
        mission_id = _touched_mission(event)
        mission_before = registry.missions.get(mission_id) if mission_id else None
        try:
            registry.apply(event)
        except Exception:
            # The daemon only sends events it applied: a failure here means our copy drifted.
            log.exception("event %d (%s) does not apply to the app's copy", seq, event.TYPE)
            self._resync()
            return
        registry.seq = seq
        changed: list[tuple[Agent | None, Agent | None]] = []
        for agent_id, old in zip(ids, before, strict=True):
            new = registry.agents.get(agent_id)
            if old is not new:
                changed.append((old, new))
                self.counts.move(old, new)
        mission = None
        if mission_id is not None:
            mission = (mission_before, registry.missions.get(mission_id))
        change = Change(seq, event, tuple(changed), mission)
        for observer in self._observers:
            observer.on_change(change)

    def on_notice(self, notice: dict[str, Any]) -> None:
        self.connection.notices.append(notice)
        del self.connection.notices[:-20]
        for callback in self._connection_observers:
            callback(self.connection)

    def on_connection(self, connected: bool, detail: str) -> None:
        self._set_connection(connected, detail)

    # --- helpers ------

    def _set_connection(self, connected: bool, detail: str) -> None:
        self.connection.connected = connected
        self.connection.detail = detail
        for callback in self._connection_observers:
            callback(self.connection)

    def _resync(self) -> None:
        self.synced = False
        if self.on_gap is not None:
            self.on_gap()

"""The app's copy of the daemon's registry, kept live from the feed, and what each event changed.

``LiveRegistry`` is a ``LinkListener``: it applies the snapshot and then every
event to a local ``core.registry.Registry`` (no polling) and tells its
observers, per event, exactly which agents and which mission changed (before
and after), so the list model can update rows by id and the notification
policy can see transitions.  It is Qt-free.

The other machines' agents and missions (docs/machines.md) come as ``machines`` pushes of
the local daemon's feed (what changed of each machine's state, agents, missions and messages,
after every change of its link): they are kept per machine and merged into the same registry,
so the list, the tray's counts and menu, the notifications, the agent windows and the
approval dialog show them as any other; ``machine(id)`` says which machine an agent is on and
whether it is reachable.  Actions on them go through the local daemon, which forwards them
(agent and mission ids are ULIDs, unique across machines).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, Agent, Mission
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.store.codec import CodecError, decode_registry

from .summary import StateCounts

log = logging.getLogger(__name__)

#: What the app keeps of another machine (the daemon's daemon/machines/feed.py sends them).
TABLES = ("agents", "missions", "messages")
Tables = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Change:
    """One applied event and what it changed: agents (before, after) and a mission."""

    seq: int
    event: ev.Event
    agents: tuple[tuple[Agent | None, Agent | None], ...] = ()
    mission: tuple[Mission | None, Mission | None] | None = None


@dataclass(frozen=True, kw_only=True)
class MachineChanged(ev.Event):
    """The app's own event (never in a log): another machine's agents or reachability
    changed, as a ``machines`` push said."""

    TYPE = "app-machine-changed"
    machine: str


@dataclass
class RemoteMachine:
    """Another machine as the app knows it: reachable or not, and its agents."""

    name: str
    reachable: bool = False
    since: float | None = None
    problem: str | None = None
    #: ``devbox is unreachable since 14:02 (why)`` while it is (the daemon's words).
    unreachable: str | None = None
    #: Its agents, missions and messages, by id (``TABLES``).
    tables: Tables = field(default_factory=lambda: {t: {} for t in TABLES})

    @property
    def agents(self) -> dict[str, Agent]:
        return self.tables["agents"]

    def label(self) -> str:
        """What a row shows of it: ``devbox``, or ``devbox unreachable since 14:02``."""
        if self.reachable:
            return self.name
        if self.since is not None:
            since = time.strftime("%H:%M", time.localtime(self.since))
            return f"{self.name} unreachable since {since}"
        return f"{self.name} unreachable"


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

    def __init__(self, on_gap: Callable[[], None] | None = None) -> None:
        self.registry = Registry()
        self.counts = StateCounts()
        self.connection = Connection()
        self._observers: list[LiveObserver] = []
        self._connection_observers: list[Callable[[Connection], None]] = []
        self.on_gap = on_gap  # a gap in the events: subscribe again (None: nobody to ask)
        self.synced = False
        #: The other machines (name → what the last ``machines`` push said of it).
        self.machines: dict[str, RemoteMachine] = {}
        self._owner: dict[str, str] = {}  # agent id → machine name
        #: Mission and message ids → the machine they are on.
        self._owner_of: dict[str, dict[str, str]] = {"missions": {}, "messages": {}}

    def machine(self, agent_id: str) -> RemoteMachine | None:
        """The other machine ``agent_id`` (or a mission's id) is on (None: this one)."""
        name = self._owner.get(agent_id) or self._owner_of["missions"].get(agent_id)
        return self.machines.get(name) if name is not None else None

    def machine_name(self, agent_id: str) -> str:
        """``devbox``: the name of the other machine it is on; empty for this machine."""
        machine = self.machine(agent_id)
        return machine.name if machine is not None else ""

    def machine_label(self, agent_id: str) -> str:
        """``devbox`` / ``devbox unreachable since 14:02`` for a row; empty for this machine."""
        machine = self.machine(agent_id)
        return machine.label() if machine is not None else ""

    def observe(self, observer: LiveObserver) -> None:
        """Add an observer; it gets the current registry right away."""
        self._observers.append(observer)
        observer.on_reset(self.registry)

    def observe_connection(self, callback: Callable[[Connection], None]) -> None:
        self._connection_observers.append(callback)

    # --- LinkListener ----------------------------------------------------------------------

    def on_snapshot(self, registry: Registry, seq: int) -> None:
        registry.seq = seq
        for machine in self.machines.values():  # what the other machines have stays
            for table in TABLES:
                getattr(registry, table).update(machine.tables[table])
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

    def on_machines(self, push: dict[str, Any]) -> None:
        """Take what changed of the other machines (the daemon's ``machines`` push: per
        machine, its state and its new or changed agents, missions and messages, or all of
        them when ``full``; ``removed``: the machines no longer configured)."""
        machines = push.get("machines")
        for data in machines if isinstance(machines, list) else []:
            name = data.get("name") if isinstance(data, dict) else None
            if isinstance(name, str) and name:
                self._take_machine(name, data)
        removed = push.get("removed")
        for name in removed if isinstance(removed, list) else []:
            if name in self.machines:
                self._take_machine(name, None)  # `volee machine rm`

    def _tables(self, name: str, old: RemoteMachine | None, data: dict[str, Any]) -> Tables:
        """The machine's agents, missions and messages after this push."""
        full = bool(data.get("full")) or old is None
        tables: Tables = {t: {} if full or old is None else dict(old.tables[t]) for t in TABLES}
        blob = data.get("registry")
        if isinstance(blob, str):
            try:
                part = decode_registry(blob.encode())
            except CodecError as exc:
                log.warning("the agents of %s cannot be read: %s", name, exc)
            else:
                for table in TABLES:
                    tables[table].update(getattr(part, table))
        elif full and old is not None:
            tables = {t: dict(old.tables[t]) for t in TABLES}  # never reached: kept as they were
        gone = data.get("gone")
        for table, ids in (gone if isinstance(gone, dict) else {}).items():
            for key in ids if table in tables and isinstance(ids, list) else []:
                tables[table].pop(key, None)
        # An id that is this machine's own stays this machine's (never shadowed).
        for table in TABLES:
            mine = getattr(self.registry, table)
            ours = self._owner if table == "agents" else self._owner_of[table]
            for key in [k for k in tables[table] if k in mine and k not in ours]:
                del tables[table][key]
        return tables

    def _take_machine(self, name: str, data: dict[str, Any] | None) -> None:
        old = self.machines.get(name)
        old_tables: Tables = old.tables if old is not None else {t: {} for t in TABLES}
        if data is None:
            del self.machines[name]
            tables: Tables = {t: {} for t in TABLES}
            reach_changed = True
        else:
            tables = self._tables(name, old, data)
            machine = RemoteMachine(
                name,
                reachable=bool(data.get("reachable")),
                since=data.get("since") if isinstance(data.get("since"), int | float) else None,
                problem=data.get("problem") if isinstance(data.get("problem"), str) else None,
                unreachable=(
                    data.get("unreachable") if isinstance(data.get("unreachable"), str) else None
                ),
                tables=tables,
            )
            reach_changed = old is None or (old.reachable, old.since) != (
                machine.reachable,
                machine.since,
            )
            self.machines[name] = machine
        missions = self._merge(name, "missions", old_tables, tables)
        self._merge(name, "messages", old_tables, tables)
        old_agents, new_agents = old_tables["agents"], tables["agents"]
        agents = self.registry.agents
        changed: list[tuple[Agent | None, Agent | None]] = []
        for agent_id in {**old_agents, **new_agents}:
            before, after = old_agents.get(agent_id), new_agents.get(agent_id)
            if before == after and not reach_changed:
                continue
            if after is None:
                agents.pop(agent_id, None)
                self._owner.pop(agent_id, None)
            else:
                agents[agent_id] = after
                self._owner[agent_id] = name
            self.counts.move(before, after)
            changed.append((self._news_before(old, name, before, after), after))
        if not changed and not reach_changed and not missions:
            return
        event = MachineChanged(at=time.time(), machine=name)
        changes = [Change(self.registry.seq, event, tuple(changed))]
        # A machine seen for the first time is the state of things, not news (as agents).
        news = [(after if old is None else before, after) for before, after in missions]
        changes += [Change(self.registry.seq, event, (), m) for m in news]
        for change in changes:
            for observer in self._observers:
                observer.on_change(change)

    def _merge(self, name: str, table: str, old: Tables, new: Tables) -> list[tuple[Any, Any]]:
        """Put a machine's missions or messages into the one registry; what changed."""
        mine: dict[str, Any] = getattr(self.registry, table)
        owner = self._owner_of[table]
        changed = []
        for key in {**old[table], **new[table]}:
            before, after = old[table].get(key), new[table].get(key)
            if before == after:
                continue
            if after is None:
                mine.pop(key, None)
                owner.pop(key, None)
            else:
                mine[key] = after
                owner[key] = name
            changed.append((before, after))
        return changed

    def _news_before(
        self, old: RemoteMachine | None, name: str, before: Agent | None, after: Agent | None
    ) -> Agent | None:
        """The "before" observers are told: a machine seen for the first time is the state
        of things, not news (as a snapshot); one that is back tells again of what still
        waits for the person (its notifications were withdrawn while it was unreachable)."""
        machine = self.machines.get(name)
        if old is None:
            return after
        back = machine is not None and machine.reachable and not old.reachable
        if back and after is not None and after.state is AgentState.NEEDS_INPUT:
            return None
        return before

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

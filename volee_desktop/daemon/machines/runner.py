"""The other machines, as this daemon sees them: one link each, their agents in ``agents.list``,
and the actions on their agents forwarded to their daemons.

The local daemon owns the links (not the tray: the CLI, the tray and scripts all read one
list, and a link lives as long as the daemon, with or without a desktop), except where no local
daemon runs (Windows, ``volee app --no-daemon``): there the app owns them, through the same
``MachineRouter`` (``app/machines_only.py``).  Each machine of
``[machines]`` gets a ``MachineLink`` (``machinelink.py``).  This runner is ``Api``'s router:

- ``agents.list``: this machine's agents (``machine`` null) and those of every other machine
  (``machine`` its name, ``reachable`` false while it is unreachable), most urgent first;
- an action on an agent (allow, deny, answer, send, stop, resume, forget, output, timeline…)
  whose AGENT is ``NAME:AGENT``, or a plain name or id found on exactly one other machine, is
  sent over that machine's link; an agent's own request never is (the bridge is the person
  there: docs/trust-model.md);
- ``agents.spawn``, ``missions.create`` and ``agents.harnesses`` with ``machine``;
- ``missions.list`` (every machine's) and a method on a mission of another machine
  (``NAME:MISSION``, or an id found there only): ``missions.py``.

``feed()`` makes what ``subscribe`` pushes to the app as ``machines`` (what changed of each
machine's state, agents and missions: ``feed.py``), and ``on_change`` is called whenever a
link changed (pushes, never polls: D8).

Methods of its own: ``machine.hello`` (every daemon answers it: the handshake),
``machines.list`` and ``machines.reload`` (``volee machine add|rm`` after changing
config.toml).  Docs: docs/machines.md.
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

from ... import __version__
from ...config import load_config
from ...core.registry import Registry
from ...core.states import AgentState
from ...ipc.caller import caller_of
from ...ipc.methods import Method
from ...ipc.protocol import PROTOCOL_VERSION
from ...ipc.server import Connection
from ...machines import Machine
from ..clock import Clock
from ..context import Context
from ..errors import Forbidden, NotFound, Refused
from ..params import NoParameters, Parameters, decoder, flag, text
from ..views import agent_view, listed, resolve_agent
from . import missions
from .feed import MachinesFeed
from .link import Dialer, MachineLink, dial_process, new_machine_id
from .targets import find_target

log = logging.getLogger(__name__)

#: This machine's own handler of a method (the daemon's ``Api``; the app with no local daemon
#: refuses what only one could do). Its first argument is the caller's connection.
Local = Callable[[Any, str, dict[str, Any]], Awaitable[Any]]

#: The methods on one agent that go to the agent's machine; how long each may take there.
FORWARDED: dict[str, float] = {
    Method.AGENTS_GET: 30.0,
    Method.AGENTS_TIMELINE: 60.0,
    Method.AGENTS_SEND: 60.0,
    Method.AGENTS_ALLOW: 60.0,
    Method.AGENTS_DENY: 60.0,
    Method.AGENTS_ANSWER: 60.0,
    Method.AGENTS_OUTPUT: 30.0,
    Method.AGENTS_STOP: 60.0,
    Method.AGENTS_RESUME: 120.0,
    Method.AGENTS_FORGET: 60.0,
    Method.AGENTS_SEEN: 30.0,
    Method.AGENTS_SCREEN: 30.0,
    Method.AGENTS_CHANGES: 120.0,
    # What the app's agent window and rows ask of an agent (keys typed into its screen, its
    # conversation, what its work came to, continuing after a usage limit).
    Method.AGENTS_KEYS: 30.0,
    Method.AGENTS_LOG: 60.0,
    Method.AGENTS_OUTCOME: 30.0,
    Method.AGENTS_CONTINUE: 60.0,
}
SPAWN_TIMEOUT = 300.0
#: The methods that name the machine to do them on (``machine``), and how long each may take.
MADE_THERE: dict[str, float] = {
    Method.AGENTS_SPAWN: SPAWN_TIMEOUT,
    Method.MISSIONS_CREATE: SPAWN_TIMEOUT,
    Method.AGENTS_HARNESSES: 30.0,  # the New agent dialog offers that machine's harnesses
}
#: ``machines.reload``'s longest wait for the links' first attempts.
MAX_WAIT = 60.0


def machine_id(state: Path) -> str:
    """This daemon's machine id, made once and kept in ``<state>/machine-id``: how another
    machine tells that two of its names reach the same daemon."""
    path = state / "machine-id"
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    made = new_machine_id()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(made + "\n", encoding="utf-8")
    tmp.replace(path)
    return made


def _urgency(view: dict[str, Any]) -> tuple[int, float, str]:
    """``core.tables.urgency_key`` of an agent view (views of several machines, one order)."""
    try:
        urgency = AgentState(view["state"]).urgency
    except ValueError:
        urgency = 99
    return (urgency, -float(view.get("state_since") or 0.0), str(view.get("id")))


class MachineView(TypedDict):
    """A machine as ``volee machine ls --json`` shows it (``Machines.view``)."""

    name: str
    ssh: str | None
    via: str | None
    volee: str
    reachable: bool
    since: float | None
    version: str | None
    agents: int | None
    problem: str | None
    host: str | None
    machine_id: str | None
    seq: int | None
    attempts: int
    snapshots: int
    replays: int


class Reloaded(TypedDict):
    """``machines.reload``: the machines now, and what ``[machines]`` got wrong."""

    machines: list[MachineView]
    problems: list[str]


class Hello(TypedDict):
    """``machine.hello``: the handshake another machine's link starts with."""

    version: str
    protocol: int
    machine_id: str
    host: str
    seq: int


class ListParams(Parameters, frozen=True, kw_only=True):
    """``machines.list``: ``retry`` links that are down now."""

    retry: bool = False


class ReloadParams(Parameters, frozen=True, kw_only=True):
    """``machines.reload``: how long to wait (s) for the new links' first try."""

    wait: float | None = None


class MachineRouter:
    """The links to the other machines, and the routing of requests to them: what the daemon
    (``Machines``) and the app without a local daemon (``app/machines_only.py``, D-nolocal in
    docs/decisions.md) share.  ``here()`` is this machine's registry (empty in the app), and
    ``spawn`` runs a background task."""

    def __init__(
        self,
        clock: Clock,
        dial: Dialer,
        own_id: str,
        here: Callable[[], Registry],
        spawn: Callable[[Awaitable[Any], str], asyncio.Task[Any]],
    ) -> None:
        self.clock = clock
        self.dial = dial
        self.id = own_id
        self.here = here
        self.spawn = spawn
        self.links: dict[str, MachineLink] = {}
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        #: Called when a link's state or registry changed (the feed pushes ``machines``).
        self.on_change: Callable[[], None] = lambda: None

    # --- the links --------------------------------------------------------------------------

    def start(self, machines: dict[str, Machine]) -> None:
        """Link every machine of ``machines`` (and unlink those no longer there)."""
        for name in list(self.links):
            link = self.links[name]
            if machines.get(name) != link.machine:
                self._tasks.pop(name).cancel()
                del self.links[name]
                self.spawn(link.close(), f"machine-close-{name}")
                self.on_change()
        for name, machine in machines.items():
            if name in self.links:
                continue
            link = MachineLink(machine, self.dial, self.clock, self._claim)
            link.changed = self._changed
            self.links[name] = link
            self._changed()
            self._tasks[name] = self.spawn(link.run(), f"machine-{name}")

    def _claim(self, link: MachineLink, machine_id: str) -> str | None:
        """Why ``link`` may not be the link to ``machine_id`` (None: it may)."""
        if machine_id == self.id:
            return (
                f"{link.name} is this machine itself (the same volee daemon); "
                f"`volee machine rm {link.name}`"
            )
        for other in self.links.values():
            linked = other.client is not None  # connected, or in its handshake
            if other is not link and linked and other.state.machine_id == machine_id:
                return (
                    f"{link.name} is the same machine as {other.name} (machine id {machine_id}): "
                    f"`volee machine rm {link.name}`"
                )
        return None

    def _changed(self) -> None:
        self.on_change()

    def feed(self) -> Callable[[], dict[str, Any] | None]:
        """A new app feed's ``machines`` pushes (``feed.py``): each call is the next push of
        that feed (what changed of each machine since its last one), None while nothing did."""
        return MachinesFeed(lambda: self.links).next

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        await asyncio.gather(*(link.close() for link in self.links.values()))
        self._tasks.clear()

    # --- methods ------------------------------------------------------------------------------

    def view(self, link: MachineLink) -> MachineView:
        """A machine as ``volee machine ls --json`` shows it."""
        state = link.state
        machine = link.machine
        agents = len(listed(link.registry, False)) if link.registry is not None else None
        return {
            "name": link.name,
            "ssh": machine.ssh,
            "via": machine.via,
            "volee": machine.volee,
            "reachable": state.reachable,
            "since": state.since,
            "version": state.version,
            "agents": agents,
            "problem": state.problem,
            "host": state.host,
            "machine_id": state.machine_id,
            "seq": link.seq,
            "attempts": state.attempts,
            "snapshots": state.snapshots,
            "replays": state.replays,
        }

    # --- routing (Api's router) -----------------------------------------------------------

    async def route(
        self, conn: Connection | None, method: str, params: dict[str, Any], local: Local
    ) -> Any:
        """Serve ``method`` here (``local``) or on the machine its agent lives on."""
        if method == Method.AGENTS_LIST:
            return await self._list(conn, params, local)
        if method in MADE_THERE and params.get("machine") is not None:
            name = text(params, "machine") or ""
            link = self.links.get(name)
            if link is None:
                known = ", ".join(self.links) or "none yet: `volee machine add NAME --ssh DEST`"
                raise NotFound(f"no machine {name!r} (known: {known})")
            self._person_only(conn, method, name)
            forwarded = {k: v for k, v in params.items() if k != "machine"}
            return self._mark(await link.call(method, forwarded, MADE_THERE[method]), link)
        if not self.links:
            return await local(conn, method, params)
        if method in (Method.MISSIONS_LIST, *missions.FORWARDED):
            return await self._mission(conn, method, params, local)
        if method == Method.AGENTS_ATTACH_INFO:
            target = self._target(params)
            if target is not None:
                link, _ref = target
                raise Refused(
                    f"the agent is on {link.name}: attach there, in your terminal "
                    f"(`{self._attach_hint(link, _ref)}`)"
                )
        timeout = FORWARDED.get(method)
        if timeout is None:
            return await local(conn, method, params)
        target = self._target(params)
        if target is None:
            return await local(conn, method, params)
        link, agent = target
        self._person_only(conn, method, link.name)
        return self._mark(await link.call(method, {**params, "agent": agent}, timeout), link)

    def _attach_hint(self, link: MachineLink, agent: str) -> str:
        machine = link.machine
        if machine.ssh is not None:
            return f"ssh -t {machine.ssh} {machine.volee} attach {agent}"
        return f"{machine.via} {machine.volee} attach {agent}"

    def _person_only(self, conn: Connection | None, method: str, machine: str) -> None:
        # On the other machine the bridge is the person: an agent here must not speak as them.
        if not caller_of(conn).is_person:
            raise Forbidden(
                f"{method} on {machine}",
                f"{method} on an agent of {machine} is the person's alone (an agent of this "
                "machine cannot act on another machine's agents)",
            )

    def _target(self, params: dict[str, Any]) -> tuple[MachineLink, str] | None:
        """The other machine the request's agent lives on, and its id there; None: here."""
        ref = params.get("agent")
        if not isinstance(ref, str) or not ref:
            return None
        return find_target(
            self.links,
            self.here(),
            ref,
            lambda registry, r: resolve_agent(registry, r).id,
            things="agents",
            hint="say which with NAME:AGENT or --machine NAME",
        )

    def _mark(self, result: Any, link: MachineLink) -> Any:
        if isinstance(result, dict):
            result = {**result, "machine": link.name}
            if "state" in result and "id" in result:
                result["reachable"] = link.state.reachable
        return result

    async def _mission(
        self, conn: Connection | None, method: str, params: dict[str, Any], local: Local
    ) -> Any:
        """Every machine's missions (``missions.list``), or a method on one done where it is."""
        if method == Method.MISSIONS_LIST:
            here = await local(conn, method, params)
            there = missions.listed(self.links, flag(params, "all", False))
            views = [{**view, "machine": None, "reachable": True} for view in here] + there
            return sorted(views, key=lambda v: -float(v.get("created_at") or 0.0))
        ref = params.get("mission")
        timeout = missions.FORWARDED[method]
        if not isinstance(ref, str) or not ref:
            # check and workers may name an agent instead (its mission): where the agent is.
            by_agent = self._target(params)
            if by_agent is None:
                return await local(conn, method, params)
            link, agent = by_agent
            self._person_only(conn, method, link.name)
            return self._mark(await link.call(method, {**params, "agent": agent}, timeout), link)
        found = missions.target(self.links, self.here(), ref)
        if found is None:
            return await local(conn, method, params)
        link, mission = found
        self._person_only(conn, method, link.name)
        return self._mark(await link.call(method, {**params, "mission": mission}, timeout), link)

    async def _list(self, conn: Connection | None, params: dict[str, Any], local: Local) -> Any:
        here = await local(conn, Method.AGENTS_LIST, params)
        views: list[dict[str, Any]] = [
            {**view, "machine": None, "reachable": True} for view in here
        ]
        include_all = flag(params, "all", False)
        for link in self.links.values():
            if link.registry is None:
                continue
            for agent in listed(link.registry, include_all):
                views.append(
                    {**agent_view(agent), "machine": link.name, "reachable": link.state.reachable}
                )
        return sorted(views, key=_urgency)


class Machines(MachineRouter):
    """The daemon's links to the other machines (its ``Api`` router) and their methods."""

    def __init__(self, ctx: Context, dial: Dialer | None = None) -> None:
        super().__init__(
            ctx.clock,
            dial or dial_process,
            machine_id(ctx.dirs.state),
            lambda: ctx.service.registry,
            ctx.tasks.spawn,
        )
        self.ctx = ctx
        self.problems: list[str] = []
        ctx.methods.add(Method.MACHINE_HELLO, self.api_hello, decoder(NoParameters))
        ctx.methods.add(Method.MACHINES_LIST, self.api_list, decoder(ListParams))
        ctx.methods.add(Method.MACHINES_RELOAD, self.api_reload, decoder(ReloadParams))
        ctx.status.add("machines", self.status)
        ctx.closing.add(self.close)

    def status(self) -> dict[str, Any]:
        return {
            "machine_id": self.id,
            "machines": {name: link.state.reachable for name, link in self.links.items()},
        }

    async def api_hello(self, _conn: Connection, _params: NoParameters) -> Hello:
        """The handshake another machine's link starts with."""
        return {
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "machine_id": self.id,
            "host": socket.gethostname(),
            "seq": self.ctx.service.registry.seq,
        }

    async def api_list(self, _conn: Connection, params: ListParams) -> list[MachineView]:
        if params.retry:
            for link in self.links.values():
                if not link.state.reachable:
                    link.wake()
        return [self.view(link) for link in self.links.values()]

    async def api_reload(self, _conn: Connection, params: ReloadParams) -> Reloaded:
        """Read ``[machines]`` again; wait up to ``wait`` s for the new links' first try."""
        loaded = load_config(self.ctx.dirs.config_file)
        self.problems = [p for p in loaded.problems if "machines" in p]
        self.start(loaded.config.machines)
        given = params.wait if params.wait is not None and math.isfinite(params.wait) else 0.0
        wait = min(MAX_WAIT, max(0.0, given))
        fresh = [link for link in self.links.values() if not link.tried.is_set()]
        if wait and fresh:
            waits = [asyncio.ensure_future(link.tried.wait()) for link in fresh]
            _done, pending = await asyncio.wait(waits, timeout=wait)
            for waiter in pending:
                waiter.cancel()
        return {
            "machines": [self.view(link) for link in self.links.values()],
            "problems": self.problems,
        }

"""Typed fakes for the tray app: ``FakeDaemonLink`` and a builder of domain events.

``FakeDaemonLink`` holds its own ``Registry`` (the daemon's truth), records
every call, and lets a test push events: each is validated and applied to
that registry, then delivered to the subscribed listener with the next seq,
exactly as the real link delivers the daemon's pushes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from volee_desktop.app.errors import LinkError
from volee_desktop.app.link import LinkListener
from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT, MESSAGE, MISSION, THREAD, new_id
from volee_desktop.core.model import (
    HUMAN,
    Delivery,
    Harness,
    Location,
    MessageKind,
    MissionKind,
    MissionStatus,
    PullRequest,
    PushState,
    Role,
    ThreadKind,
    Verdict,
)
from volee_desktop.core.registry import Registry
from volee_desktop.core.requests import permission_request
from volee_desktop.core.states import AgentState
from volee_desktop.store.codec import encode_registry

T0 = 1_800_000_000.0

Handler = Callable[[dict[str, Any]], Any]


class Ids:
    """Well-formed ids in creation order."""

    def __init__(self) -> None:
        self._n = itertools.count(1)

    def make(self, prefix: str) -> str:
        n = next(self._n)
        return new_id(prefix, int(T0 * 1000) + n, n.to_bytes(10, "big"))


@dataclass
class Call:
    method: str
    params: dict[str, Any]


@dataclass
class FakeDaemonLink:
    """A ``DaemonLink`` with an in-memory daemon: records calls, pushes events on demand."""

    registry: Registry = field(default_factory=Registry)
    calls: list[Call] = field(default_factory=list)
    handlers: dict[str, Handler] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    listener: LinkListener | None = None
    log: list[tuple[int, ev.Event]] = field(default_factory=list)
    subscriptions: int = 0
    interactive: list[bool] = field(default_factory=list)  # what set_interactive was told
    closed: bool = False
    keep_log: bool = True  # off for soak tests: the log holds every event (and its Nones)
    now: float = T0

    # --- DaemonLink -------------------------------------------------------------------------

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        self.calls.append(Call(method, dict(params)))
        if method in self.errors:
            raise LinkError(f"{method}: {self.errors[method]}")
        handler = self.handlers.get(method)
        if handler is not None:
            return handler(params)
        return self._default(method, params)

    async def subscribe(self, listener: LinkListener, since: int | None = None) -> None:
        self.listener = listener
        self.subscriptions += 1
        if since is None:
            listener.on_snapshot(self.registry.fork(), self.registry.seq)
        else:
            for seq, event in self.log:
                if seq > since:
                    listener.on_event(seq, event)

    async def set_interactive(self, on: bool) -> None:
        self.interactive.append(on)

    async def close(self) -> None:
        self.closed = True

    # --- test helpers ----------------------------------------------------------------------

    def push(self, *events: ev.Event) -> None:
        """Apply events to the daemon's registry and deliver them to the listener."""
        for event in events:
            problem = self.registry.validate(event)
            assert problem is None, f"the fake daemon refuses {event}: {problem}"
            self.registry.apply(event)
            self.registry.seq += 1
            if self.keep_log:
                self.log.append((self.registry.seq, event))
            if self.listener is not None:
                self.listener.on_event(self.registry.seq, event)

    def push_machines(self, *machines: dict[str, Any], removed: tuple[str, ...] = ()) -> None:
        """Deliver a ``machines`` push (``machine_entry`` builds each one)."""
        assert self.listener is not None
        self.listener.on_machines({"machines": list(machines), "removed": list(removed)})

    def apply_quietly(self, *events: ev.Event) -> None:
        """Apply events before anyone subscribes (they are part of the snapshot)."""
        listener, self.listener = self.listener, None
        try:
            self.push(*events)
        finally:
            self.listener = listener

    def methods(self) -> list[str]:
        return [c.method for c in self.calls]

    def last(self, method: str) -> Call:
        for call in reversed(self.calls):
            if call.method == method:
                return call
        raise AssertionError(f"no call to {method}; calls: {self.methods()}")

    def _default(self, method: str, params: dict[str, Any]) -> Any:
        if method == "agents.screen":
            return {"text": f"recent output of {params.get('agent')}\n$ pytest -q\n3 passed"}
        if method == "agents.output":
            lines = [f"recent output of {params.get('agent')}", "$ pytest -q", "3 passed"]
            return {"lines": lines, "text": "\n".join(lines), "version": 1, "live": True}
        if method == "agents.send":
            return {"delivered": True, "resumed": False}
        if method in ("agents.allow", "agents.deny", "agents.answer"):
            return {"answered": True}
        if method == "agents.changes":
            return demo_changes(str(params.get("agent")), bool(params.get("diff")))
        if method == "agents.timeline":
            from volee_desktop.daemon.agents.timeline import timeline

            return timeline(self.log, str(params.get("agent")))
        return {}


class World:
    """Builds valid events for a ``FakeDaemonLink`` (agents, state changes, missions)."""

    def __init__(self, link: FakeDaemonLink) -> None:
        self.link = link
        self.ids = Ids()
        self.t = T0

    def tick(self, seconds: float = 1.0) -> float:
        self.t += seconds
        return self.t

    def agent(
        self,
        name: str,
        state: AgentState = AgentState.WORKING,
        detail: str = "",
        *,
        quiet: bool = False,
        mission: str | None = None,
        role: Role = Role.AGENT,
        location: Location | None = Location.HOST,
        cwd: str = "/home/me/project",
    ) -> str:
        agent_id = self.ids.make(AGENT)
        event = ev.AgentRegistered(
            at=self.tick(),
            agent=agent_id,
            name=name,
            harness=Harness.CLAUDE,
            role=role,
            mission=mission,
            cwd=cwd,
            location=location,
            state=state,
            detail=detail,
        )
        (self.link.apply_quietly if quiet else self.link.push)(event)
        return agent_id

    def state(self, agent_id: str, state: AgentState, detail: str = "") -> ev.StateChanged:
        event = ev.StateChanged(at=self.tick(), agent=agent_id, state=state, detail=detail)
        self.link.push(event)
        return event

    def ask(
        self,
        agent_id: str,
        tool: str = "Bash",
        tool_input: dict[str, Any] | None = None,
        detail: str = "",
    ) -> ev.StateChanged:
        """The agent asks a permission for ``tool`` (a question for AskUserQuestion), as the
        PermissionRequest hook says it."""
        at = self.tick()
        cwd = self.link.registry.agents[agent_id].cwd
        request = permission_request(agent_id, at, tool, tool_input, cwd)
        event = ev.StateChanged(
            at=at,
            agent=agent_id,
            state=AgentState.NEEDS_INPUT,
            detail=detail or f"permission for {tool}",
            request=request,
        )
        self.link.push(event)
        return event

    def answered(self, agent_id: str, answer: str = "allow") -> None:
        """The daemon recorded an answer, then the agent went back to work."""
        request = self.link.registry.agents[agent_id].request
        assert request is not None
        self.link.push(
            ev.RequestAnswered(at=self.tick(), agent=agent_id, request=request.id, answer=answer)
        )
        self.state(agent_id, AgentState.WORKING)

    def activity(self, agent_id: str, text: str) -> None:
        self.link.push(ev.ActivityRecorded(at=self.tick(), agent=agent_id, activity=text))

    def stop_by_person(self, agent_id: str) -> None:
        self.link.push(ev.StopRequested(at=self.tick(), agent=agent_id))
        self.link.push(
            ev.StateChanged(at=self.tick(), agent=agent_id, state=AgentState.STOPPED, detail="")
        )

    def mission_awaiting(
        self, goal: str = "Fix the login bug", workers: int = 2
    ) -> tuple[str, list[str], str]:
        """A mission with a coordinator, delivered workers and a report: (mission, workers, msg)."""
        mission = self.ids.make(MISSION)
        thread = self.ids.make(THREAD)
        self.link.push(
            ev.MissionCreated(at=self.tick(), mission=mission, goal=goal, kind=MissionKind.CHANGE)
        )
        self.link.push(
            ev.ThreadOpened(at=self.tick(), thread=thread, kind=ThreadKind.MISSION, mission=mission)
        )
        coordinator = self.agent(
            "coordinator", AgentState.IDLE, mission=mission, role=Role.COORDINATOR
        )
        self.link.push(ev.MissionUpdated(at=self.tick(), mission=mission, coordinator=coordinator))
        ids = []
        for i in range(workers):
            worker = self.agent(
                f"worker-{i + 1}", AgentState.DONE, mission=mission, role=Role.WORKER
            )
            tip = f"{i + 1}" * 7
            delivery = Delivery(
                branch=f"volee/worker-{i + 1}",
                base="main",
                commits=i + 2,
                tip=tip,
                pushed=PushState.PUSHED,
                clean=True,
                pull_request=PullRequest(number=40 + i, state="open", head=tip),
                pull_request_known=True,
                checked_at=self.t,
            )
            self.link.push(ev.DeliveryUpdated(at=self.tick(), agent=worker, delivery=delivery))
            self.link.push(
                ev.WorkerAssessed(
                    at=self.tick(),
                    mission=mission,
                    agent=worker,
                    verdict=Verdict.DELIVERED,
                    reason="commits pushed, PR at tip, clean tree",
                    evidence=delivery,
                )
            )
            ids.append(worker)
        message = self.ids.make(MESSAGE)
        self.link.push(
            ev.MissionUpdated(at=self.tick(), mission=mission, status=MissionStatus.REPORTING)
        )
        self.link.push(
            ev.MessagePosted(
                at=self.tick(),
                message=message,
                thread=thread,
                sender=coordinator,
                recipients=(HUMAN,),
                kind=MessageKind.QUESTION,
                body=(
                    "# Report\n\nBoth workers fixed **the login bug**:\n\n"
                    "- worker-1: session cookie\n- worker-2: tests\n"
                ),
                options=("Approve and merge", "Not yet"),
                approving="Approve and merge",
            )
        )
        self.link.push(
            ev.MissionUpdated(
                at=self.tick(),
                mission=mission,
                status=MissionStatus.AWAITING_APPROVAL,
                report=message,
            )
        )
        return mission, ids, message


def demo_changes(agent: str, diff: bool) -> dict[str, Any]:
    """A worker's change as ``agents.changes`` answers it (the fakes' canned one)."""
    out: dict[str, Any] = {
        "agent": agent,
        "base": "main",
        "branch": "volee/fix-login",
        "files": [
            {"path": "src/auth/session.py", "added": 9, "removed": 3},
            {"path": "tests/test_session.py", "added": 14, "removed": 0},
        ],
        "added": 23,
        "removed": 3,
    }
    if diff:
        out["truncated"] = False
        out["diff"] = (
            "diff --git a/src/auth/session.py b/src/auth/session.py\n"
            "--- a/src/auth/session.py\n+++ b/src/auth/session.py\n"
            "@@ -40,9 +40,15 @@ def refresh(session):\n"
            "     cookie = session.cookie\n"
            "-    if cookie.expired:\n"
            "-        return redirect(LOGIN)\n"
            "+    if cookie.expired and not cookie.refreshable:\n"
            "+        return redirect(LOGIN, next=session.path)\n"
            "+    if cookie.expired:\n"
            "+        cookie = cookie.refresh()\n"
            "     return session.with_cookie(cookie)\n"
        )
    return out


def machine_entry(
    name: str, registry: Registry | None, reachable: bool = True, since: float = T0
) -> dict[str, Any]:
    """One machine of a ``machines`` push, whole, as the daemon's ``MachinesFeed`` makes it
    at a feed's start: its agents, missions and messages."""
    blob = None
    if registry is not None:
        whole = Registry(
            agents=dict(registry.agents),
            missions=dict(registry.missions),
            messages=dict(registry.messages),
            seq=registry.seq,
        )
        blob = encode_registry(whole).decode()
    return {
        "name": name,
        "reachable": reachable,
        "since": since,
        "problem": None if reachable else "ssh: connect to host devbox port 22: Connection refused",
        "unreachable": None if reachable else f"{name} is unreachable since 14:02",
        "full": True,
        "registry": blob,
        "gone": {},
    }

"""Property: no sequence of events makes volee start a held agent, one whose mission is over,
or a second live host for one agent, by itself.

A small simulation drives the real registry with the real recovery rules: people stop,
write, leave and close missions; programs crash and hosts vanish; the clock moves and due
restarts fire; the machine restarts and the daemon decides at start.  Timers here do NOT
re-check holds before starting (the daemon does): the registry must drop a waiting restart
on every hold by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from volee_desktop.core import events as ev
from volee_desktop.core import recovery as rules
from volee_desktop.core.model import HUMAN, MessageKind, MissionStatus
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .support import A1, A2, M1, T0, message_id, mission, registered, state, thread

AGENTS = (A1, A2)


@dataclass
class World:
    """The registry, which agents have a live host, and the clock."""

    registry: Registry = field(default_factory=Registry)
    live: set[str] = field(default_factory=set)
    now: float = T0
    messages: int = 0
    automatic_starts: int = 0

    def commit(self, events: list[ev.Event]) -> None:
        for event in events:
            problem = self.registry.validate(event)
            assert problem is None, f"{event.TYPE} refused: {problem}"
            self.registry.apply(event)

    def start(self, agent_id: str, *, automatic: bool) -> None:
        agent = self.registry.agents[agent_id]
        mission_ = self.registry.missions.get(agent.mission) if agent.mission else None
        if automatic:
            self.automatic_starts += 1
            assert not rules.held_by_stop(agent), f"automatic start of a held agent: {agent}"
            assert not rules.mission_over(agent, mission_), "automatic start, mission over"
        assert agent_id not in self.live, "a second live host for one agent"
        self.live.add(agent_id)
        self.commit(
            [
                ev.HostStarted(
                    at=self.now, agent=agent_id, host_pid=1, program_pid=2, automatic=automatic
                ),
                ev.StateChanged(at=self.now, agent=agent_id, state=AgentState.WORKING),
            ]
        )

    def program_ended(self, agent_id: str, *, code: int | None, signal: str | None) -> None:
        agent = self.registry.agents[agent_id]
        self.live.discard(agent_id)
        decision = rules.decide_exit(
            agent,
            code=code,
            signal=signal,
            stop_requested=False,
            now=self.now,
            policy=rules.Policy(),
            mission=self.registry.missions.get(M1) if agent.mission else None,
        )
        self.commit(decision.events())


def act(world: World, action: tuple[str, int, int]) -> None:
    name, which, n = action
    agent_id = AGENTS[which]
    agent = world.registry.agents[agent_id]
    live = agent_id in world.live
    if name == "write":  # the person writes: typed in, or a start with the message
        world.messages += 1
        world.commit(
            [
                ev.MessagePosted(
                    at=world.now,
                    message=message_id(world.messages),
                    thread=thread().thread,
                    sender=HUMAN,
                    recipients=(agent_id,),
                    kind=MessageKind.TEXT,
                    body="go on",
                )
            ]
        )
        if live:
            world.commit([ev.StateChanged(at=world.now, agent=agent_id, state=AgentState.WORKING)])
        elif not agent.held_for_good:
            world.start(agent_id, automatic=False)
    elif name == "stop":
        events: list[ev.Event] = [ev.StopRequested(at=world.now, agent=agent_id)]
        if agent.restart is not None:
            events.append(ev.RestartCancelled(at=world.now, agent=agent_id, reason="stopped"))
        world.commit(events)
        if live:
            world.live.discard(agent_id)
            world.commit(
                rules.decide_exit(
                    world.registry.agents[agent_id],
                    code=None,
                    signal="SIGTERM",
                    stop_requested=True,
                    now=world.now,
                    policy=rules.Policy(),
                ).events()
            )
    elif name == "leave" and live:  # /exit: SessionEnd prompt_input_exit, then exit 0
        world.commit(
            [
                ev.StateChanged(at=world.now, agent=agent_id, state=AgentState.STOPPED),
                ev.StopRequested(at=world.now, agent=agent_id, reason="you left Claude Code"),
            ]
        )
        world.program_ended(agent_id, code=0, signal=None)
    elif name == "done" and live:
        world.commit([ev.StateChanged(at=world.now, agent=agent_id, state=AgentState.DONE)])
    elif name == "close-mission":
        if not world.registry.missions[M1].status.ended:
            world.commit([ev.MissionUpdated(at=world.now, mission=M1, status=MissionStatus.CLOSED)])
    elif name == "crash" and live:
        world.program_ended(
            agent_id, code=None if n % 2 else 3, signal="SIGKILL" if n % 2 else None
        )
    elif name == "vanish" and live:
        world.live.discard(agent_id)
        world.commit(
            rules.decide_vanished(
                agent, cause=rules.HOST_STOPPED, now=world.now, policy=rules.Policy()
            ).events()
        )
    elif name == "tick":
        world.now += float(n)
        for other in AGENTS:
            current = world.registry.agents[other]
            if rules.restart_due(current, world.now) and other not in world.live:
                world.start(other, automatic=True)
    elif name == "reboot":
        world.now += 30.0 + n * 60
        for other in list(world.live):
            world.live.discard(other)  # every host gone, no exit status
        found = [
            (a, rules.MACHINE_RESTARTED)
            for a in world.registry.agents.values()
            if rules.needs_recovery(a)
        ]
        decisions = rules.decide_all(
            found, now=world.now, policy=rules.Policy(), missions=world.registry.missions
        )
        for decision in decisions:
            world.commit(decision.events(world.now))
        for decision in decisions:
            if decision.starts:
                world.start(decision.agent, automatic=True)
        for other in AGENTS:  # waiting restarts re-armed at start
            current = world.registry.agents[other]
            if rules.restart_due(current, world.now) and other not in world.live:
                world.start(other, automatic=True)


ACTIONS = st.tuples(
    st.sampled_from(
        ["write", "stop", "leave", "done", "close-mission", "crash", "vanish", "tick", "reboot"]
    ),
    st.integers(0, len(AGENTS) - 1),
    st.integers(0, 20),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ACTIONS, max_size=40))
def test_no_sequence_restarts_a_held_agent_or_starts_two_hosts(
    actions: list[tuple[str, int, int]],
) -> None:
    world = World()
    world.commit([mission(), thread()])
    world.commit([registered(A1, mission=M1), registered(A2)])
    for agent_id in AGENTS:
        world.live.add(agent_id)
        world.commit([state(agent_id, AgentState.WORKING)])
    for action in actions:
        act(world, action)
    # And after the last action: a held agent or an ended mission has no restart waiting.
    for agent in world.registry.agents.values():
        if agent.restart is not None:
            assert rules.may_restart_automatically(
                agent, world.registry.missions.get(M1) if agent.mission else None
            )


def test_the_simulation_does_restart_automatically() -> None:
    # Guard against a property that holds only because nothing ever restarts.
    world = World()
    world.commit([mission(), thread()])
    world.commit([registered(A1, mission=M1), registered(A2)])
    for agent_id in AGENTS:
        world.live.add(agent_id)
        world.commit([state(agent_id, AgentState.WORKING)])
    act(world, ("crash", 0, 1))
    act(world, ("tick", 0, 2))
    act(world, ("reboot", 0, 0))
    assert world.automatic_starts == 3  # the crash restart, then both at the reboot

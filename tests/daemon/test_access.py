"""Who may call what: the rules for agent callers, method by method (daemon/serving/access.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.clock import FakeClock
from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, Harness, LaunchSettings, MissionKind, Role, ThreadKind
from volee_desktop.core.registry import Registry
from volee_desktop.daemon.errors import Forbidden
from volee_desktop.daemon.service import Service
from volee_desktop.daemon.serving.access import RULES, Audit, authorize
from volee_desktop.ipc.caller import Caller
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

T0 = 1_700_000_000.0
M = "ms_01HF7YAT010000000000000001"
OTHER_M = "ms_01HF7YAT010000000000000002"
COORD = "ag_01HF7YAT010000000000000001"
WORKER = "ag_01HF7YAT010000000000000002"
STRANGER = "ag_01HF7YAT010000000000000003"
CHILD = "ag_01HF7YAT010000000000000004"
TH = "th_01HF7YAT010000000000000001"


@pytest.fixture
def registry() -> Registry:
    r = Registry()
    plan = LaunchSettings(harness=Harness.CLAUDE, cwd="/", permission_mode="default")
    events: list[ev.Event] = [
        ev.MissionCreated(at=T0, mission=M, goal="g", kind=MissionKind.CHANGE),
        ev.MissionCreated(at=T0, mission=OTHER_M, goal="h", kind=MissionKind.CHANGE),
        ev.AgentRegistered(
            at=T0, agent=COORD, name="coord", harness=Harness.CLAUDE, role=Role.COORDINATOR,
            mission=M, launch=plan,
        ),
        ev.MissionUpdated(at=T0, mission=M, coordinator=COORD),
        ev.AgentRegistered(
            at=T0, agent=WORKER, name="worker", harness=Harness.CLAUDE, role=Role.WORKER,
            mission=M, parent=COORD,
        ),
        ev.AgentRegistered(at=T0, agent=STRANGER, name="stranger", harness=Harness.CLAUDE),
        ev.AgentRegistered(
            at=T0, agent=CHILD, name="child", harness=Harness.GENERIC, parent=STRANGER
        ),
        ev.ThreadOpened(at=T0, thread=TH, kind=ThreadKind.MISSION, mission=M, parties=(HUMAN,)),
    ]  # fmt: skip
    for event in events:
        assert r.validate(event) is None, event
        r.apply(event)
    return r


def agent(agent_id: str) -> Caller:
    return Caller.of_agent(agent_id, 1234, "descends from the program (pid 99)")


def allowed(registry: Registry, who: str, method: str, **params: Any) -> dict[str, Any]:
    return authorize(method, agent(who), params, registry)


def forbidden(registry: Registry, who: str, method: str, **params: Any) -> Forbidden:
    with pytest.raises(Forbidden) as caught:
        authorize(method, agent(who), params, registry)
    assert str(caught.value).startswith("forbidden: you are agent ")
    assert "pid 99" in str(caught.value)  # how the daemon knows who it is
    return caught.value


PERSON_ONLY = [
    ("missions.answer", {"mission": M, "option": "approve"}, f"answer mission {M}'s report"),
    ("daemon.stop", {}, "stop the daemon"),
    ("subscribe", {"since": None}, "subscribe to every event"),
    ("agents.seen", {"agent": "worker"}, "mark agent worker seen"),
    ("missions.create", {"goal": "x", "repositories": ["/"]}, "create a mission"),
    ("agents.allow", {"agent": "worker"}, "allow agent worker's request as the person"),
    ("agents.deny", {"agent": "worker"}, "deny agent worker's request as the person"),
    ("agents.answer", {"agent": "worker", "option": 1}, "answer agent worker's question"),
    ("missions.evidence", {"agent": "worker"}, "record delivery evidence for agent worker"),
    ("subscribe.interactive", {}, "subscribe as the person's interface"),
    ("config.confirm", {}, "confirm settings of config.toml that lower safety"),
    ("agents.merge", {"agent": "worker"}, "merge agent worker's change"),
    ("agents.discard", {"agent": "worker"}, "discard agent worker's worktree and branch"),
    # Methods with no rule (settings, anything new) are the person's too.
    ("settings.set", {"key": "agents.restart_on_crash"}, "call settings.set"),
    ("anything.new", {}, "call anything.new"),
]


@pytest.mark.parametrize(("method", "params", "attempt"), PERSON_ONLY)
def test_the_persons_powers_are_refused_to_every_agent(
    registry: Registry, method: str, params: dict[str, Any], attempt: str
) -> None:
    for who in (COORD, WORKER, STRANGER):
        refused = forbidden(registry, who, method, **params)
        assert attempt in refused.attempt


@pytest.mark.parametrize("method", sorted({*RULES, "agents.allow", "anything.new"}))
def test_the_person_may_call_everything_unchanged(registry: Registry, method: str) -> None:
    params = {"agent": "worker", "sender": HUMAN, "mission": M}
    assert authorize(method, Caller.person(5, "own shell"), params, registry) is params


@pytest.mark.parametrize(
    "method",
    [
        "agents.list", "agents.get", "agents.changes", "daemon.status",
        "discovery.refresh", "missions.list", "missions.check", "caller",
    ],
)  # fmt: skip
def test_reading_is_open_to_agents(registry: Registry, method: str) -> None:
    assert allowed(registry, STRANGER, method, agent="worker", mission=M) == {
        "agent": "worker",
        "mission": M,
    }


def test_posting_is_always_as_the_caller(registry: Registry) -> None:
    for sender in ("human", "volee"):
        refused = forbidden(registry, WORKER, "messages.post", sender=sender, to=["human"])
        party = "the person" if sender == "human" else "volee"
        assert refused.attempt == f"post a message as {party}"
    refused = forbidden(registry, WORKER, "messages.post", sender="coord", to=["human"])
    assert refused.attempt == "post a message as agent coord"
    assert allowed(registry, WORKER, "messages.post", to=["human"])["sender"] == WORKER
    assert allowed(registry, WORKER, "messages.post", sender="worker")["sender"] == WORKER


def test_posting_into_a_thread_that_is_not_ones_own_is_refused(registry: Registry) -> None:
    assert allowed(registry, WORKER, "messages.post", to=["human"], thread=TH)["thread"] == TH
    refused = forbidden(registry, STRANGER, "messages.post", to=["human"], thread=TH)
    assert TH in refused.attempt


def test_agents_send_is_as_the_caller_too(registry: Registry) -> None:
    forbidden(registry, STRANGER, "agents.send", agent="child", text="y", sender="human")
    assert allowed(registry, STRANGER, "agents.send", agent="child", text="hi")["sender"] == (
        STRANGER
    )


def test_reading_messages_is_ones_own_inbox_only(registry: Registry) -> None:
    refused = forbidden(registry, WORKER, "messages.read", agent="human")
    assert refused.attempt == "read the person's messages"
    forbidden(registry, WORKER, "messages.read", agent="coord")
    assert allowed(registry, WORKER, "messages.read")["agent"] == WORKER


@pytest.mark.parametrize("method", ["agents.stop", "agents.forget", "agents.attach_info"])
def test_stop_forget_and_attach_only_own_children(registry: Registry, method: str) -> None:
    assert allowed(registry, STRANGER, method, agent="child") == {"agent": "child"}
    assert allowed(registry, COORD, method, agent="worker") == {"agent": "worker"}
    refused = forbidden(registry, STRANGER, method, agent="worker")
    assert "worker, which is not its own child" in refused.attempt
    forbidden(registry, WORKER, method, agent="coord")
    assert forbidden(registry, STRANGER, method, agent="stranger").attempt.endswith("itself")


def test_resume_only_own_children_not_held_and_without_words(registry: Registry) -> None:
    assert allowed(registry, STRANGER, "agents.resume", agent="child") == {"agent": "child"}
    forbidden(registry, STRANGER, "agents.resume", agent="worker")
    forbidden(registry, STRANGER, "agents.resume", agent="child", text="go on")
    registry.apply(ev.StopRequested(at=T0, agent=CHILD))
    refused = forbidden(registry, STRANGER, "agents.resume", agent="child")
    assert "which the person stopped" in refused.attempt


def test_spawn_makes_own_children_only(registry: Registry) -> None:
    spawned = allowed(registry, STRANGER, "agents.spawn", harness="generic", argv=["true"])
    assert spawned["parent"] == STRANGER
    forbidden(registry, STRANGER, "agents.spawn", parent="coord")
    refused = forbidden(registry, STRANGER, "agents.spawn", mission=M)
    assert refused.attempt == f"spawn an agent into mission {M}"
    forbidden(registry, STRANGER, "agents.spawn", role="coordinator")
    assert allowed(registry, COORD, "agents.spawn", mission=M)["parent"] == COORD


def test_a_child_runs_in_its_parents_permission_mode(registry: Registry) -> None:
    assert allowed(registry, COORD, "agents.spawn")["permission_mode"] == "default"
    refused = forbidden(registry, COORD, "agents.spawn", permission_mode="bypassPermissions")
    assert "bypassPermissions" in refused.attempt


def test_hooks_speak_for_their_own_agent(registry: Registry) -> None:
    assert allowed(registry, WORKER, "hook", event="Stop")["agent"] == WORKER
    refused = forbidden(registry, WORKER, "hook", event="Stop", agent=COORD)
    assert refused.attempt == f"report hook events as agent {COORD}"


def test_a_coordinator_presents_and_spawns_as_itself(registry: Registry) -> None:
    for method in ("missions.request_approval", "missions.spawn_worker"):
        assert allowed(registry, COORD, method, body="b")["agent"] == COORD
        forbidden(registry, WORKER, method, agent="coord")
    # A worker asking for itself passes here; the handler says only the coordinator may.
    assert allowed(registry, WORKER, "missions.request_approval")["agent"] == WORKER


def test_invitations_come_from_the_coordinator(registry: Registry) -> None:
    assert allowed(registry, COORD, "missions.invite", mission=M, agent="stranger")
    refused = forbidden(registry, STRANGER, "missions.invite", mission=M, agent="child")
    assert "which it does not coordinate" in refused.attempt


def test_an_agent_joins_as_itself(registry: Registry) -> None:
    assert allowed(registry, STRANGER, "missions.join", mission=M)["agent"] == STRANGER
    forbidden(registry, STRANGER, "missions.join", mission=M, agent="child")
    forbidden(registry, COORD, "missions.join", mission=M, joined=False)


def test_tidy_only_looks(registry: Registry) -> None:
    assert allowed(registry, WORKER, "tidy", dry_run=True) == {"dry_run": True}
    forbidden(registry, WORKER, "tidy")


def test_missions_workers_defaults_to_the_callers_mission(registry: Registry) -> None:
    assert allowed(registry, COORD, "missions.workers")["agent"] == COORD
    assert allowed(registry, STRANGER, "missions.workers", mission=M) == {"mission": M}


@pytest.mark.parametrize(
    "method", ["agents.timeline", "agents.screen", "agents.output", "agents.log"]
)
def test_an_agent_sees_only_the_agents_it_may_write_to(registry: Registry, method: str) -> None:
    assert allowed(registry, WORKER, method, agent="coord") == {"agent": "coord"}
    assert allowed(registry, COORD, method, agent="worker") == {"agent": "worker"}
    assert allowed(registry, STRANGER, method, agent="child") == {"agent": "child"}
    assert allowed(registry, STRANGER, method, agent="stranger") == {"agent": "stranger"}
    refused = forbidden(registry, STRANGER, method, agent="worker")
    assert refused.attempt == "read agent worker's timeline or screen"


def test_an_agent_reads_its_own_missions_thread_only(registry: Registry) -> None:
    assert allowed(registry, WORKER, "missions.show", mission=M) == {"mission": M}
    assert allowed(registry, COORD, "missions.show", mission=M) == {"mission": M}
    refused = forbidden(registry, STRANGER, "missions.show", mission=M)
    assert refused.attempt == f"read mission {M}'s thread, which is not its own"
    # Invited, it may look before it joins.
    registry.apply(ev.MissionInvited(at=T0, agent=STRANGER, mission=M, by=COORD))
    assert allowed(registry, STRANGER, "missions.show", mission=M) == {"mission": M}


def test_a_child_harness_takes_no_flags_of_its_own(registry: Registry) -> None:
    refused = forbidden(
        registry, STRANGER, "agents.spawn", harness="claude", argv=["--permission-mode", "x"]
    )
    assert "spawn claude with flags of its own" in refused.attempt
    forbidden(registry, COORD, "missions.spawn_worker", argv=["--dangerously-skip-permissions"])
    # A generic agent's command is any command.
    assert allowed(registry, STRANGER, "agents.spawn", harness="generic", argv=["make"])


async def test_a_refusal_is_audited_once_per_window_with_the_daemons_clock(
    registry: Registry,
) -> None:
    clock = FakeClock()
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, clock)
    refused = Forbidden("stop the daemon", "forbidden: ...")

    def kept() -> list[ev.RequestRefused]:
        found = [e for _, e in service.events_after(0) if isinstance(e, ev.RequestRefused)]
        return found

    await audit.refused(agent(WORKER), "daemon.stop", refused)
    await audit.refused(agent(WORKER), "daemon.stop", refused)  # a retry: logged only
    await audit.refused(agent(STRANGER), "daemon.stop", refused)  # another agent: kept
    assert [(e.agent, e.reason, e.at) for e in kept()] == [
        (WORKER, "tried to stop the daemon", clock.now()),
        (STRANGER, "tried to stop the daemon", clock.now()),
    ]
    clock.t += audit.window
    await audit.refused(agent(WORKER), "daemon.stop", refused)
    assert len(kept()) == 3

"""What a refused agent reads, word for word, and the edges of each rule (daemon/serving/access.py).

test_access.py says who may call what; these tests pin the exact refusal (what was tried,
what to do instead: an agent acts on the hint), the empty and odd values of each
parameter, and the audit's window, memory and log lines.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from tests.daemon.test_access import (  # noqa: F401
    COORD,
    OTHER_M,
    STRANGER,
    TH,
    WORKER,
    M,
    agent,
    allowed,
    forbidden,
    registry,
)
from tests.fakes.clock import FakeClock
from volee_desktop.core import events as ev
from volee_desktop.core.model import VOLEE
from volee_desktop.core.registry import Registry
from volee_desktop.daemon.errors import Ambiguous, Forbidden, NotFound
from volee_desktop.daemon.service import Service
from volee_desktop.daemon.serving import access
from volee_desktop.daemon.serving.access import Audit, Request, authorize
from volee_desktop.ipc.caller import Caller
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

HOW = "descends from the program (pid 99)"
FORGOTTEN = "ag_01HF7YAT010000000000000009"
NO_AGENT = "name an agent: an id (ag_…), a unique id prefix or a unique name"


def words(name: str, attempt: str, hint: str = "") -> str:
    """The refusal an agent named ``name`` (known as ``HOW``) reads."""
    said = f"forbidden: you are agent {name} ({HOW}), and an agent may not {attempt}: "
    return said + "only the person may" + (f"; {hint}" if hint else "")


def said(registry: Registry, who: str, method: str, **params: Any) -> str:  # noqa: F811
    return str(forbidden(registry, who, method, **params))


def test_a_refusal_says_who_the_agent_is_what_it_tried_and_what_to_do_instead(
    registry: Registry,  # noqa: F811
) -> None:
    refused = forbidden(registry, WORKER, "messages.post", sender="human", to=["human"])
    assert refused.attempt == "post a message as the person"
    assert str(refused) == (
        "forbidden: you are agent worker (descends from the program (pid 99)), and an agent "
        "may not post a message as the person: only the person may; leave out 'sender': it "
        "is always you"
    )


def test_a_refusal_without_a_hint_or_a_how_says_no_more(registry: Registry) -> None:  # noqa: F811
    bare = Caller.of_agent(WORKER, 1234, "")
    with pytest.raises(Forbidden) as caught:
        authorize("daemon.stop", bare, {}, registry)
    assert str(caught.value) == (
        "forbidden: you are agent worker, and an agent may not stop the daemon: only the person may"
    )


def test_acting_as_someone_else_is_refused_with_the_key_to_leave_out(
    registry: Registry,  # noqa: F811
) -> None:
    hint = "leave out 'sender': it is always you"
    assert said(registry, WORKER, "agents.send", agent="coord", sender="volee") == words(
        "worker", "send a message as volee", hint
    )
    assert said(registry, WORKER, "agents.send", agent="coord", sender="coord") == words(
        "worker", "send a message as agent coord", hint
    )
    assert said(registry, WORKER, "messages.read", agent="coord") == words(
        "worker", "read the messages as agent coord", "leave out 'agent': it is always you"
    )
    assert said(registry, WORKER, "missions.spawn_worker", agent="coord") == words(
        "worker", "spawn a mission's worker as agent coord", "leave out 'agent': it is always you"
    )
    assert said(registry, STRANGER, "missions.join", mission=M, agent="child") == words(
        "stranger", "join a mission as agent child", "leave out 'agent': it is always you"
    )


def test_an_empty_acting_party_is_the_caller(registry: Registry) -> None:  # noqa: F811
    assert allowed(registry, WORKER, "messages.post", sender="", to=["human"])["sender"] == WORKER
    assert allowed(registry, WORKER, "messages.read", agent="")["agent"] == WORKER


def test_an_acting_party_that_is_not_a_name_is_refused(registry: Registry) -> None:  # noqa: F811
    for odd in (5, ["worker"], True):
        refused = forbidden(registry, WORKER, "messages.post", sender=odd, to=["human"])
        assert refused.attempt == f"post a message as agent {odd}"


def test_a_forgotten_agent_still_acts_as_itself_and_no_one_else(
    registry: Registry,  # noqa: F811
) -> None:
    # Its processes run on after `volee forget`: its id names no agent of the registry.
    gone = Caller.of_agent(FORGOTTEN, 77, HOW)
    post = {"sender": FORGOTTEN, "to": ["human"]}
    assert authorize("messages.post", gone, post, registry)["sender"] == FORGOTTEN
    with pytest.raises(Forbidden) as caught:
        authorize("messages.post", gone, {"sender": "nobody", "to": ["human"]}, registry)
    assert caught.value.attempt == "post a message as agent nobody"
    assert str(caught.value).startswith(f"forbidden: you are agent {FORGOTTEN} ({HOW})")


@pytest.mark.parametrize("method", ["agents.stop", "agents.forget", "agents.attach_info"])
def test_a_child_not_named_or_named_by_no_text_is_asked_for(
    registry: Registry,  # noqa: F811
    method: str,
) -> None:
    for params in ({}, {"agent": ""}, {"agent": 5}, {"agent": ["child"]}):
        with pytest.raises(NotFound) as caught:
            authorize(method, agent(STRANGER), params, registry)
        assert str(caught.value) == NO_AGENT


def test_stopping_itself_or_another_agents_child_says_why(registry: Registry) -> None:  # noqa: F811
    assert said(registry, STRANGER, "agents.stop", agent="stranger") == words(
        "stranger", "stop itself", "an agent ends by finishing its task"
    )
    assert said(registry, STRANGER, "agents.forget", agent="worker") == words(
        "stranger",
        "forget agent worker, which is not its own child",
        "an agent stops, resumes and forgets only the agents it spawned",
    )
    assert said(registry, STRANGER, "agents.attach_info", agent="worker") == words(
        "stranger",
        "attach to agent worker, which is not its own child",
        "an agent stops, resumes and forgets only the agents it spawned",
    )


def test_resume_says_why_it_is_refused(registry: Registry) -> None:  # noqa: F811
    assert said(registry, STRANGER, "agents.resume", agent="worker") == words(
        "stranger",
        "resume agent worker, which is not its own child",
        "an agent stops, resumes and forgets only the agents it spawned",
    )
    assert said(registry, STRANGER, "agents.resume", agent="child", text="go on") == words(
        "stranger",
        "resume agent child with a message as the person",
        "resume it without text, then write to it with post_message",
    )
    assert allowed(registry, STRANGER, "agents.resume", agent="child", text="") == {
        "agent": "child",
        "text": "",
    }
    registry.apply(ev.StopRequested(at=0.0, agent="ag_01HF7YAT010000000000000004"))
    assert said(registry, STRANGER, "agents.resume", agent="child") == words(
        "stranger", "resume agent child, which the person stopped", "only the person lifts a hold"
    )


def test_person_only_rules_name_what_was_asked_about() -> None:
    rule = access._person_only("answer mission {mission}'s report on agent {agent}", "ask")
    for params, attempt in [
        ({"mission": M, "agent": "w"}, f"answer mission {M}'s report on agent w"),
        ({"mission": M}, f"answer mission {M}'s report on agent ?"),
        ({"agent": "w", "mission": ""}, "answer mission ?'s report on agent w"),
    ]:
        request = Request("missions.answer", agent(WORKER), params, Registry())
        with pytest.raises(Forbidden) as caught:
            rule(request)
        assert caught.value.attempt == attempt
        assert str(caught.value).endswith("only the person may; ask")
    bare = access._person_only("stop the daemon")
    with pytest.raises(Forbidden) as caught:
        bare(Request("daemon.stop", agent(WORKER), {}, Registry()))
    assert str(caught.value).endswith("may not stop the daemon: only the person may")


def test_the_persons_rules_say_what_an_agent_does_instead(registry: Registry) -> None:  # noqa: F811
    assert said(registry, WORKER, "missions.create", goal="g") == words(
        "worker", "create a mission", "ask the person for one with post_message"
    )
    assert said(registry, WORKER, "missions.evidence", agent="coord") == words(
        "worker", "record delivery evidence for agent coord", "volee reads it from git itself"
    )
    assert said(registry, WORKER, "agents.seen") == words(
        "worker", "mark agent ? seen as the person"
    )
    assert said(registry, WORKER, "subscribe") == words(
        "worker",
        "subscribe to every event (it carries the person's messages)",
        "`volee ls` and `volee timeline` read what you need",
    )
    assert said(registry, WORKER, "settings.set") == words(
        "worker", "call settings.set", "only the person's interfaces use it"
    )


def test_a_coordinators_rule_acts_as_the_caller_whatever_it_is_for() -> None:
    rule = access._as_coordinator("present a mission's report")
    request = Request("x", agent(WORKER), {"agent": COORD, "body": "b"}, Registry())
    with pytest.raises(Forbidden) as caught:
        rule(request)
    assert caught.value.attempt == f"present a mission's report as agent {COORD}"
    mine = Request("x", agent(WORKER), {"body": "b"}, Registry())
    assert rule(mine) == {"body": "b", "agent": WORKER}


def test_spawn_says_why_it_is_refused(registry: Registry) -> None:  # noqa: F811
    assert said(registry, STRANGER, "agents.spawn", parent="coord") == words(
        "stranger", "spawn an agent as a child of coord", "the agents you spawn are your children"
    )
    assert said(registry, STRANGER, "agents.spawn", mission=M) == words(
        "stranger",
        f"spawn an agent into mission {M}",
        "only its coordinator spawns its workers (spawn_worker)",
    )
    assert said(registry, STRANGER, "agents.spawn", role="coordinator") == words(
        "stranger", "spawn a coordinator", "volee spawns a mission's coordinator"
    )
    assert said(registry, COORD, "agents.spawn", permission_mode="bypassPermissions") == words(
        "coord",
        "spawn an agent in permission mode 'bypassPermissions' (its own is 'default')",
        "a child runs in its parent's permission mode",
    )
    assert said(registry, STRANGER, "agents.spawn", argv=["--permission-mode", "x"]) == words(
        "stranger",
        "spawn claude with flags of its own (--permission-mode x)",
        "a child runs with volee's flags and its parent's permission mode",
    )


def test_spawn_takes_empty_values_as_left_out_and_its_own_name_as_itself(
    registry: Registry,  # noqa: F811
) -> None:
    spawned = allowed(registry, COORD, "agents.spawn", parent="", mission="", permission_mode="")
    assert (spawned["parent"], spawned["mission"], spawned["permission_mode"]) == (
        COORD,
        "",
        "default",
    )
    assert allowed(registry, COORD, "agents.spawn", parent="coord")["parent"] == COORD
    assert allowed(registry, COORD, "agents.spawn", parent=COORD)["parent"] == COORD
    # An agent with no launch settings of its own (found, not launched) has no mode to pass on.
    assert "permission_mode" not in allowed(registry, STRANGER, "agents.spawn")
    refused = forbidden(registry, STRANGER, "agents.spawn", permission_mode="default")
    assert refused.attempt == "spawn an agent in permission mode 'default' (its own is None)"


def test_seeing_reading_and_posting_beyond_ones_own_says_why(
    registry: Registry,  # noqa: F811
) -> None:
    assert said(registry, STRANGER, "agents.screen", agent="worker") == words(
        "stranger",
        "read agent worker's timeline or screen",
        "an agent sees the agents it may write to: its mission, parent and children",
    )
    assert said(registry, STRANGER, "missions.show", mission=M) == words(
        "stranger",
        f"read mission {M}'s thread, which is not its own",
        "`volee mission ls` lists the missions",
    )
    assert said(registry, STRANGER, "messages.post", thread=TH, to=["human"]) == words(
        "stranger",
        f"post into thread {TH}, which is not one of its own",
        "leave out 'thread': volee picks the right one",
    )
    assert said(registry, WORKER, "messages.read", agent="human") == words(
        "worker", "read the person's messages", "read_messages shows yours"
    )
    assert said(registry, STRANGER, "missions.invite", mission=M, agent="child") == words(
        "stranger",
        f"invite an agent to mission {M}, which it does not coordinate",
        "its coordinator or the person invites",
    )
    assert said(registry, WORKER, "tidy", dry_run="yes") == words(
        "worker", "remove worktrees (tidy)", "`volee tidy --dry-run` only shows them"
    )


def test_a_thread_that_is_not_an_id_is_left_to_the_handler(registry: Registry) -> None:  # noqa: F811
    for odd in (["th"], {"th": 1}, 5, ""):
        params = allowed(registry, STRANGER, "messages.post", thread=odd, to=["human"])
        assert params["thread"] == odd


def test_a_mission_left_out_is_no_mission_of_its_own(registry: Registry) -> None:  # noqa: F811
    # Two missions: an empty reference is ambiguous, never "the" mission.
    for method in ("missions.show", "missions.invite"):
        with pytest.raises(Ambiguous) as caught:
            authorize(method, agent(COORD), {"mission": None}, registry)
        assert str(caught.value) == "'' matches 2 missions; give more of the id"


def test_missions_workers_fills_in_the_caller_only_when_nothing_is_named(
    registry: Registry,  # noqa: F811
) -> None:
    assert allowed(registry, STRANGER, "missions.workers", agent="worker") == {"agent": "worker"}
    assert allowed(registry, STRANGER, "missions.workers", agent="") == {"agent": STRANGER}
    assert allowed(registry, STRANGER, "missions.workers", mission="") == {
        "mission": "",
        "agent": STRANGER,
    }
    assert allowed(registry, STRANGER, "missions.workers", agent="", mission=M) == {
        "agent": "",
        "mission": M,
    }


def test_only_a_coordinator_may_not_leave_its_mission(registry: Registry) -> None:  # noqa: F811
    assert said(registry, COORD, "missions.join", mission=M, joined=False) == words(
        "coord", "leave the mission it coordinates"
    )
    assert allowed(registry, COORD, "missions.join", mission=M, joined=True)["joined"] is True
    assert allowed(registry, WORKER, "missions.join", mission=M, joined=False)["joined"] is False
    assert allowed(registry, WORKER, "missions.join", mission=OTHER_M)["agent"] == WORKER


def test_an_unknown_caller_reads_why_and_what_to_do(registry: Registry) -> None:  # noqa: F811
    for how, seen in (
        ("its process (pid 7) is gone", "its process (pid 7) is gone"),
        ("", "no pid"),
    ):
        with pytest.raises(Forbidden) as caught:
            authorize("daemon.stop", Caller.unknown(7, how), {}, registry)
        assert caught.value.attempt == "call daemon.stop as a caller volee cannot identify"
        assert str(caught.value) == (
            f"forbidden: volee cannot tell who is calling ({seen}); a caller it cannot identify "
            "is never taken for the person and may not call daemon.stop. Call again from a "
            "process that waits for its answer (the person's shell, the tray)"
        )


# The audit


def kept(service: Service) -> list[tuple[str, str, float]]:
    events = [e for _, e in service.events_after(0) if isinstance(e, ev.RequestRefused)]
    return [(e.agent, e.reason, e.at) for e in events]


async def test_the_same_refusal_is_recorded_again_exactly_30_seconds_later(
    registry: Registry,  # noqa: F811
) -> None:
    clock = FakeClock(1000.0)
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, clock)
    assert audit.window == 30.0
    assert audit.status() == {"refused": 0, "last": ""}
    await audit.record(agent(WORKER), "daemon.stop", "tried to stop the daemon")
    clock.t = 1029.5
    await audit.record(agent(WORKER), "daemon.stop", "tried to stop the daemon")
    clock.t = 1030.0
    await audit.record(agent(WORKER), "daemon.stop", "tried to stop the daemon")
    assert kept(service) == [
        (WORKER, "tried to stop the daemon", 1000.0),
        (WORKER, "tried to stop the daemon", 1030.0),
    ]


async def test_a_claim_to_be_volee_is_recorded_and_a_long_claim_cut(
    registry: Registry,  # noqa: F811
) -> None:
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, FakeClock(1000.0))
    me = agent(WORKER)
    await audit.claimed(replace(me, claim=VOLEE), "agents.list")
    await audit.claimed(replace(me, claim="x" * 50), "agents.list")
    await audit.claimed(replace(me, claim=COORD), "agents.list")
    assert [reason for _, reason, _ in kept(service)] == [
        "claimed to be volee (VOLEE_AGENT=volee in its environment)",
        f"claimed to be agent {'x' * 50} (VOLEE_AGENT={'x' * 40} in its environment)",
        f"claimed to be agent coord (VOLEE_AGENT={COORD} in its environment)",
    ]


async def test_a_claim_without_an_agent_is_not_recorded(registry: Registry) -> None:  # noqa: F811
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, FakeClock(1000.0))
    await audit.claimed(replace(Caller.unknown(5, "gone"), claim=COORD), "agents.list")
    await audit.claimed(agent(WORKER), "agents.list")
    assert kept(service) == []
    assert audit.status() == {"refused": 0, "last": ""}


async def test_each_refusal_is_logged_with_whom_and_why(
    registry: Registry,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, FakeClock(1000.0))
    with caplog.at_level(logging.WARNING, logger="volee_desktop.daemon.serving.access"):
        for _ in range(2):  # the second within the window: logged, not recorded
            await audit.refused(agent(WORKER), "daemon.stop", Forbidden("stop the daemon", "-"))
    assert [r.getMessage() for r in caplog.records] == [
        f"refused daemon.stop to agent {WORKER} (pid 1234: {HOW}): tried to stop the daemon"
    ] * 2
    assert len(kept(service)) == 1


async def test_the_refusal_of_a_forgotten_agent_is_only_logged(
    registry: Registry,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, FakeClock(1000.0))
    gone = Caller.of_agent(FORGOTTEN, 77, "")
    with caplog.at_level(logging.WARNING, logger="volee_desktop.daemon.serving.access"):
        await audit.record(gone, "daemon.stop", "tried to stop the daemon")
    first, second = [r.getMessage() for r in caplog.records]
    assert first == f"refused daemon.stop to agent {FORGOTTEN} (pid 77): tried to stop the daemon"
    assert second.startswith(
        f"the refusal of daemon.stop to agent {FORGOTTEN} (pid 77) is not in a timeline: "
    )
    assert second != (
        f"the refusal of daemon.stop to agent {FORGOTTEN} (pid 77) is not in a timeline: None"
    )
    assert FORGOTTEN in second.split(": ", 1)[1]  # the registry's words: no such agent
    assert kept(service) == []
    assert audit.status() == {"refused": 0, "last": ""}  # an agent, not an unknown caller


async def test_the_audits_memory_of_refusals_stays_bounded(
    registry: Registry,  # noqa: F811
) -> None:
    # More than 1000 remembered refusals: the next one forgets those past the window.
    clock = FakeClock(1000.0)
    service = Service(MemoryLog(), registry, Record)
    audit = Audit(service, clock)
    await audit.record(agent(WORKER), "m", "old")  # 30 s old when the memory is pruned
    for n in range(998):
        audit._last[(WORKER, "m", f"filler {n}")] = 900.0
    clock.t = 1001.0
    await audit.record(agent(WORKER), "m", "recent")  # 29 s old then: kept
    assert len(audit._last) == 1000
    clock.t = 1030.0
    await audit.record(agent(WORKER), "m", "one more")  # 1000 remembered: not over yet
    assert len(audit._last) == 1001
    await audit.record(agent(WORKER), "m", "pruning")
    assert set(audit._last) == {
        (WORKER, "m", "recent"),
        (WORKER, "m", "one more"),
        (WORKER, "m", "pruning"),
    }
    await audit.record(agent(WORKER), "m", "recent")  # still within its window: not again
    reasons = [reason for _, reason, _ in kept(service)]
    assert reasons == ["old", "recent", "one more", "pruning"]

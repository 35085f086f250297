"""Issue 22, item 5: a hook belongs to the agent whose tree sent it, not to the session id it
carries.

codex 0.171 beside another codex in one folder was seen reporting (or being given) the
other's session id; a hostile agent can send one on purpose.  The hook updates its sender's
agent; the other agent's session is not adopted, and the other agent is left alone.  The
caller is what identification (``daemon/serving/identity.py``) makes of a process in agent A's tree.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import AgentState, Harness, LaunchSettings
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.caller import Caller
from volee_desktop.ipc.server import Connection
from volee_desktop.paths import dirs

A = "ag_01M8T1ZXBBTV2903F5KTEJTDJA"
B = "ag_01M8T1ZXBBTV2903F5KTEJTDJB"
B_SESSION = "01a23420-09d5-7050-95e3-6b9c1027fddf"
A_SESSION = "01a23420-06d0-7ec0-9e7b-7b0deeccb0cc"


class _Conn:
    def __init__(self, caller: Caller) -> None:
        self.caller = caller


def _from(agent: str) -> Connection:
    how = f"descends from the program (pid 4100) of agent {agent}"
    return cast(Connection, _Conn(Caller.of_agent(agent, 4123, how)))


def _codex(agent: str, name: str) -> ev.AgentRegistered:
    return ev.AgentRegistered(
        at=1.0,
        agent=agent,
        name=name,
        harness=Harness.CODEX,
        launch=LaunchSettings(harness=Harness.CODEX, cwd="/tmp/p"),
        cwd="/tmp/p",
    )


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs(), serve=False)
    # Two codex agents in one folder; B already reported its session and is at work.
    await d.service.commit(
        [
            _codex(A, "c1"),
            _codex(B, "c2"),
            ev.SessionLinked(at=2.0, agent=B, session=B_SESSION),
            ev.StateChanged(at=2.0, agent=B, state=AgentState.WORKING),
        ]
    )
    yield d
    await d.close()


def _hook(event: str, session: str, agent: str | None, **payload: Any) -> dict[str, Any]:
    body = {"session_id": session, "cwd": "/tmp/p", "hook_event_name": event, **payload}
    return {"event": event, "payload": json.dumps(body), "agent": agent, "harness": "codex"}


async def _timeline(d: Daemon, agent: str) -> list[dict[str, Any]]:
    timeline: list[dict[str, Any]] = await d.api(
        cast(Connection, None), "agents.timeline", {"agent": agent}
    )
    return timeline


@pytest.mark.parametrize("named", [A, None], ids=["VOLEE_AGENT=A", "no VOLEE_AGENT"])
async def test_a_hook_from_as_tree_with_bs_session_updates_a_and_leaves_b_alone(
    daemon: Daemon, named: str | None
) -> None:
    b_before = daemon.service.registry.agents[B]
    a_tree = _from(A)

    for event, extra in [
        ("SessionStart", {"source": "startup", "model": "fake-model"}),
        ("UserPromptSubmit", {"prompt": "RUN: echo c1 > c1.txt"}),
        ("Stop", {"last_assistant_message": "c1 done"}),
    ]:
        reply = await daemon.api(a_tree, "hook", _hook(event, B_SESSION, named, **extra))
        assert reply["accepted"] is True, reply

    registry = daemon.service.registry
    a = registry.agents[A]
    assert (a.state, a.detail) == (AgentState.DONE, "c1 done")
    assert a.session is None
    assert a.sessions == ()
    assert registry.owner_of("codex", B_SESSION) == B
    assert registry.agents[B] == b_before  # no state, no session change of B
    refused = [e["reason"] for e in await _timeline(daemon, A) if e["type"] == "request-refused"]
    assert refused == [f"reported session {B_SESSION} of agent c2 in a hook: not taken"]
    b_timeline = await _timeline(daemon, B)
    assert [e["type"] for e in b_timeline if e["type"] == "session-linked"] == ["session-linked"]


async def test_its_own_session_is_still_linked_beside_the_other_agents(daemon: Daemon) -> None:
    reply = await daemon.api(_from(A), "hook", _hook("SessionStart", A_SESSION, A))

    assert reply["accepted"] is True, reply
    registry = daemon.service.registry
    assert registry.agents[A].session == A_SESSION
    assert registry.agents[A].state is AgentState.IDLE
    assert registry.owner_of("codex", B_SESSION) == B
    assert registry.agents[B].session == B_SESSION


async def test_a_hook_from_as_tree_naming_b_is_still_refused(daemon: Daemon) -> None:
    # The session id is not the only claim in a hook: VOLEE_AGENT=B from A's tree is refused.
    reply = await daemon.api(_from(A), "hook", _hook("Stop", B_SESSION, B))

    assert reply["accepted"] is False
    assert "report hook events as agent" in reply["reason"]
    assert daemon.service.registry.agents[B].state is AgentState.WORKING


async def test_a_forgotten_agents_session_in_as_hook_is_not_taken_either(daemon: Daemon) -> None:
    await daemon.service.commit([ev.AgentForgotten(at=3.0, agent=B)])

    reply = await daemon.api(_from(A), "hook", _hook("Stop", B_SESSION, A))

    assert reply["accepted"] is True, reply
    registry = daemon.service.registry
    assert registry.agents[A].state is AgentState.DONE
    assert registry.agents[A].sessions == ()
    assert registry.is_ignored("codex", B_SESSION)
    refused = [e["reason"] for e in await _timeline(daemon, A) if e["type"] == "request-refused"]
    assert refused == [f"reported session {B_SESSION} of forgotten agent c2 in a hook: not taken"]

"""Issue 22, finding 1: what a caller the daemon cannot identify may do (daemon/serving/access.py).

An ``unknown`` caller (its process gone, its pid reused, its /proc unreadable) is never
the person and gets less than an agent: it may read the list, nothing that acts or speaks
for anyone.  Its refusals are logged and counted (there is no timeline to keep them in).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from tests.daemon.test_access import PERSON_ONLY, STRANGER, WORKER, registry  # noqa: F401
from tests.fakes.clock import FakeClock
from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN
from volee_desktop.core.registry import Registry
from volee_desktop.daemon.errors import Forbidden
from volee_desktop.daemon.service import Service
from volee_desktop.daemon.serving.access import RULES, UNKNOWN_MAY, Audit, authorize
from volee_desktop.ipc.caller import Caller
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

GONE = Caller.unknown(4242, "its process (pid 4242) is gone")


@pytest.mark.parametrize("method", sorted(UNKNOWN_MAY))
def test_an_unknown_caller_may_read_the_list(registry: Registry, method: str) -> None:  # noqa: F811
    params = {"agent": "worker"}
    assert authorize(method, GONE, params, registry) is params


ACTING = sorted({*RULES, *(m for m, _p, _a in PERSON_ONLY)} - UNKNOWN_MAY)


@pytest.mark.parametrize("method", ACTING)
def test_unknown_caller_is_never_the_person_nor_any_agent(
    registry: Registry,  # noqa: F811
    method: str,
) -> None:
    # agents.stop of any agent, daemon.stop, hooks, messages, an MCP session: all refused,
    # with the reason in words.
    with pytest.raises(Forbidden) as caught:
        authorize(method, GONE, {"agent": WORKER, "sender": STRANGER}, registry)
    message = str(caught.value)
    assert message.startswith("forbidden: volee cannot tell who is calling")
    assert "pid 4242" in message
    assert "never taken for the person" in message
    assert method in caught.value.attempt


def test_unknown_gets_less_than_an_agent() -> None:
    # Whatever an unknown caller may call, an agent may too (reading is open to agents).
    assert UNKNOWN_MAY.issubset(RULES)
    assert "mcp.session" not in UNKNOWN_MAY  # a session would speak for whoever it claims
    assert "hook" not in UNKNOWN_MAY


async def test_an_unknown_callers_refusal_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = Service(MemoryLog(), Registry(), Record)
    audit = Audit(service, FakeClock(1_700_000_000.0))
    refused = Forbidden("call daemon.stop as a caller volee cannot identify", "forbidden: …")
    with caplog.at_level(logging.WARNING, logger="volee_desktop.daemon.serving.access"):
        for _ in range(3):
            await audit.refused(GONE, "daemon.stop", refused)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3  # every one logged, with whom it was refused to
    assert all("refused daemon.stop to a caller volee cannot identify" in x for x in lines)
    assert all("pid 4242" in x for x in lines)
    status: dict[str, Any] = audit.status()
    assert status["refused"] == 3
    assert "daemon.stop" in status["last"]
    assert service.registry.seq == 0  # no agent to keep it for: no event


async def test_mismatched_volee_agent_is_recorded_refused_in_the_agents_timeline(
    registry: Registry,  # noqa: F811
) -> None:
    service = Service(MemoryLog(), registry, Record)
    clock = FakeClock()
    audit = Audit(service, clock)
    how = "descends from the program (pid 8)"
    posing = replace(Caller.of_agent(WORKER, 9, how), claim=STRANGER)
    as_person = replace(Caller.of_agent(WORKER, 9, how), claim=HUMAN)
    for _ in range(3):  # a script retrying: recorded once per 30 s
        await audit.claimed(posing, "agents.list")
    await audit.claimed(as_person, "agents.list")
    clock.t += audit.window
    await audit.claimed(posing, "agents.list")
    kept = [e for _, e in service.events_after(0) if isinstance(e, ev.RequestRefused)]
    stranger = f"claimed to be agent stranger (VOLEE_AGENT={STRANGER} in its environment)"
    assert [(e.agent, e.reason) for e in kept] == [
        (WORKER, stranger),
        (WORKER, "claimed to be the person (VOLEE_AGENT=human in its environment)"),
        (WORKER, stranger),
    ]
    # Its own id is no claim: nothing recorded.
    await audit.claimed(Caller.of_agent(WORKER, 9, how), "agents.list")
    assert len([e for _, e in service.events_after(0) if isinstance(e, ev.RequestRefused)]) == 3

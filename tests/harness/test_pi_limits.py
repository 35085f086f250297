"""pi 0.73.1's own limit messages, as volee's extension reported them against the fake API
(samples/limits/pi-0.73.1-hooks.jsonl): pi retries a 429 or 529 by itself, each try ending
with ``agent_end``; volee shows the retry, then the limit its turn ended on (docs/limits.md)."""

from __future__ import annotations

import json
from typing import Any

from volee_desktop.core import events as ev
from volee_desktop.core.fold import fold
from volee_desktop.core.model import Agent, Harness, LimitKind
from volee_desktop.core.states import AgentState
from volee_desktop.core.tables import Tables
from volee_desktop.harness.pi import error_limit, hook_events

from .support import AT, SAMPLES, agent


def recorded(fake: str) -> list[tuple[str, dict[str, Any]]]:
    lines = (SAMPLES / "limits" / "pi-0.73.1-hooks.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    return [(r["hook"], r["payload"]) for r in rows if r["fake"].startswith(fake)]


def play(fake: str) -> list[tuple[str, str, str | None]]:
    """The recorded reports, one after the other: (state, detail, the limit's shape)."""
    a = agent(Harness.PI, AgentState.LAUNCHING)
    seen: list[tuple[str, str, str | None]] = []
    for hook, payload in recorded(fake):
        for event in hook_events(a, hook, payload, AT):
            a = apply(a, event)
        limit = a.limit
        shape = None if limit is None else f"{limit.kind.value} ended={limit.ended}"
        seen.append((a.state.value, a.detail, shape))
    return seen


def apply(a: Agent, event: ev.Event) -> Agent:
    tables = Tables(agents={a.id: a})
    fold(tables, event)
    return tables.agents[a.id]


def test_a_usage_limit_is_retried_by_pi_then_ends_its_turn() -> None:
    seen = play("usage_limit")
    assert seen[2] == ("working", "retrying: rate limit, attempt 1/3", "rate ended=False")
    assert seen[3] == ("working", "retrying: rate limit, attempt 1/3", "rate ended=False")
    assert seen[6] == ("working", "retrying: rate limit, attempt 3/3", "rate ended=False")
    assert seen[-1] == ("idle", "limited: rate limit", "rate ended=True")


def test_an_overload_is_retried_then_ends_its_turn() -> None:
    seen = play("overloaded")
    assert seen[2] == ("working", "retrying: overloaded, attempt 1/3", "overloaded ended=False")
    assert seen[-1] == ("idle", "limited: overloaded", "overloaded ended=True")


def test_other_errors_and_plain_ends_are_done() -> None:
    assert error_limit({"stop_reason": "error", "error_message": "400 invalid model"}) is None
    assert error_limit({"stop_reason": "stop"}) is None
    assert error_limit({}) is None
    assert error_limit({"stop_reason": "error", "error_message": "429 Too Many"}) is LimitKind.RATE
    a = agent(Harness.PI, AgentState.WORKING)
    out = hook_events(a, "agent_end", {"stop_reason": "error", "error_message": "boom"}, AT)
    assert [e.state for e in out if isinstance(e, ev.StateChanged)] == [AgentState.DONE]


def test_with_pi_auto_retry_off_the_first_limit_ends_the_turn() -> None:
    a = agent(Harness.PI, AgentState.WORKING)
    payload = {"stop_reason": "error", "error_message": "529 overloaded", "max_retries": 0}
    out = hook_events(a, "agent_end", payload, AT)
    hits = [e for e in out if isinstance(e, ev.LimitHit)]
    assert [(h.kind, h.ended) for h in hits] == [(LimitKind.OVERLOADED, True)]

"""Claude Code's limits, on what 2.1.332 recorded against the fake API (samples/limits/):
its ``StopFailure`` payloads and its screens while it retries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Limit, LimitKind
from volee_desktop.core.states import AgentState
from volee_desktop.harness.claude import (
    ScreenRetry,
    auto_continues,
    hook_events,
    screen_retry,
    stop_limit,
)

from .support import AT, SAMPLES, agent

LIMITS = SAMPLES / "limits"


def stop_failure(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (LIMITS / f"claude-2.1.332-StopFailure-{name}.json").read_text()
    )
    return data


def screens() -> dict[str, list[str]]:
    """The recorded screens, by their "--- " heading."""
    out: dict[str, list[str]] = {}
    heading = ""
    for line in (LIMITS / "claude-2.1.332-screens.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        if line.startswith("--- "):
            heading = line[4:]
            out[heading] = []
        else:
            out[heading].append(line)
    return out


SCREENS = screens()


def screen(prefix: str, index: int = 0) -> list[str]:
    return [lines for head, lines in SCREENS.items() if head.startswith(prefix)][index]


def test_the_five_hour_retry_on_screen_names_the_limit_its_attempt_and_the_reset() -> None:
    assert screen_retry(screen("five_hour")) == ScreenRetry(LimitKind.FIVE_HOUR, 2, 3, "1:38am")
    assert screen_retry(screen("five_hour", 1)) == ScreenRetry(LimitKind.FIVE_HOUR, 3, 3, "1:38am")


def test_a_529_retry_is_overloaded_and_a_bare_api_error_is_no_limit() -> None:
    assert screen_retry(screen("overloaded_529")) is None  # "API error · retrying"
    assert screen_retry(screen("overloaded_529", 1)) == ScreenRetry(
        LimitKind.OVERLOADED, 3, 3, None
    )


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "✻ weekly limit reached · retrying in 4s (Dec 3, 4pm) · attempt 1/10",
            LimitKind.SEVEN_DAY,
        ),
        ("✻ Rate limited · retrying in 30s · attempt 2/10", LimitKind.RATE),
        ("✻ Connection error · retrying in 3s · attempt 2/10", None),
        ("✻ rate limit reached · retrying in 3s · attempt 2/10", LimitKind.RATE),
    ],
)
def test_other_retry_lines(line: str, kind: LimitKind | None) -> None:
    seen = screen_retry(["❯ hello", line])
    assert (seen.kind if seen else None) is kind


def test_a_retry_in_flight_shows_no_countdown_and_still_names_the_limit() -> None:
    # 2.1.332 while the retry's request runs (tests/harness/samples/limits/*-output.jsonl).
    line = "✻ 5-hour limit reached · retrying… · attempt 1/4"
    assert screen_retry(["❯ hello", line]) == ScreenRetry(LimitKind.FIVE_HOUR, 1, 4, None)


def test_a_screen_that_gave_up_shows_no_retry() -> None:
    assert screen_retry(screen("five_hour", 2)) is None
    assert screen_retry(screen("retry_after_long")) is None


def test_claude_codes_own_automatic_continue_is_seen() -> None:
    assert auto_continues(["Usage limit reached · set to continue automatically at 4:20pm"])
    assert auto_continues(["Continuing automatically at 4:20pm · Esc to cancel"])
    assert not auto_continues(screen("five_hour", 2))


def test_a_turn_that_ended_on_the_plans_limit_waits_idle_with_the_limit_seen_retrying() -> None:
    payload = stop_failure("five_hour")
    seen = Limit(kind=LimitKind.FIVE_HOUR, at=AT - 9, resets_at=AT + 7980, attempt=3, attempts=3)
    a = agent(sessions=(payload["session_id"],))
    a = type(a)(**{**a.__dict__, "limit": seen})

    out = hook_events(a, "StopFailure", payload, AT)

    changed = [e for e in out if isinstance(e, ev.StateChanged)]
    assert [(e.state, e.detail) for e in changed] == [(AgentState.IDLE, "limited: 5-hour limit")]
    [hit] = [e for e in out if isinstance(e, ev.LimitHit)]
    assert (hit.kind, hit.resets_at, hit.ended) == (LimitKind.FIVE_HOUR, AT + 7980, True)
    assert hit.message == "API Error: Request rejected (429) · Rate limited"


def test_a_429_nothing_retried_is_a_rate_limit_with_no_reset_time() -> None:
    payload = stop_failure("retry_after_long")
    a = agent(sessions=(payload["session_id"],))
    [hit] = [e for e in hook_events(a, "StopFailure", payload, AT) if isinstance(e, ev.LimitHit)]
    assert (hit.kind, hit.resets_at) == (LimitKind.RATE, None)


def test_a_529_that_ended_the_turn_is_overloaded() -> None:
    payload = stop_failure("overloaded_529")
    assert payload["error"] == "server_error"
    assert stop_limit(payload, agent()) is LimitKind.OVERLOADED
    a = agent(sessions=(payload["session_id"],))
    states = [
        e.state
        for e in hook_events(a, "StopFailure", payload, AT)
        if isinstance(e, ev.StateChanged)
    ]
    assert states == [AgentState.IDLE]


@pytest.mark.parametrize("error", ["billing_error", "authentication_failed", "server_error"])
def test_other_errors_still_fail_the_agent(error: str) -> None:
    payload = {**stop_failure("five_hour"), "error": error, "last_assistant_message": "API Error"}
    a = agent(sessions=(payload["session_id"],))
    out = hook_events(a, "StopFailure", payload, AT)
    assert [(e.state, e.detail) for e in out if isinstance(e, ev.StateChanged)] == [
        (AgentState.FAILED, error)
    ]
    assert not [e for e in out if isinstance(e, ev.LimitHit)]


def test_the_subscription_wording_names_the_limit_without_a_screen() -> None:
    payload = {
        **stop_failure("five_hour"),
        "last_assistant_message": "You've hit your session limit · resets 4:20pm",
    }
    assert stop_limit(payload, agent()) is LimitKind.FIVE_HOUR
    weekly = {**payload, "last_assistant_message": "You've hit your weekly limit · resets Dec 3"}
    assert stop_limit(weekly, agent()) is LimitKind.SEVEN_DAY


def test_a_second_stop_failure_keeps_the_reset_the_agent_waits_for() -> None:
    payload = stop_failure("five_hour")
    waiting = Limit(kind=LimitKind.FIVE_HOUR, at=AT - 5, resets_at=AT + 600, ended=True)
    a = agent(
        state=AgentState.IDLE, sessions=(payload["session_id"],), detail="limited: 5-hour limit"
    )
    a = type(a)(**{**a.__dict__, "limit": waiting})
    [hit] = [e for e in hook_events(a, "StopFailure", payload, AT) if isinstance(e, ev.LimitHit)]
    assert (hit.kind, hit.resets_at) == (LimitKind.FIVE_HOUR, AT + 600)

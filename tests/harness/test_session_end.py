"""One session-end rule for every harness: the person left, a stop ended it (kept as said), or
it ended on its own; Claude Code and codex (``SessionEnd``) and pi (``session_shutdown``)
all end a session through ``base.session_ended``."""

from __future__ import annotations

from typing import Any

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Agent, Harness
from volee_desktop.core.states import AgentState
from volee_desktop.harness import claude, codex, pi
from volee_desktop.harness.base import session_ended

from .support import AT, agent, sample

# harness -> (its hook events, its end hook, the payload of the person leaving, of an end on
# its own, what it says of the latter, the detail of the former)
HARNESSES: dict[Harness, tuple[Any, str, dict[str, Any], dict[str, Any], str, str]] = {
    Harness.CLAUDE: (
        claude.hook_events,
        "SessionEnd",
        sample("claude-hook-SessionEnd-prompt_input_exit"),
        sample("claude-hook-SessionEnd-other"),
        "other",
        "you left Claude Code",
    ),
    Harness.CODEX: (
        codex.hook_events,
        "SessionEnd",
        {**sample("codex-hook-PreToolUse"), "reason": "prompt_input_exit"},
        {**sample("codex-hook-PreToolUse"), "reason": "logout"},
        "logout",
        "you left codex",
    ),
    Harness.PI: (
        pi.hook_events,
        "session_shutdown",
        sample("pi-hook-session_shutdown-quit"),
        sample("pi-hook-session_shutdown-signal"),
        "SIGTERM",
        "you left pi",
    ),
}


def _end(events: list[ev.Event]) -> list[ev.Event]:
    return [e for e in events if isinstance(e, (ev.StateChanged, ev.StopRequested))]


def _details(events: list[ev.Event]) -> list[str]:
    return [e.detail for e in events if isinstance(e, ev.StateChanged)]


def _agents(harness: Harness, session: str) -> list[Agent]:
    """Running, done, held before it ended, and already stopped by a stop."""
    return [
        agent(harness, AgentState.WORKING, sessions=(session,)),
        agent(harness, AgentState.DONE, sessions=(session,), detail="all done"),
        agent(harness, AgentState.WORKING, sessions=(session,), held="stopped by you"),
        agent(
            harness,
            AgentState.STOPPED,
            sessions=(session,),
            detail="stopped by volee: over budget",
            held="stopped by volee: over budget",
        ),
    ]


@pytest.mark.parametrize("harness", list(HARNESSES))
def test_every_harness_ends_a_session_by_the_one_rule(harness: Harness) -> None:
    events_of, hook, left, ended, why, detail = HARNESSES[harness]
    for a in _agents(harness, left["session_id"]):
        assert _end(events_of(a, hook, left, AT)) == session_ended(a, AT, left=detail)
        assert _end(events_of(a, hook, ended, AT)) == session_ended(a, AT, left=None, why=why)


def test_the_rule_itself() -> None:
    running = agent(Harness.PI, AgentState.WORKING)
    assert session_ended(running, AT, left="you left pi") == [
        ev.StateChanged(at=AT, agent="ag_1", state=AgentState.STOPPED, detail="you left pi"),
        ev.StopRequested(at=AT, agent="ag_1", by=ev.Stopper.HUMAN, reason="you left pi"),
    ]
    assert session_ended(running, AT, left=None, why="SIGHUP") == [
        ev.StateChanged(
            at=AT, agent="ag_1", state=AgentState.STOPPED, detail="session ended (SIGHUP)"
        )
    ]
    assert _details(session_ended(running, AT, left=None)) == ["session ended"]
    held = agent(Harness.PI, AgentState.WORKING, held="stopped by you")
    assert _details(session_ended(held, AT, left=None, why="x")) == ["stopped by you"]
    stopped = agent(Harness.PI, AgentState.STOPPED, detail="stopped: idle", held="stopped: idle")
    assert session_ended(stopped, AT, left=None, why="x") == []

"""``volee ls`` says a turn that ended on a denial in the list's word (issue 26, words that
stay true): ``denied``, never a plain ``done``; ``ls --json`` carries it."""

from __future__ import annotations

from volee_desktop.cli.agents import ls_lines
from volee_desktop.core.model import Agent, Harness
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.views import agent_view

T0 = 1_700_000_000.0


def _agent(**changes: object) -> Agent:
    base: dict[str, object] = {
        "id": "ag_1",
        "name": "api-fixer",
        "harness": Harness.CLAUDE,
        "state": AgentState.DONE,
        "state_since": T0,
    }
    return Agent(**{**base, **changes})  # type: ignore[arg-type]


def test_a_turn_that_ended_on_a_denial_reads_denied_in_ls_and_in_its_json() -> None:
    view = agent_view(_agent(denied="Bash: rm -rf build", detail="ok, skipped it"))
    assert view["outcome"] == "denied"
    assert view["denied"] == "Bash: rm -rf build"
    _header, line = ls_lines([view], {}, T0 + 60)
    assert line.split()[0] == "denied"
    assert "  Bash: rm -rf build · ok, skipped it  " in line  # what was denied comes first
    assert " done " not in f" {line} "


def test_a_plain_done_turn_still_reads_done_and_an_interrupted_rest_reads_interrupted() -> None:
    done = agent_view(_agent())
    assert done["outcome"] is None
    interrupted = agent_view(_agent(state=AgentState.IDLE, interrupted="the host was killed"))
    assert interrupted["outcome"] == "interrupted"
    _header, first, second = ls_lines([done, interrupted], {}, T0 + 60)
    assert first.split()[0] == "done"
    assert second.split()[0] == "interrupted"


def test_a_working_agent_that_was_denied_earlier_says_its_state() -> None:
    # The denial is the turn's end only once it rests: while working it is just working.
    view = agent_view(_agent(state=AgentState.WORKING, denied="Bash: rm -rf build"))
    assert view["outcome"] is None
    assert ls_lines([view], {}, T0 + 60)[1].split()[0] == "working"

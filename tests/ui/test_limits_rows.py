"""How the list rows, the tray tooltip and the list header show agents a usage limit stopped
(Qt-free: the words and the row style; docs/limits.md)."""

from __future__ import annotations

import time

from volee_desktop.app.summary import StateCounts, summarize
from volee_desktop.app.texts import (
    LIMITED_COLOUR,
    LIMITED_MARK,
    STATE_COLOUR,
    STATE_MARK,
    detail_text,
    limits_line,
    state_colour,
    state_mark,
)
from volee_desktop.core.model import Agent, Harness, Limit, LimitKind
from volee_desktop.core.states import AgentState

NOW = 1_796_000_000.0
RESET = NOW + 2 * 3600 + 13 * 60 + 20


def agent(n: int, *, ended: bool = True, state: AgentState = AgentState.IDLE) -> Agent:
    limit = Limit(kind=LimitKind.FIVE_HOUR, at=NOW - 60, resets_at=RESET, ended=ended)
    return Agent(
        id=f"ag_{n}",
        name=f"a{n}",
        harness=Harness.CLAUDE,
        state=state,
        detail="limited: 5-hour limit" if ended else "retrying: 5-hour limit, attempt 4/10",
        limit=limit,
    )


def clock(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def test_a_limited_row_says_when_it_resets_in_its_own_style() -> None:
    limited = agent(1)
    assert detail_text(limited) == f"limited — resets {clock(RESET)}"
    assert (state_colour(limited), state_mark(limited)) == (LIMITED_COLOUR, LIMITED_MARK)
    assert LIMITED_COLOUR not in (STATE_COLOUR[AgentState.IDLE], STATE_COLOUR[AgentState.FAILED])


def test_a_retrying_row_keeps_the_working_style_and_says_it_retries() -> None:
    retrying = agent(2, ended=False, state=AgentState.WORKING)
    assert detail_text(retrying) == "retrying: 5-hour limit, attempt 4/10"
    assert state_colour(retrying) == STATE_COLOUR[AgentState.WORKING]
    assert state_mark(retrying) == STATE_MARK[AgentState.WORKING]


def test_the_tooltip_and_the_list_header_count_the_limited_and_name_the_reset() -> None:
    agents = [agent(1), agent(2), agent(3, ended=False, state=AgentState.WORKING)]
    line = limits_line(agents, NOW)
    assert line == f"2 limited, resets {clock(RESET)} (in 2 h 13 min)"
    summary = summarize(StateCounts.of(agents), limited=line)
    assert summary.tooltip == f"1 working · {line}"
    assert limits_line([agents[2]], NOW) == ""


def test_the_counts_keep_how_many_wait_on_a_limit() -> None:
    counts = StateCounts.of([agent(1), agent(2, ended=False, state=AgentState.WORKING)])
    assert counts.limited == 1
    counts.move(agent(1), agent(1, state=AgentState.WORKING))
    assert counts.limited == 0


def test_the_meter_shows_the_freshest_report_and_warns_from_warn_at() -> None:
    from dataclasses import replace

    from volee_desktop.app.texts import plan_line
    from volee_desktop.core.model import PlanUse

    old = replace(agent(1), plan=PlanUse(at=NOW - 60, five_hour=0.5, seven_day=0.2))
    new = replace(agent(2), plan=PlanUse(at=NOW, five_hour=0.92, seven_day=0.31))
    assert plan_line([old, new]) == "plan: 5 h 92 % · week 31 %"
    assert plan_line([old, new], warn_at=0.9) == "⚠ plan: 5 h 92 % · week 31 %"
    assert plan_line([old], warn_at=0.9) == "plan: 5 h 50 % · week 20 %"
    assert plan_line([agent(3)]) == ""  # no harness reported it: nothing is shown
    summary = summarize(StateCounts.of([new]), plan=plan_line([new]))
    assert summary.tooltip.endswith("plan: 5 h 92 % · week 31 %")

"""The limit rules: who waits, when volee continues each, what is said (time is an argument)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core import limits
from volee_desktop.core.limits import Due, LimitPolicy
from volee_desktop.core.model import Agent, Harness, Limit, LimitKind
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .support import A1, A2, A3, T0, given, registered, state, when

HOUR = 3600.0
RESET = T0 + 2 * HOUR
POLICY = LimitPolicy(margin=60.0, stagger=5.0, unknown_wait=900.0, budget=3)


def clock(at: float) -> str:
    """A clock that names times by their offset from T0 (the daemon gives local time)."""
    minutes = int((at - T0) // 60)
    return f"T+{minutes // 60}:{minutes % 60:02d}"


def limited(
    n: str = A1,
    *,
    at: float = T0,
    resets_at: float | None = RESET,
    kind: LimitKind = LimitKind.FIVE_HOUR,
    **changes: object,
) -> Agent:
    limit = Limit(kind=kind, at=at, resets_at=resets_at, ended=True)
    agent = Agent(id=n, name=n[-4:], harness=Harness.CLAUDE, state=AgentState.IDLE, limit=limit)
    return replace(agent, **changes)  # type: ignore[arg-type]


def hit(agent: str = A1, *, at: float = T0, ended: bool = True, **fields: object) -> ev.LimitHit:
    return ev.LimitHit(
        at=at,
        agent=agent,
        kind=fields.pop("kind", LimitKind.FIVE_HOUR),  # type: ignore[arg-type]
        resets_at=fields.pop("resets_at", RESET),  # type: ignore[arg-type]
        ended=ended,
        **fields,  # type: ignore[arg-type]
    )


def waiting_registry() -> Registry:
    return given(registered(A1), state(A1, AgentState.WORKING), state(A1, AgentState.IDLE), hit())


# --- who waits ----------------------------------------------------------------------------


def test_an_idle_agent_whose_turn_ended_on_a_limit_waits() -> None:
    assert limits.waits(limited())


def test_a_limit_still_retried_is_not_waiting_but_retrying() -> None:
    agent = replace(limited(), state=AgentState.WORKING)
    retried = replace(agent, limit=replace(agent.limit, ended=False))  # type: ignore[type-var]
    assert not limits.waits(retried)
    assert limits.retrying(retried)
    assert not limits.retrying(agent)  # an ended limit is no retry


@pytest.mark.parametrize("other", [AgentState.DONE, AgentState.STOPPED, AgentState.WORKING])
def test_only_an_idle_agent_waits(other: AgentState) -> None:
    assert not limits.waits(replace(limited(), state=other))


def test_an_idle_agent_without_a_limit_does_not_wait() -> None:
    assert not limits.waits(replace(limited(), limit=None))
    assert not limits.retrying(replace(limited(), state=AgentState.WORKING, limit=None))


# --- when it lifts ------------------------------------------------------------------------


def test_the_limit_lifts_at_its_reset() -> None:
    assert limits.lifts_at(Limit(kind=LimitKind.FIVE_HOUR, at=T0, resets_at=RESET), 900) == RESET


def test_without_a_reset_time_it_is_taken_to_lift_after_the_unknown_wait() -> None:
    assert limits.lifts_at(Limit(kind=LimitKind.RATE, at=T0), 900) == T0 + 900


def test_a_reset_already_past_when_the_turn_ended_waits_the_unknown_wait() -> None:
    # It was hit again after its reset: the reset it names is no news.
    past = Limit(kind=LimitKind.FIVE_HOUR, at=T0, resets_at=T0)
    assert limits.lifts_at(past, 900) == T0 + 900
    assert limits.lifts_at(replace(past, resets_at=T0 + 1), 900) == T0 + 1


# --- who volee continues ------------------------------------------------------------------


def test_a_waiting_agent_is_continued() -> None:
    assert limits.why_not(limited(), POLICY) is None


def test_an_agent_the_person_stopped_is_not_continued() -> None:
    assert limits.why_not(limited(held="stopped by you"), POLICY) == "you stopped it"


def test_an_agent_of_an_ended_mission_is_not_continued() -> None:
    agent = limited(held="its mission ended", held_for_good=True)
    assert limits.why_not(agent, POLICY) == "its mission ended"


def test_nothing_is_continued_when_resume_is_off() -> None:
    off = replace(POLICY, resume=False)
    assert limits.why_not(limited(), off) == "automatic continue is off ([limits] resume)"
    assert limits.schedule([limited()], off) == []


def test_an_agent_is_continued_at_most_once_per_limit() -> None:
    agent = limited(limit_continued=T0)
    assert limits.why_not(agent, POLICY) == "volee continued it for this limit already"
    # A new limit (another time) is a new chance.
    assert limits.why_not(replace(agent, limit_continued=T0 - 1), POLICY) is None


def test_the_restart_bounds_end_the_continues_of_an_agent_the_limit_stops_again() -> None:
    assert limits.why_not(limited(limit_continues=2), POLICY) is None
    stopped = limits.why_not(limited(limit_continues=3), POLICY)
    assert stopped == "the limit stopped it again after 3 continues"


# --- the schedule -------------------------------------------------------------------------


def test_agents_of_one_reset_are_continued_after_the_margin_one_stagger_apart() -> None:
    agents = [limited(A2, at=T0 + 1), limited(A1, at=T0 + 2), limited(A3, at=T0 + 1)]
    assert limits.schedule(agents, POLICY) == [
        Due(A2, RESET + 60),
        Due(A3, RESET + 65),
        Due(A1, RESET + 70),
    ]


def test_each_reset_staggers_its_own_agents() -> None:
    later = RESET + HOUR
    agents = [limited(A1), limited(A2, resets_at=later), limited(A3, resets_at=later)]
    assert limits.schedule(agents, POLICY) == [
        Due(A1, RESET + 60),
        Due(A2, later + 60),
        Due(A3, later + 65),
    ]


def test_only_waiting_agents_that_may_be_continued_are_scheduled() -> None:
    agents = [
        limited(A1),
        limited(A2, held="stopped by you"),
        replace(limited(A3), state=AgentState.WORKING),
    ]
    assert limits.schedule(agents, POLICY) == [Due(A1, RESET + 60)]


# --- what is said -------------------------------------------------------------------------


def test_the_prompt_is_labelled_and_names_both_times() -> None:
    text = limits.continue_prompt(limited().limit, clock, RESET + 60)  # type: ignore[arg-type]
    assert text == (
        "[volee] your plan's usage limit was reached at T+0:00 and reset at T+2:00; "
        "continue where you left off"
    )


def test_the_prompt_of_a_rate_limit_without_a_reset_names_now() -> None:
    limit = Limit(kind=LimitKind.RATE, at=T0, ended=True)
    text = limits.continue_prompt(limit, clock, T0 + 900)
    assert text.startswith("[volee] the API's rate limit was reached at T+0:00 and reset at T+0:15")


def test_the_row_says_what_is_retried() -> None:
    limit = Limit(kind=LimitKind.FIVE_HOUR, at=T0, attempt=4, attempts=10)
    assert limits.detail(limit) == "retrying: 5-hour limit, attempt 4/10"
    assert limits.detail(Limit(kind=LimitKind.OVERLOADED, at=T0)) == "retrying: overloaded"


def test_a_waiting_row_says_when_it_resets() -> None:
    assert limits.limited_text(limited().limit, clock) == "limited — resets T+2:00"  # type: ignore[arg-type]
    unknown = Limit(kind=LimitKind.RATE, at=T0, ended=True)
    assert limits.limited_text(unknown, clock) == "limited — rate limit, reset time not known"


def test_one_notice_for_every_waiting_agent_names_the_earliest_reset() -> None:
    agents = [limited(A1, resets_at=RESET + 60), limited(A2), limited(A3, held="x")]
    notice = limits.notice(
        [*agents, replace(limited(), id="ag_x", state=AgentState.DONE)], T0, clock
    )
    assert notice is not None
    assert notice.text == "Usage limit reached — 3 agents wait; resets T+2:00 (in 2 h)"
    assert (notice.key, notice.count) == (RESET, 3)


def test_the_notice_of_one_agent_and_of_a_rate_limit_without_reset() -> None:
    notice = limits.notice([limited(kind=LimitKind.RATE, resets_at=None)], T0, clock)
    assert notice is not None
    assert notice.text == "Rate limit reached — 1 agent waits; reset time not known"
    assert notice.key == 0.0


def test_no_waiting_agent_withdraws_the_notice() -> None:
    assert limits.notice([replace(limited(), state=AgentState.WORKING)], T0, clock) is None


# --- the fold -----------------------------------------------------------------------------


def test_a_turn_that_ended_on_a_limit_leaves_the_agent_waiting() -> None:
    agent = waiting_registry().agents[A1]
    assert limits.waits(agent)
    assert agent.limit == Limit(kind=LimitKind.FIVE_HOUR, at=T0, resets_at=RESET, ended=True)


def test_a_new_turn_clears_the_limit_it_ended_on() -> None:
    r = waiting_registry()
    assert when(r, state(A1, AgentState.WORKING, at=T0 + 5)) is None
    assert r.agents[A1].limit is None


def test_a_limit_being_retried_stays_through_the_turn() -> None:
    r = given(
        registered(A1), state(A1, AgentState.WORKING), hit(ended=False, attempt=2, attempts=10)
    )
    assert when(r, state(A1, AgentState.WORKING, at=T0 + 1, detail="Bash: ls")) is None
    assert r.agents[A1].limit is not None
    assert r.agents[A1].limit.attempt == 2


def test_a_finished_turn_clears_the_limit_and_gives_the_continues_back() -> None:
    r = waiting_registry()
    assert when(r, ev.LimitContinued(at=T0 + 1, agent=A1)) is None
    assert r.agents[A1].limit_continues == 1
    assert when(r, state(A1, AgentState.DONE, at=T0 + 2)) is None
    assert r.agents[A1].limit is None
    assert r.agents[A1].limit_continues == 0


def test_an_agent_no_longer_live_has_no_limit() -> None:
    r = waiting_registry()
    assert when(r, state(A1, AgentState.STOPPED, at=T0 + 1)) is None
    assert r.agents[A1].limit is None
    assert not limits.waits(r.agents[A1])


def test_an_automatic_continue_counts_and_remembers_its_limit() -> None:
    r = waiting_registry()
    assert when(r, ev.LimitContinued(at=T0 + 1, agent=A1)) is None
    assert (r.agents[A1].limit_continues, r.agents[A1].limit_continued) == (1, T0)
    assert limits.why_not(r.agents[A1], POLICY) == "volee continued it for this limit already"


def test_the_persons_continue_gives_the_budget_back() -> None:
    r = waiting_registry()
    assert when(r, ev.LimitContinued(at=T0 + 1, agent=A1)) is None
    assert when(r, ev.LimitContinued(at=T0 + 2, agent=A1, automatic=False)) is None
    assert (r.agents[A1].limit_continues, r.agents[A1].limit_continued) == (0, T0)


def test_only_an_agent_whose_turn_ended_on_a_limit_can_be_continued() -> None:
    r = given(registered(A1), state(A1, AgentState.IDLE))
    name = r.agents[A1].name
    assert when(r, ev.LimitContinued(at=T0, agent=A1)) == (
        f"agent {name} did not end its turn on a limit"
    )
    assert when(r, hit(ended=False)) is None
    assert when(r, ev.LimitContinued(at=T0, agent=A1)) is not None


def test_a_limit_hit_with_a_bad_reset_or_attempt_is_refused() -> None:
    r = given(registered(A1))
    assert when(r, hit(resets_at=-1.0)) == "reset time -1.0 is before 1970"
    assert when(r, hit(attempt=0, attempts=10)) == "attempt 0/10 is not a retry"
    assert when(r, hit(attempt=11, attempts=10)) == "attempt 11/10 is not a retry"
    assert when(r, hit(attempt=10, attempts=10)) is None
    assert when(r, hit(attempt=3)) is None
    assert when(r, hit(resets_at=0.0)) is None


def test_a_limit_without_reset_time_is_continued_after_the_unknown_wait_and_margin() -> None:
    agents = [limited(A1, resets_at=None, kind=LimitKind.RATE), limited(A2, at=T0 + 1)]
    assert limits.schedule(agents, POLICY) == [Due(A1, T0 + 900 + 60), Due(A2, RESET + 60)]


def test_a_retry_without_its_number_of_attempts_says_only_what_is_retried() -> None:
    limit = Limit(kind=LimitKind.FIVE_HOUR, at=T0, attempt=4)
    assert limits.detail(limit) == "retrying: 5-hour limit"


def test_the_limit_keeps_the_retry_and_the_harness_message() -> None:
    retry = hit(ended=False, attempt=2, attempts=10, message="API Error: Request rejected (429)")
    r = given(registered(A1), state(A1, AgentState.WORKING), retry)
    limit = r.agents[A1].limit
    assert limit is not None
    assert (limit.attempt, limit.attempts, limit.message) == (
        2,
        10,
        "API Error: Request rejected (429)",
    )


def test_the_plans_use_is_kept_and_a_share_outside_0_to_1_refused() -> None:
    r = given(registered(A1))
    used = ev.PlanUsed(
        at=T0,
        agent=A1,
        five_hour=0.72,
        five_hour_resets_at=RESET,
        seven_day=1.0,
        seven_day_resets_at=RESET + 86_400,
    )
    assert when(r, used) is None
    plan = r.agents[A1].plan
    assert plan is not None
    assert (plan.at, plan.five_hour, plan.five_hour_resets_at, plan.seven_day) == (
        T0,
        0.72,
        RESET,
        1.0,
    )
    assert plan.seven_day_resets_at == RESET + 86_400
    assert when(r, ev.PlanUsed(at=T0, agent=A1, five_hour=1.5)) == "plan use 1.5 is outside 0..1"
    assert when(r, ev.PlanUsed(at=T0, agent=A1, seven_day=-0.1)) == "plan use -0.1 is outside 0..1"
    assert when(r, ev.PlanUsed(at=T0, agent=A1, five_hour=0.0, seven_day=0.0)) is None


def test_the_first_retry_of_a_limit_is_a_retry() -> None:
    r = given(registered(A1), state(A1, AgentState.WORKING))
    assert when(r, hit(ended=False, attempt=1, attempts=10)) is None
    assert r.agents[A1].limit is not None
    assert r.agents[A1].limit.attempt == 1

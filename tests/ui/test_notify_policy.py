"""The notification rules, one test each, on a fake clock (no Qt)."""

from __future__ import annotations

from dataclasses import replace

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.live import Change, LiveRegistry
from volee_desktop.app.notify_policy import (
    BURST_WINDOW,
    PER_SUBJECT,
    SETTLE,
    Action,
    Kind,
    Notice,
    NotifySettings,
    Throttle,
    candidates,
    clock_time,
    still_holds,
)
from volee_desktop.core import events as ev
from volee_desktop.core.model import LimitKind
from volee_desktop.core.states import AgentState


class Feed:
    """A live registry fed by a fake daemon, collecting every Change (what the app sees)."""

    def __init__(self) -> None:
        self.link = FakeDaemonLink()
        self.world = World(self.link)
        self.live = LiveRegistry()
        self.changes: list[Change] = []
        self.live.observe(self)
        self.link.listener = self.live

    def on_reset(self, registry: object) -> None:
        pass

    def on_change(self, change: Change) -> None:
        self.changes.append(change)

    def notices(
        self, settings: NotifySettings | None = None, focused: frozenset[str] = frozenset()
    ) -> list[Notice]:
        out: list[Notice] = []
        for change in self.changes:
            out.extend(
                candidates(
                    change, settings or NotifySettings(), focused, self.world.t, self.live.registry
                )
            )
        self.changes.clear()
        return out


def limited(feed: Feed, agent_id: str, resets_at: float) -> None:
    """The agent's turn ends on the plan's 5-hour limit (what Claude Code's StopFailure means)."""
    feed.world.state(agent_id, AgentState.IDLE, "limited: 5-hour limit")
    hit = ev.LimitHit(
        at=feed.world.tick(),
        agent=agent_id,
        kind=LimitKind.FIVE_HOUR,
        resets_at=resets_at,
        ended=True,
    )
    feed.link.push(hit)


def test_entering_needs_input_notifies_with_name_request_and_open() -> None:
    feed = Feed()
    a = feed.world.agent("api-fixer", cwd="/src/shop-api")
    feed.changes.clear()
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    [notice] = feed.notices()
    since = clock_time(feed.world.t)
    assert (notice.kind, notice.title, notice.body, notice.action, notice.agent) == (
        Kind.NEEDS_INPUT,
        "api-fixer asks to use Bash",
        f"Bash (its input was not given)\nin shop-api · waiting since {since}",
        Action.OPEN,
        a,
    )
    assert notice.choices == (("allow", "Allow"), ("deny", "Deny"))


def test_only_the_transition_notifies_not_a_new_detail_in_the_same_state() -> None:
    feed = Feed()
    a = feed.world.agent("api-fixer")
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    feed.changes.clear()
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Edit")
    feed.world.activity(a, "Bash: ls")
    assert feed.notices() == []


def test_failed_and_lost_notify() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    b = feed.world.agent("two")
    feed.changes.clear()
    feed.world.state(a, AgentState.FAILED, "API error 529")
    feed.world.state(b, AgentState.LOST, "its process vanished")
    kinds = [(n.kind, n.agent) for n in feed.notices()]
    assert kinds == [(Kind.FAILED, a), (Kind.LOST, b)]


def test_the_persons_own_stop_never_notifies() -> None:
    feed = Feed()
    a = feed.world.agent("one", AgentState.NEEDS_INPUT, "permission for Bash")
    feed.changes.clear()
    feed.world.stop_by_person(a)
    # Even a failure reported while it stops is the person's doing: it is held.
    feed.world.state(a, AgentState.FAILED, "killed by SIGTERM")
    assert feed.notices() == []


def test_session_end_by_the_person_stopped_and_held_does_not_notify() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    feed.changes.clear()
    feed.link.push(ev.StopRequested(at=feed.world.tick(), agent=a, reason="you left the session"))
    feed.world.state(a, AgentState.STOPPED, "you left the session")
    assert feed.notices() == []


def test_interrupted_agents_not_resumed_notify_but_a_resume_does_not() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    b = feed.world.agent("two")
    feed.changes.clear()
    for agent in (a, b):
        feed.link.push(
            ev.InterruptionDetected(at=feed.world.tick(), agent=agent, cause="machine-restarted")
        )
    feed.link.push(
        ev.RecoveryDecided(
            at=feed.world.tick(),
            agent=a,
            outcome="stopped",
            rule=6,
            reason="resume_after_reboot is off",
            action="resume",
        )
    )
    feed.link.push(
        ev.RecoveryDecided(
            at=feed.world.tick(), agent=b, outcome="resume", rule=9, reason="it was working"
        )
    )
    [notice] = feed.notices()
    assert notice.kind is Kind.INTERRUPTED
    assert notice.agent == a
    assert "resume_after_reboot is off" in notice.body


def test_mission_awaiting_approval_notifies_with_review() -> None:
    feed = Feed()
    mission, _, _ = feed.world.mission_awaiting("Fix the login bug")
    notices = [n for n in feed.notices() if n.kind is Kind.MISSION]
    assert len(notices) == 1
    assert notices[0].action is Action.REVIEW
    assert notices[0].mission == mission
    assert notices[0].body == "Fix the login bug"


def test_each_kind_can_be_turned_off() -> None:
    for kind in Kind:
        feed = Feed()
        a = feed.world.agent("one")
        b = feed.world.agent("two")
        c = feed.world.agent("three")
        d = feed.world.agent("four")
        feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
        feed.world.state(b, AgentState.FAILED, "boom")
        feed.world.state(c, AgentState.LOST, "gone")
        feed.link.push(
            ev.RecoveryDecided(at=feed.world.tick(), agent=d, outcome="stopped", rule=5, reason="x")
        )
        e = feed.world.agent("five")
        feed.world.state(e, AgentState.DONE, "All 3 tests pass.")
        feed.world.mission_awaiting()
        limited(feed, feed.world.agent("six"), feed.world.t + 3600)
        settings = replace(NotifySettings(done=True), **{kind.value: False})
        kinds = {n.kind for n in feed.notices(settings)}
        assert kinds == set(Kind) - {kind}, kind


def test_paused_shows_nothing() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    assert feed.notices(NotifySettings(paused=True)) == []


def test_an_agent_open_in_front_of_the_person_is_not_notified() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    feed.changes.clear()
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    assert feed.notices(focused=frozenset({a})) == []


def test_facts_replayed_long_after_are_not_news() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    feed.changes.clear()
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    old = feed.changes[:]
    feed.changes.clear()
    assert [
        n
        for c in old
        for n in candidates(c, NotifySettings(), frozenset(), now=feed.world.t + 3600)
    ] == []


# --- the throttle ------------------------------------------------------------------------------


def _need(feed: Feed, name: str) -> Notice:
    a = feed.world.agent(name)
    feed.changes.clear()
    feed.world.state(a, AgentState.NEEDS_INPUT, f"permission for {name}")
    [notice] = feed.notices()
    return notice


def test_throttle_shows_one_notification_after_the_settle_delay() -> None:
    feed = Feed()
    notice = _need(feed, "one")
    throttle = Throttle()
    now = 100.0
    throttle.offer([notice], now)
    assert throttle.flush(now, feed.link.registry) == []
    assert throttle.next_due() == now + SETTLE
    assert throttle.flush(now + SETTLE, feed.link.registry) == [notice]
    assert throttle.next_due() is None


def test_a_burst_becomes_one_summary() -> None:
    feed = Feed()
    notices = [_need(feed, f"agent-{i}") for i in range(5)]
    throttle = Throttle()
    throttle.offer(notices, 100.0)
    [summary] = throttle.flush(100.0 + SETTLE, feed.link.registry)
    assert summary.kind is None
    assert summary.title == "5 agents need you"
    assert "agent-0" in summary.body
    assert set(summary.subjects) == {n.agent for n in notices}


def test_three_within_the_window_are_shown_and_the_rest_wait_for_one_summary() -> None:
    feed = Feed()
    notices = [_need(feed, f"agent-{i}") for i in range(5)]
    throttle = Throttle()
    t = 100.0
    shown = []
    for i, notice in enumerate(notices):
        throttle.offer([notice], t + i * 0.3)
        shown += throttle.flush(t + i * 0.3 + SETTLE, feed.link.registry)
    assert [n.agent for n in shown] == [n.agent for n in notices[:3]]
    due = throttle.next_due()
    assert due is not None
    assert due <= t + BURST_WINDOW + SETTLE
    [summary] = throttle.flush(due, feed.link.registry)
    assert summary.title == "2 agents need you"


def test_at_most_one_per_agent_per_ten_seconds_and_dropped_if_no_longer_true() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    first = feed.notices()[-1]
    throttle = Throttle()
    throttle.offer([first], 100.0)
    assert throttle.flush(100.0 + SETTLE, feed.link.registry) == [first]
    # It fails 2 s later: that waits until 10 s after the first...
    feed.world.state(a, AgentState.FAILED, "boom")
    [failed] = feed.notices()
    throttle.offer([failed], 102.0)
    assert throttle.flush(105.0, feed.link.registry) == []
    assert throttle.next_due() == 100.0 + SETTLE + PER_SUBJECT
    assert throttle.flush(100.0 + SETTLE + PER_SUBJECT, feed.link.registry) == [failed]
    # ...and one that is no longer true when its turn comes is dropped.
    feed.world.state(a, AgentState.NEEDS_INPUT, "permission for Edit")
    [again] = feed.notices()
    throttle.offer([again], 111.0)
    feed.world.state(a, AgentState.WORKING, "")
    assert throttle.flush(200.0, feed.link.registry) == []


def test_focus_at_release_time_drops_a_waiting_notification() -> None:
    feed = Feed()
    notice = _need(feed, "one")
    throttle = Throttle()
    throttle.offer([notice], 100.0)
    assert throttle.flush(101.0, feed.link.registry, frozenset({notice.agent or ""})) == []


def test_events_pushed_together_leave_together_even_when_offered_apart() -> None:
    feed = Feed()
    notices = [_need(feed, f"agent-{i}") for i in range(4)]
    throttle = Throttle()
    for i, notice in enumerate(notices):
        throttle.offer([notice], 100.0 + i * 0.004)  # a busy machine spreads one push
    due = throttle.next_due()
    assert due == 100.0 + SETTLE
    [summary] = throttle.flush(due, feed.link.registry)
    assert summary.title == "4 agents need you"


def test_a_new_request_right_after_an_answer_is_shown_at_once() -> None:
    feed = Feed()
    a = feed.world.agent("one")
    feed.world.ask(a, "Bash", {"command": "make build"})
    first = feed.notices()[-1]
    throttle = Throttle()
    throttle.offer([first], 100.0)
    assert throttle.flush(100.0 + SETTLE, feed.link.registry) == [first]
    feed.world.answered(a)  # allowed: it runs the command...
    feed.world.ask(a, "Bash", {"command": "make test"})  # ...and asks the next one at once
    [second] = feed.notices()
    assert second.body.startswith("Bash: make test")
    throttle.offer([second], 102.0)
    assert throttle.flush(102.0 + SETTLE, feed.link.registry) == [second]  # no 10 s wait


# --- limits (docs/limits.md) --------------------------------------------------------------


def limit_notices(feed: Feed) -> list[Notice]:
    out: list[Notice] = []
    for change in feed.changes:
        registry = feed.live.registry
        out.extend(candidates(change, NotifySettings(), frozenset(), feed.world.t, registry))
    feed.changes.clear()
    return out


def test_agents_stopped_by_the_limit_make_one_notice_naming_the_reset_not_a_failure() -> None:
    feed = Feed()
    agents = [feed.world.agent(f"a{n}") for n in range(3)]
    feed.changes.clear()
    reset = feed.world.t + 2 * 3600 + 13 * 60 + 30
    for agent_id in agents:
        limited(feed, agent_id, reset)
    notices = limit_notices(feed)
    # One per agent that joins the wait, each counting all of them, one subject: each newer
    # replaces the one before on screen (never thirty side by side).
    assert {n.kind for n in notices} == {Kind.LIMIT}
    assert {n.subject for n in notices} == {"limits"}
    last = notices[-1]
    assert last.title == "Usage limit reached"
    assert last.body == f"3 agents wait; resets {clock_time(reset)} (in 2 h 13 min)"
    assert not [n for n in notices if n.kind is Kind.FAILED]
    assert still_holds(last, feed.live.registry, frozenset())
    # The limit lifts: the agents work again, and the notice no longer holds (withdrawn).
    for agent_id in agents:
        feed.world.state(agent_id, AgentState.WORKING)
    assert not still_holds(last, feed.live.registry, frozenset())

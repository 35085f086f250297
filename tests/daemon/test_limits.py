"""The limits runner: the reset a screen names (local time), and the continue in a real daemon
with real hosts and the fake claude, on a fake clock."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.test_recovery_runner import agent, events_of, kill_all_hosts, spawn
from tests.fakes.clock import FakeClock
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core.model import VOLEE, Agent, LimitKind
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.agents.limits import (
    LOOK_EVERY,
    ContinueParams,
    local_clock,
    reset_time,
)
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.params import decode
from volee_desktop.harness import claude
from volee_desktop.paths import dirs

NOW = datetime(2026, 12, 1, 23, 25, 0).timestamp()  # local time


def at(*fields: int) -> float:
    return datetime(*fields).timestamp()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("clock", "expected"),
    [
        ("1:38am", at(2026, 12, 2, 1, 38)),  # after midnight: tomorrow
        ("11:40pm", at(2026, 12, 1, 23, 40)),  # later today
        ("4pm", at(2026, 12, 2, 16, 0)),
        ("12am", at(2026, 12, 2, 0, 0)),
        ("12:30pm", at(2026, 12, 2, 12, 30)),
        ("16:20", at(2026, 12, 2, 16, 20)),
        ("Dec 3, 4:20pm", at(2026, 12, 3, 16, 20)),
        ("Jan 2, 9am", at(2027, 1, 2, 9, 0)),
    ],
)
def test_the_reset_a_screen_names_is_its_next_local_time(clock: str, expected: float) -> None:
    assert reset_time(clock, NOW) == expected


def test_a_reset_of_this_very_minute_is_now_not_tomorrow() -> None:
    assert reset_time("11:25pm", NOW) == NOW


@pytest.mark.parametrize("clock", ["soon", "13pm", "25:00", "7:61", "Foo 3, 4pm", ""])
def test_what_reads_as_no_time_is_none(clock: str) -> None:
    assert reset_time(clock, NOW) is None


def test_clock_times_are_local_hours_and_minutes() -> None:
    assert local_clock(at(2026, 12, 2, 16, 20)) == "16:20"


# --- the continue, in a real daemon with real hosts and the fake claude, on a fake clock ---


FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=time.time())


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="vl", dir="/tmp"))
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(FAKE_CLAUDE))
    monkeypatch.setenv("FAKE_HARNESS_HOME", str(root / "fh"))
    (root / "p").mkdir()
    yield root / "p"
    kill_all_hosts()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def daemon(clock: FakeClock, project: Path) -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs(), clock=clock)
    yield d
    await d.close()


async def limited(d: Daemon, project: Path, clock: FakeClock, resets_in: float) -> Any:
    """An agent whose turn ended on the 5-hour limit (what Claude Code's StopFailure means:
    harness/claude.py's part is tested on the recorded payloads)."""
    a = await spawn(d, project, "hello")
    await until(lambda: agent(d, a.id).state is AgentState.DONE, what="its first turn")
    now = clock.now()
    await d.service.commit(
        [
            ev.StateChanged(at=now, agent=a.id, state=AgentState.IDLE, detail="limited"),
            ev.LimitHit(
                at=now, agent=a.id, kind=LimitKind.FIVE_HOUR, resets_at=now + resets_in, ended=True
            ),
        ]
    )
    return agent(d, a.id)


def continued(d: Daemon, agent_id: str) -> list[ev.LimitContinued]:
    return events_of(d, agent_id, ev.LimitContinued)


@pytest.mark.timeout(60)
async def test_after_the_reset_and_margin_each_waiting_agent_is_continued_once_staggered(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    first = await limited(daemon, project, clock, 600)
    second = await limited(daemon, project, clock, 600)
    reset = first.limit.resets_at
    assert second.limit.resets_at == reset
    assert clock.pending()[-1] == reset + 60  # one timer: the first due continue
    clock.advance(reset + 59 - clock.now())
    await asyncio.sleep(0.1)  # time for a wrong continue: none must come
    assert continued(daemon, first.id) == []
    clock.advance(1)
    await until(lambda: continued(daemon, first.id), what="the first continue")
    assert continued(daemon, second.id) == []  # five seconds later: staggered
    clock.advance(5)
    await until(lambda: continued(daemon, second.id), what="the second continue")
    for a in (first, second):
        await until(lambda a=a: agent(daemon, a.id).state is AgentState.DONE, what="its turn")
        [notice] = [
            m
            for m in daemon.service.registry.messages.values()
            if m.sender == VOLEE and a.id in m.recipients
        ]
        assert notice.body.startswith("[volee] your plan's usage limit was reached at ")
    clock.advance(3600)
    await asyncio.sleep(0.1)  # time for a wrong continue: none must come
    assert [len(continued(daemon, a.id)) for a in (first, second)] == [1, 1]


@pytest.mark.timeout(60)
async def test_one_the_person_stopped_is_not_continued_and_continue_now_is_theirs(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    stopped = await limited(daemon, project, clock, 600)
    waiting = await limited(daemon, project, clock, 600)
    await daemon.agents.stop(stopped, reason="test")
    await until(lambda: agent(daemon, stopped.id).state is AgentState.STOPPED, what="stopped")
    [view] = await daemon.limits.api_continue(None, decode(ContinueParams, {"agent": waiting.id}))  # type: ignore[arg-type]
    assert view["id"] == waiting.id
    [by_hand] = continued(daemon, waiting.id)
    assert by_hand.automatic is False
    clock.advance(3600)
    await asyncio.sleep(0.1)  # time for a wrong continue: none must come
    assert continued(daemon, stopped.id) == []
    assert len(continued(daemon, waiting.id)) == 1


@pytest.mark.timeout(60)
async def test_a_restarted_daemon_arms_the_continue_again(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    a = await limited(daemon, project, clock, 600)
    await daemon.close()
    again = await Daemon.start(dirs(), clock=clock)
    try:
        assert a.limit.resets_at + 60 in clock.pending()
        clock.advance(a.limit.resets_at + 60 - clock.now())
        await until(lambda: events_of(again, a.id, ev.LimitContinued), what="the continue")
    finally:
        await again.close()


@pytest.mark.timeout(60)
async def test_a_late_timer_still_continues_them_a_stagger_apart(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    first = await limited(daemon, project, clock, 600)
    second = await limited(daemon, project, clock, 600)
    clock.advance(3600)  # the machine slept, or the loop was busy: both are long due
    done = await until(
        lambda: continued(daemon, first.id) or continued(daemon, second.id), what="one continue"
    )
    await asyncio.sleep(0.2)  # time for a second one: it must not come
    both = continued(daemon, first.id) + continued(daemon, second.id)
    assert both == done  # only one of them: the other waits a stagger
    clock.advance(5)
    await until(
        lambda: len(continued(daemon, first.id) + continued(daemon, second.id)) == 2,
        what="the other continue",
    )


@pytest.mark.timeout(60)
async def test_a_turn_that_ended_before_its_retry_line_was_read_takes_what_the_line_says(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # A busy daemon read "✻ 5-hour limit reached · retrying … (1:38am)" only after the
    # StopFailure ("rate_limit", no reset) had ended the turn: it was "rate", never continued
    # at the reset (seen in a loaded full run of tests/e2e/test_limits_claude.py).
    a = await spawn(daemon, project, "hello")
    await until(lambda: agent(daemon, a.id).state is AgentState.DONE, what="its first turn")
    now = clock.now()
    await daemon.service.commit(
        [
            ev.StateChanged(at=now, agent=a.id, state=AgentState.IDLE, detail="limited"),
            ev.LimitHit(at=now, agent=a.id, kind=LimitKind.RATE, ended=True),
        ]
    )
    limits = daemon.limits
    # An overload read late changes nothing: only the plan's limit has a reset to wait for.
    await limits._ended_before_read(agent(daemon, a.id), LimitKind.OVERLOADED, None, now)
    assert agent(daemon, a.id).limit.kind is LimitKind.RATE
    await limits._ended_before_read(agent(daemon, a.id), LimitKind.FIVE_HOUR, now + 600, now)
    late = agent(daemon, a.id).limit
    assert (late.kind, late.resets_at, late.ended) == (LimitKind.FIVE_HOUR, now + 600, True)
    assert agent(daemon, a.id).state is AgentState.IDLE
    # A limit named but with no reset (no read caught its clock) takes the line's reset.
    await daemon.service.commit(
        [ev.LimitHit(at=now, agent=a.id, kind=LimitKind.SEVEN_DAY, ended=True)]
    )
    await limits._ended_before_read(agent(daemon, a.id), LimitKind.FIVE_HOUR, now + 700, now)
    assert agent(daemon, a.id).limit.kind is LimitKind.SEVEN_DAY  # another limit: not this one
    await limits._ended_before_read(agent(daemon, a.id), LimitKind.SEVEN_DAY, None, now)
    assert agent(daemon, a.id).limit.resets_at is None  # nothing new
    await limits._ended_before_read(agent(daemon, a.id), LimitKind.SEVEN_DAY, now + 800, now)
    assert agent(daemon, a.id).limit.resets_at == now + 800
    await daemon.service.commit(
        [ev.LimitHit(at=now, agent=a.id, kind=LimitKind.FIVE_HOUR, resets_at=now + 600, ended=True)]
    )
    # Once it has its reset, a later line does not move it.
    await limits._ended_before_read(agent(daemon, a.id), LimitKind.SEVEN_DAY, now + 9000, now)
    assert agent(daemon, a.id).limit.resets_at == now + 600
    assert clock.pending()[-1] == now + 600 + 60  # its continue is armed


@pytest.mark.timeout(60)
@pytest.mark.parametrize("before", [AgentState.IDLE, AgentState.DONE])
async def test_a_retry_line_drawn_before_the_daemon_took_the_prompts_hook_names_the_limit(
    daemon: Daemon, project: Path, clock: FakeClock, before: AgentState
) -> None:
    # A loaded machine: Claude Code drew "✻ 5-hour limit reached · retrying …" while the daemon
    # had not taken the turn's UserPromptSubmit yet (the agent idle after SessionStart, or done
    # after its last turn); the bare StopFailure ("rate_limit") then ended it as "rate", with
    # no reset (seen in tests/e2e/test_limits_claude.py on a loaded machine).
    a = await spawn(daemon, project, "hello")
    await until(lambda: agent(daemon, a.id).state is AgentState.DONE, what="its first turn")
    if before is not AgentState.DONE:
        await daemon.service.commit(
            [ev.StateChanged(at=clock.now(), agent=a.id, state=before, progress=False)]
        )
    line = "✻ 5-hour limit reached · retrying in 1s (1:38am) · attempt 2/4"
    daemon.limits.screens.output(a.id, f"\r\n{line}\r\n".encode())
    await until(lambda: agent(daemon, a.id).limit is not None, what="the retry read")
    retrying = agent(daemon, a.id)
    assert retrying.state is AgentState.WORKING
    assert retrying.detail.startswith("retrying: 5-hour limit, attempt 2/4"), retrying.detail
    # Then the turn ends on the limit: the hook's bare rate_limit takes the kind seen retrying.
    payload = {
        "hook_event_name": "StopFailure",
        "session_id": retrying.session,
        "error": "rate_limit",
        "last_assistant_message": "API Error: Request rejected (429) · Rate limited",
    }
    await daemon.service.commit(claude.hook_events(retrying, "StopFailure", payload, clock.now()))
    ended = agent(daemon, a.id)
    assert ended.state is AgentState.IDLE
    assert ended.limit is not None
    resets = reset_time("1:38am", clock.now())
    assert (ended.limit.kind, ended.limit.resets_at, ended.limit.ended) == (
        LimitKind.FIVE_HOUR,
        resets,
        True,
    )


async def in_a_second_turn(daemon: Daemon, project: Path, clock: FakeClock) -> Agent:
    """An agent past its first turn, working again (its screen free for a retry line)."""
    a = await spawn(daemon, project, "hello")
    await until(lambda: agent(daemon, a.id).state is AgentState.DONE, what="its first turn")
    await daemon.service.commit(
        [ev.StateChanged(at=clock.now(), agent=a.id, state=AgentState.WORKING, progress=False)]
    )
    return a


@pytest.mark.timeout(60)
async def test_a_retry_line_read_after_the_turn_ended_otherwise_changes_nothing(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # The line came while the turn ran; the Stop hook came before the look: the screen may
    # not have caught up with the end, the agent stays done.
    a = await in_a_second_turn(daemon, project, clock)
    daemon.limits._looked[a.id] = time.monotonic()  # the look waits a second
    waits = clock.serial
    line = "✻ 5-hour limit reached · retrying in 1s (1:38am) · attempt 2/4"
    daemon.limits.screens.output(a.id, f"\r\n{line}\r\n".encode())
    await until(lambda: clock.sleeping(waits), what="the look waiting")
    await daemon.service.commit(
        [ev.StateChanged(at=clock.now(), agent=a.id, state=AgentState.DONE, detail="done")]
    )
    clock.advance(2)
    await until(lambda: a.id not in daemon.limits._looking, what="the look")
    assert agent(daemon, a.id).state is AgentState.DONE
    assert agent(daemon, a.id).limit is None


async def ended_on_a_bare_rate_limit(daemon: Daemon, agent_id: str, clock: FakeClock) -> Any:
    """Claude Code's StopFailure for a 429 ("rate_limit", no reset), then the limit the
    daemon names from the output once it has a reset."""
    retrying = agent(daemon, agent_id)
    payload = {
        "hook_event_name": "StopFailure",
        "session_id": retrying.session,
        "error": "rate_limit",
        "last_assistant_message": "API Error: Request rejected (429) · Rate limited",
    }
    await daemon.service.commit(claude.hook_events(retrying, "StopFailure", payload, clock.now()))
    return await until(
        lambda: (
            (lim := agent(daemon, agent_id).limit) is not None and lim.resets_at is not None and lim
        ),
        what="the limit named from the output",
    )


async def ends_on_the_five_hour_limit(
    daemon: Daemon, agent_id: str, clock: FakeClock, resets: str
) -> None:
    """The bare StopFailure ends the turn on the 5-hour limit, resetting at ``resets``."""
    ended = await ended_on_a_bare_rate_limit(daemon, agent_id, clock)
    assert (ended.kind, ended.ended) == (LimitKind.FIVE_HOUR, True)
    assert ended.resets_at == reset_time(resets, clock.now())


@pytest.mark.timeout(60)
async def test_a_retry_line_redrawn_as_the_error_before_it_was_read_still_names_the_limit(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # Seen in full runs of tests/e2e/test_limits_claude.py: Claude Code drew its retry line,
    # then gave up and redrew the same rows as "API Error … Rate limited" before the daemon
    # read the rendered screen; the bare StopFailure ended the turn as "rate", no reset.
    a = await spawn(daemon, project, "hello")
    await until(lambda: agent(daemon, a.id).state is AgentState.DONE, what="its first turn")
    working = ev.StateChanged(at=clock.now(), agent=a.id, state=AgentState.WORKING)
    await daemon.service.commit([working])
    line = "✻ 5-hour limit reached · retrying in 1s (1:38am) · attempt 4/4"
    screens = daemon.limits.screens
    screens.output(a.id, f"\r\n\x1b[1m{line}\x1b[0m\r\n".encode())
    # Redrawn before any look at the screen: the line is gone from the rendered rows.
    screens.output(
        a.id, b"\x1b[2J\x1b[HAPI Error: Request rejected (429) \xc2\xb7 Rate limited\r\n"
    )
    assert line not in "\n".join((await screens.snapshot(a.id)).tail(40))  # type: ignore[union-attr]
    ended = await ended_on_a_bare_rate_limit(daemon, a.id, clock)
    resets = reset_time("1:38am", clock.now())
    assert (ended.kind, ended.resets_at, ended.ended) == (LimitKind.FIVE_HOUR, resets, True)
    assert agent(daemon, a.id).state is AgentState.IDLE


def recorded_output(name: str) -> list[bytes]:
    """The PTY reads of a recording in tests/harness/samples/limits (one per line, base64)."""
    path = Path(__file__).parent.parent / "harness" / "samples" / "limits" / name
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [base64.b64decode(line["data"]) for line in lines if "data" in line]


@pytest.mark.timeout(60)
async def test_a_retry_line_whose_first_read_failed_is_read_again_from_the_cells_redrawn(
    daemon: Daemon, project: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen in CI (tests/e2e/test_limits_claude.py): Claude Code 2.1.332 draws its retry line
    # whole once ("retrying" is in its output once), then redraws only the cells that change
    # ("in 2s (9:46pm) · attempt 2/4"). When the one read of the screen that "retrying"
    # started found nothing, no later output started another: the turn ended as a bare "rate"
    # limit with no reset, and the test waited for "five_hour".
    a = await in_a_second_turn(daemon, project, clock)
    limits = daemon.limits
    screens = limits.screens
    real_snapshot = screens.snapshot
    reads: list[str] = []

    async def snapshot(agent_id: str) -> Any:
        reads.append(agent_id)
        return None if len(reads) == 1 else await real_snapshot(agent_id)  # the host was busy

    monkeypatch.setattr(screens, "snapshot", snapshot)
    chunks = recorded_output("claude-2.1.332-five_hour-output.jsonl")
    first = next(i for i, data in enumerate(chunks) if b"retrying" in data)
    assert not any(b"retrying" in data for data in chunks[first + 1 :])  # drawn whole once
    for data in chunks[: first + 1]:
        screens.output(a.id, data)
    await until(lambda: reads, what="the first look")
    assert agent(daemon, a.id).limit is None
    screens.output(a.id, chunks[first + 1])  # "… · attempt 1/4": retrying…, in flight
    screens.output(a.id, chunks[first + 2])  # " in 2s (9:46pm) · attempt 2/4"

    def read_again() -> Any:
        clock.advance(LOOK_EVERY)  # a look waits a second after the last one
        return agent(daemon, a.id).limit

    seen = await until(read_again, what="the retry read again")
    assert seen.kind is LimitKind.FIVE_HOUR
    assert not seen.ended
    assert seen.resets_at == reset_time("9:46pm", clock.now())
    assert agent(daemon, a.id).detail.startswith("retrying: 5-hour limit, attempt"), agent(
        daemon, a.id
    ).detail


@pytest.mark.timeout(60)
@pytest.mark.parametrize("cut", ["in the word", "before the word"])
async def test_a_retry_line_cut_between_two_reads_of_the_pty_still_names_the_limit(
    daemon: Daemon, project: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    # Seen in a full run of tests/e2e/test_limits_claude.py: one agent of five ended "rate",
    # no reset. "retrying" is in Claude Code's output once a turn; a read of the PTY that cut
    # it in two ("retr" | "ying in 1s"), or that left the limit's name in the read before,
    # was never looked at, and no screen read could make up for it (here every one fails).
    a = await in_a_second_turn(daemon, project, clock)
    screens = daemon.limits.screens

    async def snapshot(agent_id: str) -> Any:
        return None  # a busy host: no screen read ever succeeds

    monkeypatch.setattr(screens, "snapshot", snapshot)
    chunks = recorded_output("claude-2.1.332-five_hour-output.jsonl")
    first = next(i for i, data in enumerate(chunks) if b"retrying" in data)
    line = chunks[first]
    at = line.index(b"retrying") + (4 if cut == "in the word" else -4)
    assert b"retrying" not in line[:at]
    if cut == "in the word":
        assert b"retrying" not in line[at:]
    else:  # the word whole in the second read, the limit's name in the first
        assert b"5-hour" in line[:at]
    for data in [*chunks[:first], line[:at], line[at:], *chunks[first + 1 : first + 5]]:
        screens.output(a.id, data)
    await ends_on_the_five_hour_limit(daemon, a.id, clock, "9:46pm")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("looked", [True, False], ids=["screen read between", "no read"])
async def test_a_retry_word_cut_by_a_cell_the_row_already_held_still_names_the_limit(
    daemon: Daemon, project: Path, clock: FakeClock, looked: bool
) -> None:
    # Seen in the 30-agent trial (bench/limits_trial.py), one real Claude Code of five: its
    # output never held "retrying" whole. Claude Code leaves a cell that already shows the
    # right letter (here the spinner's line had a "t" where "retrying" has its "t") and moves
    # past it (ESC [ n G), so nothing started a read of the screen; the turn ended on the bare
    # StopFailure as "rate", with no reset, and was continued at a guess.
    a = await in_a_second_turn(daemon, project, clock)
    screens = daemon.limits.screens
    line = "✻ 5-hour limit reached · retrying in 1s (9:46pm) · attempt 1/4"
    t = line.index("retrying") + 2
    screens.output(a.id, f"\x1b[20;1H\x1b[2K{' ' * t}t  (thinking)".encode())
    cut = f"\x1b[20;1H{line[:t]}\x1b[{t + 2}G{line[t + 1 :]}\x1b[K".encode()
    assert b"retrying" not in cut
    screens.output(a.id, cut)
    if looked:  # someone read the screen (a window): its rows were seen then
        assert line in screens.last_text(a.id)  # what the person saw: the whole line
    # else nothing read it: the turn's end feeds what is queued, and its rows are seen then
    screens.output(a.id, b"\x1b[20;1H\x1b[2K\xe2\x97\x8f API Error: Request rejected (429)")
    assert a.id not in daemon.limits._looking  # nothing was read while it retried
    await ends_on_the_five_hour_limit(daemon, a.id, clock, "9:46pm")


@pytest.mark.timeout(60)
async def test_a_look_that_finds_the_line_in_flight_takes_the_clock_its_output_said(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # The line drawn whole with its clock, then redrawn in flight ("retrying… · attempt
    # 1/4", no clock) before the look read the screen: the row names the limit without its
    # reset, and the text the output said has it.
    a = await in_a_second_turn(daemon, project, clock)
    screens = daemon.limits.screens
    line = "✻ 5-hour limit reached · retrying in 1s (9:46pm) · attempt 1/4"
    screens.output(a.id, f"\x1b[20;1H\x1b[2K{line}".encode())
    flight = "✻ 5-hour limit reached · retrying… · attempt 1/4"
    screens.output(a.id, f"\x1b[20;1H\x1b[2K{flight}".encode())
    seen = await until(lambda: agent(daemon, a.id).limit, what="the retry read")
    assert flight in screens.last_text(a.id)  # what the look read: no clock
    assert (seen.kind, seen.ended) == (LimitKind.FIVE_HOUR, False)
    assert seen.resets_at == reset_time("9:46pm", clock.now())


@pytest.mark.timeout(60)
async def test_a_limit_named_with_no_reset_takes_the_clock_a_retry_line_showed_at_its_end(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # The looks of the turn saw the 5-hour limit only in flight (no clock); the rows fed
    # later showed "(9:46pm)": the bare StopFailure ends it on that limit with that reset.
    a = await in_a_second_turn(daemon, project, clock)
    hit = ev.LimitHit(at=clock.now(), agent=a.id, kind=LimitKind.FIVE_HOUR, attempt=1, attempts=4)
    await daemon.service.commit([hit])
    daemon.limits._rows(a.id, ["✻ 5-hour limit reached · retrying in 2s (9:46pm) · attempt 2/4"])
    await ends_on_the_five_hour_limit(daemon, a.id, clock, "9:46pm")


@pytest.mark.timeout(60)
async def test_a_turn_that_ended_no_longer_has_its_output_read_for_a_retry(
    daemon: Daemon, project: Path, clock: FakeClock
) -> None:
    # A turn that retried (an overload) and then went on to its end: its later output is no
    # longer read as text or looked at on screen.
    a = await in_a_second_turn(daemon, project, clock)
    limits = daemon.limits
    limits.screens.output(a.id, "\r\n✻ API error · retrying in 1s · attempt 1/4\r\n".encode())
    assert a.id in limits._claude_tail
    await daemon.service.commit(
        [ev.StateChanged(at=clock.now(), agent=a.id, state=AgentState.DONE, detail="done")]
    )
    assert a.id not in limits._claude_tail

    def looked() -> bool:
        clock.advance(LOOK_EVERY)  # a look started by its output may wait its second
        return a.id not in limits._looking

    await until(looked, what="the look")
    limits.screens.output(a.id, b"\x1b[5;3Hsome answer")
    assert a.id not in limits._looking
    assert a.id not in limits._claude_tail

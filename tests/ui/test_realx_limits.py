"""One notification, not thirty, on a real notification server (docs/limits.md): dunst on a
private D-Bus under Xvfb. Five agents' turns end on the plan's limit at once; dunst shows ONE
notification naming how many wait and the reset time; it goes when the limit lifts."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.test_realx import ARTIFACTS, Driver
from volee_desktop.app.notify_policy import clock_time
from volee_desktop.core import events as ev
from volee_desktop.core.model import LimitKind
from volee_desktop.core.states import AgentState

from . import desktop as dt

pytestmark = [pytest.mark.realx, pytest.mark.slow]


@pytest.fixture(scope="module")
def desktop() -> Iterator[dt.Desktop]:
    absent = dt.missing()
    if absent:
        pytest.skip(f"real-X tests need {', '.join(absent)} (apt: xvfb trayer dunst ...)")
    d = dt.Desktop()
    try:
        yield d
    finally:
        d.close()


def displayed(desktop: dt.Desktop) -> int:
    return int(desktop.run("dunstctl", "count", "displayed").strip() or 0)


def test_five_limited_agents_make_one_notification_withdrawn_when_the_limit_lifts(
    desktop: dt.Desktop, volee_home: Path
) -> None:
    app = dt.app_proc(desktop, volee_home)
    desktop.run("dunstctl", "close-all")
    before = len(desktop.notifies())
    try:
        app.wait_line(r"connected to the volee daemon")
        drive = Driver(volee_home)
        w = drive.world
        agents = [w.agent(f"worker-{n}", AgentState.WORKING) for n in range(5)]
        other = w.agent("docs-writer", AgentState.WORKING)
        reset = w.t + 2 * 3600 + 13 * 60 + 30

        def limited(group: list[str]) -> None:
            for agent in group:
                w.state(agent, AgentState.IDLE, "limited: 5-hour limit")
                hit = ev.LimitHit(
                    at=w.tick(), agent=agent, kind=LimitKind.FIVE_HOUR, resets_at=reset, ended=True
                )
                w.link.push(hit)
            drive.send()

        # Three first, then two more a moment later: the newer notification replaces the first.
        limited(agents[:3])
        first = f"3 agents wait; resets {clock_time(reset)} (in 2 h 13 min)"
        app.wait_line("notification: " + re.escape(f"Usage limit reached — {first}"))
        limited(agents[3:])
        body = f"5 agents wait; resets {clock_time(reset)} (in 2 h 13 min)"
        app.wait_line("notification: " + re.escape(f"Usage limit reached — {body}"))
        dt.poll("one notification on screen", lambda: displayed(desktop) == 1)
        calls = desktop.notifies()[before:]
        assert calls, "no Notify call"
        assert calls[-1][2:4] == ["Usage limit reached", body], calls
        # Whatever was sent on the way (each newer replaces the one before), one is on screen.
        assert all(c[2] == "Usage limit reached" for c in calls), calls
        assert displayed(desktop) == 1
        desktop.screenshot(ARTIFACTS / "realx-limit-notification.png")

        # The limit lifts: volee continues them (their turns start again): it goes.
        for agent in agents:
            w.state(agent, AgentState.WORKING)
        w.state(other, AgentState.DONE, "finished")
        drive.send()
        dt.poll("the notification withdrawn", lambda: displayed(desktop) == 0, timeout=15)
        time.sleep(0.5)  # nothing comes back
        assert displayed(desktop) == 0
        assert not any("limit" in " ".join(c) for c in desktop.notifies()[before + len(calls) :])
    finally:
        app.kill()

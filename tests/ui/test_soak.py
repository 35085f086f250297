"""Soak: the qasync loop runs 100,000+ callbacks with the app live and None's refcount holds.

PySide6 6.12.0 on Python 3.11 dropped a reference to None on every void call
(desktop-testing.md): the app then aborts after minutes.  This guard fails on
such a build in seconds instead.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.core.states import AgentState

CALLBACKS = 100_000


@pytest.mark.slow
def test_none_refcount_does_not_drift_over_100k_callbacks(qapp: Any, volee_home: Path) -> None:
    import qasync

    from volee_desktop.app.controller import AppController, AppOptions

    from .conftest import RecordingSink, end_qloop_timers

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    # The fake daemon's own log would hold a reference to None per event (request=None).
    link = FakeDaemonLink(keep_log=False)
    world = World(link)
    ctl = AppController(
        AppOptions(
            config_path=volee_home / "config.toml",
            sinks=[RecordingSink()],
            use_tray=False,
            terminal=lambda _a: None,
        )
    )
    ids = [world.agent(f"agent-{i}", AgentState.WORKING, quiet=True) for i in range(10)]
    states = [AgentState.NEEDS_INPUT, AgentState.WORKING, AgentState.IDLE]

    async def soak() -> tuple[int, int, int]:
        await ctl.attach(link)
        ctl.panel.show()
        # Warm up caches (icons, fonts, type objects) before measuring.
        for i in range(2_000):
            await asyncio.sleep(0)
            if i % 100 == 0:
                world.state(ids[i % 10], states[(i // 100) % 3], "x")
        before = sys.getrefcount(None)
        for i in range(CALLBACKS):
            await asyncio.sleep(0)  # one qasync callback: startTimer + killTimer
            if i % 500 == 0:
                # Tray badge and rows repaint: more void calls into Qt.
                world.state(ids[i % 10], states[(i // 500) % 3], f"step {i}")
                ctl.tray.apply_now()
        after = sys.getrefcount(None)
        return before, after, i + 1

    try:
        with loop:
            before, after, ran = loop.run_until_complete(soak())
    finally:
        ctl.close()
        asyncio.set_event_loop(None)
        end_qloop_timers(loop)
    assert ran >= CALLBACKS
    # A leak of one reference per void call would be ~10^5; allow small noise.
    assert abs(after - before) < 100, (before, after)

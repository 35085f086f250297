"""The daemon's background tasks end at close, even one that let a cancel go (daemon/context.py)."""

from __future__ import annotations

import asyncio

import pytest

from volee_desktop.daemon import context
from volee_desktop.daemon.clock import LoopClock
from volee_desktop.daemon.context import Tasks


async def test_a_task_that_swallows_one_cancel_is_cancelled_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(context, "RECANCEL", 0.05)
    tasks = Tasks()
    cancels = 0

    async def stubborn() -> None:
        nonlocal cancels
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancels += 1
                if cancels >= 2:
                    raise

    task = tasks.spawn(stubborn(), "stubborn")
    await asyncio.sleep(0)
    await asyncio.wait_for(tasks.cancel_all(), 5)
    assert task.cancelled()
    assert cancels == 2


async def test_the_clock_wait_keeps_a_cancel_that_lands_as_its_event_is_set() -> None:
    """The race Python 3.11's ``wait_for`` loses: the event set and the task cancelled at once."""
    event = asyncio.Event()
    woke = 0

    async def loop_like_discovery() -> None:
        nonlocal woke
        while True:
            await LoopClock().wait(event, 3600)
            woke += 1
            event.clear()

    task = asyncio.ensure_future(loop_like_discovery())
    await asyncio.sleep(0.01)  # part of the race: the task is in its wait (nothing says so)
    event.set()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2)
    assert done
    assert task.cancelled()
    assert woke == 0


async def test_the_clock_wait_returns_on_the_event_or_the_timeout() -> None:
    event = asyncio.Event()
    await LoopClock().wait(event, 0.01)  # the timeout: returns, no error
    event.set()
    await asyncio.wait_for(LoopClock().wait(event, 3600), 1)

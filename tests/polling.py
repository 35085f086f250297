"""Waiting in tests for something another process (or task) does: poll, never a bare sleep.

``wait_until`` blocks (for tests without a loop); ``until`` awaits, so the loop the condition
depends on keeps running. Both fail the test saying what they waited for.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

import pytest

T = TypeVar("T")

#: How often a condition is looked at again.
EVERY = 0.02


def wait_until(check: Callable[[], T], timeout: float = 15.0, what: str = "the condition") -> T:
    """Poll ``check`` until it returns something truthy and return that; fail the test after
    ``timeout`` seconds, naming ``what`` it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


async def until(
    check: Callable[[], T | Awaitable[T]],
    *,
    what: str,
    timeout: float = 15.0,
    every: float = EVERY,
) -> T:
    """Await ``check()`` (a plain or an async function) until it gives something truthy and
    return that; fail the test after ``timeout`` seconds, naming ``what`` it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return cast(T, value)
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(every)

"""Waiting in tests for something another process does: poll, never a bare sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


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

"""The waits of the tests (tests/polling.py) give what they waited for, or fail saying what."""

from __future__ import annotations

import asyncio

import pytest

from tests.polling import until


async def test_until_gives_the_first_truthy_value_of_a_plain_or_an_async_check() -> None:
    seen: list[int] = []

    def plain() -> list[int]:
        seen.append(len(seen))
        return seen if len(seen) >= 3 else []

    async def awaited() -> str | None:
        await asyncio.sleep(0)
        return "ready" if len(seen) >= 3 else None

    assert await until(plain, what="three looks", every=0) == [0, 1, 2]
    assert await until(awaited, what="ready") == "ready"


async def test_until_fails_the_test_naming_what_it_waited_for() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"after 0.05 s waiting for the moon"):
        await until(lambda: False, what="the moon", timeout=0.05)

"""A daemon whose close hangs says in its log what it waits on (daemon/main.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from volee_desktop.daemon import main
from volee_desktop.daemon.main import Daemon
from volee_desktop.paths import dirs


async def test_a_slow_close_step_names_the_step_and_where_it_waits(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(main, "SLOW_CLOSE", 0.05)
    d = await Daemon.start(dirs(), serve=False)
    released = asyncio.Event()

    async def a_stuck_hook() -> None:
        await released.wait()

    d.closing.add(a_stuck_hook)
    asyncio.get_running_loop().call_later(0.5, released.set)
    with caplog.at_level("WARNING", logger="volee_desktop.daemon.main"):
        await d.close()
    (said,) = [r.getMessage() for r in caplog.records if "closing:" in r.getMessage()]
    assert said.startswith("closing: the runners' close hooks takes more than 0 s; this step at ")
    assert "a_stuck_hook" in said
    assert released.is_set()  # it waited for the step to end

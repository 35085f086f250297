"""The ``machines`` push carries what changed of each machine since that feed's last push,
never the whole list again (daemon/machines/feed.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.daemon.test_machines import Pair, pair, synced
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.store.codec import decode_registry

from .helpers import registered

__all__ = ["pair"]


def agents_of(entry: dict[str, Any]) -> set[str]:
    return set(decode_registry(entry["registry"].encode()).agents)


async def test_a_change_there_pushes_that_agent_only(pair: Pair) -> None:
    builder, asker = registered("builder"), registered("asker")
    await pair.remote.service.commit([builder, asker])
    await synced(pair)
    app = await AsyncClient.connect(pair.local.dirs.socket)
    pushes: list[dict[str, Any]] = []
    app.on_push("machines", pushes.append)
    try:
        await app.call("subscribe", {"interactive": False})
        await until(lambda: len(pushes) == 1, what="the first push", timeout=10)
        [first] = pushes[0]["machines"]
        assert first["full"] is True
        assert agents_of(first) == {builder.agent, asker.agent}  # a feed starts whole
        await pair.remote.service.commit(
            [ev.StateChanged(at=3.0, agent=asker.agent, state=AgentState.NEEDS_INPUT)]
        )
        await until(lambda: len(pushes) == 2, what="the change, pushed", timeout=10)
        [changed] = pushes[1]["machines"]
        assert changed["full"] is False
        assert agents_of(changed) == {asker.agent}  # not builder again
        # Nothing else changed there: nothing more is pushed (a round trip to be sure).
        await app.call("daemon.status", {})
        await asyncio.sleep(0)
        assert len(pushes) == 2
        await pair.remote.service.commit([ev.AgentForgotten(at=4.0, agent=builder.agent)])
        await until(lambda: len(pushes) == 3, what="the forgotten one, pushed", timeout=10)
        [gone] = pushes[2]["machines"]
        assert gone["gone"] == {"agents": [builder.agent]}
        assert agents_of(gone) == set()
    finally:
        await app.close()

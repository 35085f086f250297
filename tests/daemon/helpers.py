"""Shared builders for daemon tests: events with valid ids, a running in-process daemon."""

from __future__ import annotations

import itertools
import os

from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT, new_id
from volee_desktop.core.model import Harness, LaunchSettings
from volee_desktop.daemon.main import Daemon

_counter = itertools.count(1)


def agent_id() -> str:
    return new_id(AGENT, 1_700_000_000_000 + next(_counter), os.urandom(10))


def registered(name: str = "a1", at: float = 1.0, agent: str | None = None) -> ev.AgentRegistered:
    return ev.AgentRegistered(
        at=at,
        agent=agent or agent_id(),
        name=name,
        harness=Harness.CLAUDE,
        launch=LaunchSettings(harness=Harness.CLAUDE, cwd="/tmp"),
        cwd="/tmp",
    )


async def close_stopping_agents(d: Daemon) -> None:
    """Stop every live agent's host (they are real processes), then close the daemon."""
    for agent in list(d.service.registry.agents.values()):
        if agent.state.live:
            try:
                await d.agents.stop(agent, reason="test over")
            except Exception:
                pass
    await d.close()

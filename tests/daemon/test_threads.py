"""One direct thread per set of parties, whoever posts: the agents runner (``agents.send``,
volee's notices) and ``messages.post`` find and open it with the same ``direct_thread``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.daemon.helpers import registered
from volee_desktop.core.model import HUMAN, VOLEE, MessageKind, ThreadKind
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.threads import direct_thread
from volee_desktop.paths import dirs


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs())
    yield d
    await d.close()


async def test_a_direct_thread_is_opened_once_with_the_parties_as_given(daemon: Daemon) -> None:
    agent = registered("a1")
    await daemon.service.commit([agent])
    thread, opening = direct_thread(daemon.service.current(), (HUMAN, agent.agent), 5.0)
    (opened,) = opening
    assert opened.parties == (HUMAN, agent.agent)
    assert opened.kind is ThreadKind.DIRECT
    assert opened.at == 5.0
    await daemon.service.commit(opening)
    # Found again in any order, nothing more to open.
    assert direct_thread(daemon.service.current(), (agent.agent, HUMAN), 6.0) == (thread, [])
    # Other parties: another thread.
    other, more = direct_thread(daemon.service.current(), (VOLEE, agent.agent), 6.0)
    assert other != thread
    assert len(more) == 1


async def test_the_runner_posts_into_the_thread_messages_post_would_use(daemon: Daemon) -> None:
    agent = registered("a1")
    await daemon.service.commit([agent])
    first = await daemon.agents.post(daemon.service.current().agents[agent.agent], HUMAN, "one")
    again = await daemon.agents.post(
        daemon.service.current().agents[agent.agent], HUMAN, "two", MessageKind.NOTICE
    )
    registry = daemon.service.current()
    thread = registry.messages[first].thread
    assert registry.messages[again].thread == thread
    assert [t.id for t in registry.threads.values() if t.kind is ThreadKind.DIRECT] == [thread]
    # messages.post looks the thread up by the parties, sorted: the same one.
    assert direct_thread(registry, tuple(sorted((HUMAN, agent.agent))), 9.0) == (thread, [])

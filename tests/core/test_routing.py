"""Routing (Registry.check_route): who may write to whom, and message-posted enforcing it."""

from __future__ import annotations

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, VOLEE
from volee_desktop.core.registry import Registry

from .support import (
    A1,
    A2,
    A3,
    A4,
    M1,
    M2,
    T0,
    given,
    message_id,
    mission,
    posted,
    registered,
    when,
)
from .support import thread as thread_opened


def _strangers() -> Registry:
    return given(registered(A1, "alpha"), registered(A2, "beta"))


@pytest.mark.parametrize("person", [HUMAN, VOLEE])
def test_people_and_volee_write_to_anyone(person: str) -> None:
    registry = _strangers()
    for recipient in (A1, A2, HUMAN, VOLEE):
        assert registry.check_route(person, recipient) is None


@pytest.mark.parametrize("person", [HUMAN, VOLEE])
def test_agents_write_to_people(person: str) -> None:
    assert _strangers().check_route(A1, person) is None


def test_members_of_the_same_mission_write_to_each_other() -> None:
    registry = given(mission(M1), registered(A1, mission=M1), registered(A2, mission=M1))
    assert registry.check_route(A1, A2) is None
    assert registry.check_route(A2, A1) is None


def test_members_of_different_missions_do_not() -> None:
    registry = given(
        mission(M1), mission(M2), registered(A1, mission=M1), registered(A2, mission=M2)
    )
    assert registry.check_route(A1, A2) is not None


def test_an_agent_writes_to_its_parent_and_its_children() -> None:
    registry = given(registered(A1), registered(A2, parent=A1))
    assert registry.check_route(A2, A1) is None
    assert registry.check_route(A1, A2) is None


def test_an_agent_writes_to_its_missions_coordinator() -> None:
    # The coordinator here is not a member, so only the coordinator rule lets it through.
    registry = given(
        registered(A1, "coord"),
        mission(M1),
        ev.MissionUpdated(at=T0, mission=M1, coordinator=A1),
        registered(A2, "worker", mission=M1),
    )
    assert registry.check_route(A2, A1) is None


def test_an_agent_writes_to_the_agent_that_requested_its_mission() -> None:
    registry = given(
        registered(A1, "requester"),
        mission(M1, requested_by=A1),
        registered(A2, "worker", mission=M1),
    )
    assert registry.check_route(A2, A1) is None


def test_any_other_pair_of_agents_is_refused_with_a_reason() -> None:
    registry = given(
        registered(A1, "alpha"),
        registered(A2, "beta", parent=A1),
        registered(A3, "gamma", parent=A1),  # siblings are not parent and child
        mission(M1),
        registered(A4, "delta", mission=M1),
    )
    for sender, recipient in [(A2, A3), (A3, A2), (A4, A1), (A1, A4)]:
        reason = registry.check_route(sender, recipient)
        assert reason is not None
        assert registry.agents[sender].name in reason
        assert registry.agents[recipient].name in reason


def test_unknown_parties_are_refused() -> None:
    registry = _strangers()
    assert "unknown sender" in (registry.check_route("ag_nope", A1) or "")
    assert "unknown recipient" in (registry.check_route(A1, "ag_nope") or "")


def test_message_posted_validates_routing_for_every_recipient() -> None:
    registry = given(
        registered(A1, "alpha"),
        registered(A2, "beta", parent=A1),
        registered(A3, "gamma"),
        thread_opened(),
    )
    # Human and child are fine; gamma is not: the whole message is refused.
    reason = when(registry, posted(message_id(1), A1, HUMAN, A2, A3))
    assert reason is not None
    assert "gamma" in reason
    assert registry.messages == {}
    assert when(registry, posted(message_id(1), A1, HUMAN, A2)) is None
    assert set(registry.messages[message_id(1)].receipts) == {HUMAN, A2}


def test_message_posted_by_or_to_a_forgotten_agent_is_refused() -> None:
    registry = given(
        registered(A1, "alpha"),
        registered(A2, "beta", parent=A1),
        thread_opened(),
        ev.AgentForgotten(at=T0, agent=A2),
    )
    for sender, recipient in [(A1, A2), (A2, A1)]:
        reason = when(registry, posted(message_id(1), sender, recipient))
        assert reason is not None
        assert "was forgotten" in reason

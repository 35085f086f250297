"""Membership (seed 002): only an invited agent joins a mission, one mission at a time.

The person or the mission's coordinator invites (mission-invited); the agent itself then
joins (membership-changed, through volee's MCP server: the daemon allows it only from the
agent's own connection).  A coordinator never joins another mission.
"""

from __future__ import annotations

from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, Role

from .support import A1, A2, A3, M1, M2, T0, accepted, given, mission, registered, when


def _two_missions() -> list[ev.Event]:
    return [
        mission(M1),
        mission(M2),
        registered(A1, role=Role.COORDINATOR, mission=M1),
        ev.MissionUpdated(at=T0, mission=M1, coordinator=A1),
        registered(A2),
        registered(A3),
    ]


def test_an_agent_that_was_not_invited_cannot_join() -> None:
    registry = given(*_two_missions())
    reason = when(registry, ev.MembershipChanged(at=T0, agent=A2, mission=M1))
    assert reason is not None
    assert "was not invited" in reason
    assert registry.agents[A2].mission is None


def test_the_coordinator_or_the_person_invites_and_the_agent_joins() -> None:
    registry = given(*_two_missions())
    accepted(registry, ev.MissionInvited(at=T0, agent=A2, mission=M1, by=A1))
    accepted(registry, ev.MissionInvited(at=T0, agent=A3, mission=M1, by=HUMAN))
    assert registry.missions[M1].invited == (A2, A3)
    accepted(registry, ev.MembershipChanged(at=T0 + 1, agent=A2, mission=M1))
    assert registry.agents[A2].mission == M1
    # Leaving and joining again on the same invitation.
    accepted(registry, ev.MembershipChanged(at=T0 + 2, agent=A2, mission=M1, joined=False))
    assert registry.agents[A2].mission is None
    accepted(registry, ev.MembershipChanged(at=T0 + 3, agent=A2, mission=M1))


def test_only_the_person_or_that_missions_coordinator_invites() -> None:
    registry = given(*_two_missions())
    for by in (A3, "volee"):
        reason = when(registry, ev.MissionInvited(at=T0, agent=A2, mission=M1, by=by))
        assert reason is not None
        assert "only the person or the coordinator" in reason
    assert registry.missions[M1].invited == ()


def test_an_agent_in_a_mission_joins_no_second_one() -> None:
    registry = given(
        *_two_missions(),
        ev.MissionInvited(at=T0, agent=A2, mission=M1),
        ev.MissionInvited(at=T0, agent=A2, mission=M2),
        ev.MembershipChanged(at=T0, agent=A2, mission=M1),
    )
    reason = when(registry, ev.MembershipChanged(at=T0 + 1, agent=A2, mission=M2))
    assert reason is not None
    assert "already in mission" in reason
    assert registry.agents[A2].mission == M1
    reason = when(registry, ev.MissionInvited(at=T0, agent=A2, mission=M2))
    assert reason is not None
    assert "already in mission" in reason


def test_a_worker_spawned_into_a_mission_joins_no_other() -> None:
    registry = given(*_two_missions(), registered("ag_01HF7YAT010000000000000009", mission=M2))
    worker = "ag_01HF7YAT010000000000000009"
    reason = when(registry, ev.MissionInvited(at=T0, agent=worker, mission=M1))
    assert reason is not None
    assert "already in mission" in reason


def test_a_coordinator_joins_no_other_mission() -> None:
    registry = given(*_two_missions())
    reason = when(registry, ev.MissionInvited(at=T0, agent=A1, mission=M2))
    assert reason is not None
    assert "coordinates mission" in reason
    # Invited before it became another mission's coordinator: it still cannot join.
    registry = given(
        mission(M1),
        mission(M2),
        registered(A1),
        ev.MissionInvited(at=T0, agent=A1, mission=M2),
        ev.MissionUpdated(at=T0, mission=M1, coordinator=A1),
    )
    reason = when(registry, ev.MembershipChanged(at=T0, agent=A1, mission=M2))
    assert reason is not None
    assert "coordinates mission" in reason


def test_leaving_a_mission_one_is_not_in_is_refused() -> None:
    registry = given(*_two_missions(), ev.MissionInvited(at=T0, agent=A2, mission=M1))
    reason = when(registry, ev.MembershipChanged(at=T0, agent=A2, mission=M1, joined=False))
    assert reason is not None
    assert "is not in mission" in reason


def test_a_refused_request_is_kept_and_changes_nothing() -> None:
    registry = given(*_two_missions())
    before = registry.agents[A2]
    accepted(
        registry,
        ev.RequestRefused(at=T0, agent=A2, method="missions.answer", reason="tried to answer"),
    )
    assert registry.agents[A2] == before

"""Holds: a person's stop (lifted by the person's next message) and a mission's end (for good)."""

from __future__ import annotations

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.fold import HELD_BY_MISSION, HELD_BY_STOP
from volee_desktop.core.model import HUMAN, VOLEE, MissionStatus

from .support import (
    A1,
    A2,
    A3,
    M1,
    T0,
    accepted,
    given,
    message_id,
    mission,
    posted,
    registered,
    thread,
    when,
)


def _restart(agent: str) -> ev.RestartScheduled:
    return ev.RestartScheduled(
        at=T0, agent=agent, due_at=T0 + 5, attempt=1, budget=3, reason="killed by SIGKILL"
    )


# --- stop-requested ------------------------------------------------------------------------


def test_stop_requested_holds() -> None:
    registry = given(registered(A1))
    accepted(registry, ev.StopRequested(at=T0 + 1, agent=A1))
    assert registry.agents[A1].held == HELD_BY_STOP
    assert not registry.agents[A1].held_for_good


def test_stop_requested_with_a_reason_holds_with_it() -> None:
    registry = given(registered(A1))
    accepted(registry, ev.StopRequested(at=T0, agent=A1, reason="left the harness"))
    assert registry.agents[A1].held == "left the harness"


def test_a_later_message_from_the_human_lifts_a_stop_hold() -> None:
    registry = given(registered(A1), registered(A2), thread(), ev.StopRequested(at=T0, agent=A1))
    accepted(registry, posted(message_id(1), HUMAN, A2, at=T0 + 1))
    assert registry.agents[A1].held == HELD_BY_STOP  # written to someone else
    accepted(registry, posted(message_id(2), HUMAN, A1, at=T0 + 2))
    assert registry.agents[A1].held is None


def test_a_message_from_volee_does_not_lift_a_stop_hold() -> None:
    registry = given(registered(A1), thread(), ev.StopRequested(at=T0, agent=A1))
    accepted(registry, posted(message_id(1), VOLEE, A1, at=T0 + 1, body="[volee] continue"))
    assert registry.agents[A1].held == HELD_BY_STOP


def test_a_message_from_another_agent_does_not_lift_a_stop_hold() -> None:
    registry = given(
        registered(A1), registered(A2, parent=A1), thread(), ev.StopRequested(at=T0, agent=A1)
    )
    accepted(registry, posted(message_id(1), A2, A1, at=T0 + 1))
    assert registry.agents[A1].held == HELD_BY_STOP


def test_stop_cancels_a_pending_restart() -> None:
    registry = given(registered(A1), _restart(A1))
    assert registry.agents[A1].restart is not None
    accepted(registry, ev.StopRequested(at=T0 + 1, agent=A1))
    assert registry.agents[A1].restart is None


# --- a mission's end -----------------------------------------------------------------------


@pytest.mark.parametrize("end", [MissionStatus.CLOSED, MissionStatus.CANCELLED])
def test_a_missions_end_holds_its_agents_for_good(end: MissionStatus) -> None:
    registry = given(
        mission(M1),
        registered(A1, mission=M1),
        registered(A2, mission=M1),
        registered(A3),
        _restart(A2),
    )
    accepted(registry, ev.MissionUpdated(at=T0 + 1, mission=M1, status=end))
    for agent_id in (A1, A2):
        agent = registry.agents[agent_id]
        assert agent.held == HELD_BY_MISSION
        assert agent.held_for_good
        assert agent.restart is None
    assert registry.agents[A3].held is None  # not of the mission


def test_a_human_message_does_not_lift_a_missions_end() -> None:
    registry = given(
        mission(M1),
        registered(A1, mission=M1),
        thread(),
        ev.MissionUpdated(at=T0, mission=M1, status=MissionStatus.CLOSED),
    )
    accepted(registry, posted(message_id(1), HUMAN, A1, at=T0 + 1))
    assert registry.agents[A1].held == HELD_BY_MISSION
    assert registry.agents[A1].held_for_good


def test_a_stop_after_a_missions_end_keeps_the_hold_for_good() -> None:
    registry = given(
        mission(M1),
        registered(A1, mission=M1),
        ev.MissionUpdated(at=T0, mission=M1, status=MissionStatus.CANCELLED),
    )
    accepted(registry, ev.StopRequested(at=T0 + 1, agent=A1))
    assert registry.agents[A1].held == HELD_BY_MISSION
    assert registry.agents[A1].held_for_good


@pytest.mark.parametrize("end", [MissionStatus.CLOSED, MissionStatus.CANCELLED])
@pytest.mark.parametrize("other", list(MissionStatus))
def test_a_mission_that_is_over_cannot_change_status_again(
    end: MissionStatus, other: MissionStatus
) -> None:
    registry = given(mission(M1), ev.MissionUpdated(at=T0, mission=M1, status=end))
    reason = when(registry, ev.MissionUpdated(at=T0 + 1, mission=M1, status=other))
    if other is end:
        assert reason is None  # saying it again changes nothing
    else:
        assert reason is not None
        assert "is over" in reason
    assert registry.missions[M1].status is end


def test_membership_changed_joining_an_ended_mission_is_refused() -> None:
    registry = given(
        mission(M1),
        registered(A1, launched_by_volee=False),
        ev.MissionUpdated(at=T0, mission=M1, status=MissionStatus.CLOSED),
    )
    reason = when(registry, ev.MembershipChanged(at=T0 + 1, agent=A1, mission=M1))
    assert reason is not None
    assert "is over" in reason
    assert registry.agents[A1].mission is None


def test_agent_registered_in_an_ended_mission_is_refused() -> None:
    # Else it would be an agent of an ended mission that is not held.
    registry = given(
        mission(M1), ev.MissionUpdated(at=T0, mission=M1, status=MissionStatus.CANCELLED)
    )
    reason = when(registry, registered(A1, mission=M1))
    assert reason is not None
    assert "is over" in reason


def test_membership_changed_join_and_leave() -> None:
    registry = given(
        mission(M1),
        registered(A1, launched_by_volee=False),
        ev.MissionInvited(at=T0, agent=A1, mission=M1),
    )
    accepted(registry, ev.MembershipChanged(at=T0, agent=A1, mission=M1))
    assert registry.agents[A1].mission == M1
    accepted(registry, ev.MembershipChanged(at=T0 + 1, agent=A1, mission=M1, joined=False))
    assert registry.agents[A1].mission is None
    assert when(registry, ev.MembershipChanged(at=T0, agent=A1, mission="ms_nope")) is not None

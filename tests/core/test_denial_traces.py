"""What a denial leaves in the registry: only what a snapshot holds, and nothing once over."""

from __future__ import annotations

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import VOLEE, MessageKind
from volee_desktop.core.registry import Registry
from volee_desktop.core.requests import permission_request
from volee_desktop.core.states import AgentState
from volee_desktop.store.codec import decode_registry, encode_registry

from .support import A1, T0, accepted, message_id, posted, registered, state, thread

BASH = permission_request(A1, T0 + 1, "Bash", {"command": "rm -rf build"})
NOTICE = message_id(1)


def answered_then_told(answer: str) -> list[ev.Event]:
    """A request answered, volee's word after it, the turn that word starts, the next turn."""
    return [
        registered(A1),
        thread(),
        ev.StateChanged(
            at=T0 + 1, agent=A1, state=AgentState.NEEDS_INPUT, detail="x", request=BASH
        ),
        ev.RequestAnswered(at=T0 + 2, agent=A1, request=BASH.id, answer=answer),
        state(A1, AgentState.IDLE, at=T0 + 3),
        posted(NOTICE, VOLEE, A1, at=T0 + 4, kind=MessageKind.NOTICE),
        ev.MessageDelivered(at=T0 + 4, message=NOTICE, recipient=A1),
        state(A1, AgentState.WORKING, at=T0 + 5),  # the turn volee's word started
        state(A1, AgentState.DONE, at=T0 + 6),
        state(A1, AgentState.WORKING, at=T0 + 7),  # the person's next prompt: a new turn
    ]


@pytest.mark.parametrize("answer", ["deny", "allow"])
def test_every_step_of_an_answered_request_comes_back_from_a_snapshot(answer: str) -> None:
    # volee starts again from its last snapshot: a registry it cannot decode is lost.
    registry = Registry()
    for event in answered_then_told(answer):
        accepted(registry, event)
        assert decode_registry(encode_registry(registry)) == registry, event.TYPE


def test_a_denial_once_over_leaves_the_agent_as_an_allowed_request_would() -> None:
    after: dict[str, object] = {}
    for answer in ("deny", "allow"):
        registry = Registry()
        for event in answered_then_told(answer):
            accepted(registry, event)
        after[answer] = registry.agents[A1]
    assert after["deny"] == after["allow"]

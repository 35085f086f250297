"""Closed sets of stored fields: read back as their StrEnums, written as the same strings."""

from __future__ import annotations

import json

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Delivery, Interruption, PullRequest, PullState
from volee_desktop.store.codec import CodecError, decode_event, encode_event


@pytest.mark.parametrize("cause", ["machine-restarted", "host-stopped", "crashed"])
def test_an_interruption_cause_reads_back_as_its_enum(cause: str) -> None:
    payload = json.dumps({"at": 1.0, "agent": "ag_1", "cause": cause}).encode()
    event = decode_event("interruption-detected", ev.InterruptionDetected.VERSION, payload)
    assert isinstance(event, ev.InterruptionDetected)
    assert event.cause is Interruption(cause)
    assert json.loads(encode_event(event)[2])["cause"] == cause


def test_a_cause_volee_never_wrote_is_refused() -> None:
    payload = b'{"at": 1.0, "agent": "ag_1", "cause": "gremlins"}'
    with pytest.raises(CodecError, match="cause"):
        decode_event("interruption-detected", ev.InterruptionDetected.VERSION, payload)


@pytest.mark.parametrize("state", ["open", "merged", "closed"])
def test_a_pull_request_state_reads_back_as_its_enum(state: str) -> None:
    delivery = Delivery(pull_request=PullRequest(number=4, state=PullState(state), head="a"))
    written = encode_event(ev.DeliveryUpdated(at=1.0, agent="ag_1", delivery=delivery))
    assert json.loads(written[2])["delivery"]["pull_request"]["state"] == state
    event = decode_event(written[0], written[1], written[2])
    assert isinstance(event, ev.DeliveryUpdated)
    assert event.delivery.pull_request is not None
    assert event.delivery.pull_request.state is PullState(state)

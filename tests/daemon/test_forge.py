"""A GitHub pull request as volee's: merged is a state of its own."""

from __future__ import annotations

import pytest

from volee_desktop.core.model import PullState
from volee_desktop.daemon.forge import to_pull_request


@pytest.mark.parametrize(
    ("item", "state"),
    [
        ({"state": "open"}, PullState.OPEN),
        ({"state": "closed"}, PullState.CLOSED),
        ({"state": "closed", "merged_at": "2026-12-01T10:00:00Z"}, PullState.MERGED),
        ({}, PullState.OPEN),
    ],
)
def test_githubs_pull_request_state_becomes_one_of_volees(
    item: dict[str, str], state: PullState
) -> None:
    assert to_pull_request({"number": 3, **item}).state is state

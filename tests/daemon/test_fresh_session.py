"""What a new session replacing one that saved nothing is told (recovery.md, row 9)."""

from __future__ import annotations

import pytest

from volee_desktop.core.model import Agent, Harness, LaunchSettings
from volee_desktop.daemon.agents.sessions import (
    FRESH_SESSION_NOTICE,
    TASK_AGAIN,
    fresh_notice,
    fresh_prompt,
    lost_task,
)

TASK = "fix the flaky test"


def agent(*, by_volee: bool = True, activity_at: float | None = None) -> Agent:
    settings = LaunchSettings(harness=Harness.CLAUDE, cwd="/tmp", prompt=TASK)
    return Agent(
        id="ag_1",
        name="a",
        harness=Harness.CLAUDE,
        launched_by_volee=by_volee,
        launch=settings if by_volee else None,
        activity_at=activity_at,
    )


def test_a_task_none_of_which_ran_is_given_again() -> None:
    a = agent()
    assert a.launch is not None
    assert lost_task(a, a.launch) == TASK


def test_once_a_tool_started_the_task_is_never_given_again() -> None:
    a = agent(activity_at=12.0)
    assert a.launch is not None
    assert lost_task(a, a.launch) is None


def test_a_session_volee_did_not_launch_has_no_task_of_volee_to_give() -> None:
    a = agent(by_volee=False)
    assert lost_task(a, LaunchSettings(harness=Harness.CLAUDE, cwd="/tmp", prompt=TASK)) is None


def test_an_agent_launched_without_a_task_has_none_to_give() -> None:
    a = agent()
    assert lost_task(a, LaunchSettings(harness=Harness.CLAUDE, cwd="/tmp")) is None


@pytest.mark.parametrize(
    ("prompt", "task", "expected"),
    [
        (None, None, FRESH_SESSION_NOTICE),
        ("[volee] The machine restarted…", None, FRESH_SESSION_NOTICE),  # claims a memory
        ("go on", None, f"{FRESH_SESSION_NOTICE}\n\ngo on"),
        (None, TASK, f"{FRESH_SESSION_NOTICE} {TASK_AGAIN}\n\n{TASK}"),
        ("go on", TASK, f"{FRESH_SESSION_NOTICE} {TASK_AGAIN}\n\n{TASK}\n\ngo on"),
    ],
)
def test_the_fresh_prompt_is_the_notice_the_task_then_the_persons_message(
    prompt: str | None, task: str | None, expected: str
) -> None:
    assert fresh_prompt(prompt, task) == expected
    # What volee records as its own notice is exactly its part of that prompt.
    assert expected.startswith(fresh_notice(task))

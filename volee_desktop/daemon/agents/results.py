"""What the agents' IPC methods answer (docs/ipc.md), as mypy sees it.

TypedDicts, as for the missions (``daemon/missions/results.py`` says why): the dicts the wire
carries, typed; the views of whole agents are ``daemon/views.py``'s ``AgentView``.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Forgotten(TypedDict):
    """``agents.forget``: the agent gone from the list."""

    forgotten: str
    name: str


class ScreenText(TypedDict):
    """``agents.screen``: the last lines of its host's screen, as text."""

    text: str


class AttachInfo(TypedDict):
    """``agents.attach_info``: the socket ``volee attach`` connects to."""

    socket: str
    agent: str
    name: str


class Sent(TypedDict):
    """``agents.send``: typed into its session, or it was resumed with it."""

    delivered: bool
    resumed: bool
    message: str | None


class HarnessChoice(TypedDict):
    """One harness of ``agents.harnesses``: the program a launch would run, its version and
    modes, or why it cannot start; only ``probing`` while its probe is not done."""

    harness: str
    path: NotRequired[str | None]
    version: NotRequired[str | None]
    problem: NotRequired[str | None]
    modes: NotRequired[list[str]]
    default_mode: NotRequired[str | None]
    probing: NotRequired[bool]


class Harnesses(TypedDict):
    """``agents.harnesses``."""

    harnesses: list[HarnessChoice]


class Answered(TypedDict):
    """``agents.allow``, ``agents.deny``, ``agents.answer``: the answer typed, and the state
    the agent is in after it."""

    agent: str
    name: str
    request: str
    answer: str
    summary: str
    state: str | None


class Output(TypedDict):
    """``agents.output``: the last lines of the agent's screen, and the screen's shape."""

    agent: str
    name: str
    lines: list[str]
    text: str
    rows: int
    cols: int
    cursor: list[int]
    live: bool
    at: float
    version: int


class KeysTyped(TypedDict):
    """``agents.keys``: the key typed, and whether the screen changed after it (``taken``)."""

    agent: str
    name: str
    key: str
    taken: bool

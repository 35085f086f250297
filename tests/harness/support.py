"""Helpers of the harness tests: the real payload samples and agents in a given state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from volee_desktop.core.model import Agent, Harness
from volee_desktop.core.states import AgentState
from volee_desktop.harness.base import LaunchContext

SAMPLES = Path(__file__).resolve().parent / "samples"
AT = 1_796_000_000.0


def sample(name: str) -> dict[str, Any]:
    """A real hook payload from ``samples/`` (``claude-hook-Stop`` -> the parsed JSON)."""
    data: dict[str, Any] = json.loads((SAMPLES / f"{name}.json").read_text())
    return data


def agent(
    harness: Harness = Harness.CLAUDE,
    state: AgentState = AgentState.WORKING,
    sessions: tuple[str, ...] = (),
    detail: str = "",
    held: str | None = None,
) -> Agent:
    """An agent as the registry would hold it."""
    return Agent(
        id="ag_1",
        name="a",
        harness=harness,
        state=state,
        sessions=sessions,
        detail=detail,
        held=held,
    )


def context(binary: str | None = None) -> LaunchContext:
    """A launch context with a fixed volee prefix and session id."""
    return LaunchContext(
        volee=("/usr/bin/python3", "-m", "volee_desktop.cli"),
        files_dir="/state/agents/ag_1",
        session_id="11111111-2222-4333-8444-555555555555",
        binary=binary,
    )

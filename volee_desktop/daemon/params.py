"""IPC request parameters of the missions and messages methods, with errors saying what to send."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from ..core.model import Agent, Mission
from ..core.registry import Registry
from ..ipc.protocol import ErrorCode, IpcError
from .errors import Refused
from .views import resolve_agent, resolve_mission

E = TypeVar("E", bound=StrEnum)


def text(params: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    """A string parameter; None when absent and not required."""
    value = params.get(key)
    if value is None or value == "":
        if required:
            raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} is required; send it")
        return None
    if not isinstance(value, str):
        raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} must be a string, not {value!r}")
    return value


def strings(params: dict[str, Any], key: str) -> tuple[str, ...]:
    """A list-of-strings parameter (a single string counts as a list of one)."""
    value = params.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise IpcError(
            ErrorCode.BAD_REQUEST, f"parameter {key!r} must be a list of strings, not {value!r}"
        )
    return tuple(value)


def choice(params: dict[str, Any], key: str, kind: type[E], default: E) -> E:
    """An enumerated parameter (``default`` when absent)."""
    given = params.get(key)
    try:
        return kind(given or default)
    except ValueError:
        allowed = ", ".join(str(k) for k in kind)
        raise Refused(f"unknown {key} {given!r}; use one of {allowed}") from None


def agent_param(registry: Registry, params: dict[str, Any], key: str = "agent") -> Agent:
    """The agent a parameter names (id, id prefix or name)."""
    return resolve_agent(registry, text(params, key) or "")


def mission_param(
    registry: Registry, params: dict[str, Any], agent: Agent | None = None
) -> Mission:
    """The mission a parameter names, else the mission of ``agent``."""
    ref = text(params, "mission", required=agent is None or agent.mission is None)
    if ref is None:
        assert agent is not None
        assert agent.mission is not None
        return registry.missions[agent.mission]
    return resolve_mission(registry, ref)

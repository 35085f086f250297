"""IPC request parameters, read one way for every method, with errors saying what to send.

A wrong type is a ``bad_request`` naming the parameter; an unknown name of a closed set
(harness, kind, role) is refused with the names allowed.  Handlers read their parameters
only through these functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import msgspec

from ..core.model import DEFAULT_HARNESS, Agent, Delivery, Harness, Mission, Role
from ..core.registry import Registry
from ..ipc.protocol import ErrorCode, IpcError
from .errors import Refused
from .spawn import SpawnRequest
from .views import resolve_agent, resolve_mission

E = TypeVar("E", bound=StrEnum)
Params = Mapping[str, Any]


def bad(message: str) -> IpcError:
    return IpcError(ErrorCode.BAD_REQUEST, message)


def text(params: Params, key: str, *, required: bool = True) -> str | None:
    """A string parameter; None when absent (or empty) and not required."""
    value = params.get(key)
    if value is None or value == "":
        if required:
            raise bad(f"parameter {key!r} is required; send it")
        return None
    if not isinstance(value, str):
        raise bad(f"parameter {key!r} must be a string, not {value!r}")
    return value


def flag(params: Params, key: str, default: bool) -> bool:
    """A true/false parameter (``default`` when absent)."""
    value = params.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad(f"parameter {key!r} must be true or false, not {value!r}")
    return value


def strings(params: Params, key: str) -> tuple[str, ...]:
    """A list-of-strings parameter (a single string counts as a list of one)."""
    value = params.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad(f"parameter {key!r} must be a list of strings, not {value!r}")
    return tuple(value)


def string_map(params: Params, key: str) -> dict[str, str] | None:
    """A parameter mapping strings to strings (an environment); None when absent."""
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise bad(f"parameter {key!r} must map strings to strings")
    return dict(value)


def whole(params: Params, key: str, *, minimum: int = 0) -> int | None:
    """A whole-number parameter of at least ``minimum`` (true and false are not numbers)."""
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise bad(f"parameter {key!r} must be a whole number >= {minimum}, not {value!r}")
    return value


def seq(params: Params, key: str) -> int | None:
    """A log position (an int >= 0), or None."""
    value = params.get(key)
    # bool is an int in Python: ``since: true`` must not pass for seq 1.
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise bad(f"parameter {key!r} must be a seq (int >= 0) or null, not {value!r}")
    return value


def moment(params: Params, key: str) -> float | None:
    """A finite time in seconds, or None when absent or unusable (a hook must never fail)."""
    value = params.get(key)
    # NaN/inf would be stored as null and make the log unreadable at the next start.
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def delivery(params: Params, key: str = "delivery") -> Delivery:
    """Delivery evidence a client read (a forge integration, a test), with the time it was
    read (``checked_at``, seconds since the epoch): the supervisor judges it like git's."""
    raw = params.get(key)
    if not isinstance(raw, dict):
        raise bad(f"parameter {key!r} must be an object of delivery evidence, not {raw!r}")
    try:
        found = msgspec.convert(raw, Delivery)
    except msgspec.ValidationError as exc:
        raise bad(f"parameter {key!r} is not delivery evidence: {exc}") from None
    if not (math.isfinite(found.checked_at) and found.checked_at > 0):
        raise bad(f"{key}.checked_at must say when the evidence was read (seconds since 1970)")
    return found


def choice(params: Params, key: str, kind: type[E], default: E) -> E:
    """An enumerated parameter (``default`` when absent)."""
    given = params.get(key)
    try:
        return kind(given or default)
    except ValueError:
        allowed = ", ".join(str(k) for k in kind)
        raise Refused(f"unknown {key} {given!r}; use one of {allowed}") from None


def harness(params: Params, default: Harness = DEFAULT_HARNESS) -> Harness:
    """The ``harness`` parameter (``default`` when absent)."""
    name = text(params, "harness", required=False) or default
    try:
        return Harness(name)
    except ValueError:
        raise Refused(f"unknown harness {name!r}; use claude, codex, pi or generic") from None


def agent_param(registry: Registry, params: Params, key: str = "agent") -> Agent:
    """The agent a parameter names (id, id prefix or name)."""
    return resolve_agent(registry, text(params, key) or "")


def mission_param(registry: Registry, params: Params, agent: Agent | None = None) -> Mission:
    """The mission a parameter names, else the mission of ``agent``."""
    ref = text(params, "mission", required=agent is None or agent.mission is None)
    if ref is None:
        assert agent is not None
        assert agent.mission is not None
        return registry.missions[agent.mission]
    return resolve_mission(registry, ref)


def spawn_request(params: Params) -> SpawnRequest:
    """The parameters of ``agents.spawn``."""
    return SpawnRequest(
        harness=harness(params),
        prompt=text(params, "prompt", required=False),
        argv=argv(params),
        cwd=text(params, "cwd", required=False),
        env=string_map(params, "env"),
        name=text(params, "name", required=False),
        worktree=flag(params, "worktree", False),
        role=choice(params, "role", Role, Role.AGENT),
        parent=text(params, "parent", required=False),
        mission=text(params, "mission", required=False),
        model=text(params, "model", required=False),
        permission_mode=text(params, "permission_mode", required=False),
    )


def argv(params: Params) -> tuple[str, ...]:
    """The ``argv`` parameter: a command line as a list of strings."""
    value = params.get("argv")
    if value is not None and (
        not isinstance(value, list) or not all(isinstance(a, str) for a in value)
    ):
        raise bad("parameter 'argv' must be a list of strings")
    return tuple(value or ())


@dataclass(frozen=True)
class HookRequest:
    """A ``hook`` request from the hook shim, read leniently: a hook is never refused, what
    cannot be used is kept aside with the reason."""

    event: str | None
    payload: str | None
    key: str | None
    received_at: float | None
    agent: str | None
    harness: str
    #: The size limit the shim refused the payload over (it sent none), as text; else None.
    too_large: str | None


def hook_request(params: Params) -> HookRequest:
    """The parameters of ``hook`` (live or spooled); wrong types read as absent."""

    def string(key: str) -> str | None:
        value = params.get(key)
        return value if isinstance(value, str) else None

    return HookRequest(
        event=string("event") or None,
        payload=string("payload"),
        key=string("key"),
        received_at=moment(params, "received_at"),
        agent=string("agent") or None,
        harness=string("harness") or str(DEFAULT_HARNESS),
        too_large=str(params["too_large"]) if params.get("too_large") else None,
    )

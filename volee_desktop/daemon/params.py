"""IPC request parameters, read one way for every method, with errors saying what to send.

A method's parameters are a ``Parameters`` struct, decoded once by the method table before
the handler runs (``decoder``): the handler receives typed values.  A wrong type is a
``bad_request`` naming the parameter and what it must be; an unknown name of a closed set
(harness, kind, role) is refused with the names allowed.  The readers below the decoder
(``text``, ``flag``…) are for the handlers that still read a dict (the answer methods).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

import msgspec
import msgspec.inspect as mi

from ..core.model import DEFAULT_HARNESS, Agent, Delivery, Harness, Mission, Role
from ..core.registry import Registry
from ..ipc.protocol import ErrorCode, IpcError
from .errors import Refused
from .spawn import SpawnRequest
from .views import resolve_agent, resolve_mission

E = TypeVar("E", bound=StrEnum)
Params = Mapping[str, Any]


class Parameters(msgspec.Struct, frozen=True, kw_only=True):
    """The parameters of one method, as its handler receives them.

    Read as the readers below always read them: an absent or null parameter takes its default,
    an empty string where a string (or a name of a closed set) is asked counts as absent, and a
    parameter named in ``one_or_many`` may be a single string for a list of one.  Names the
    struct does not declare are ignored (an older or newer client may send more).
    """

    one_or_many: ClassVar[frozenset[str]] = frozenset()
    #: What an object parameter is, in words ("delivery evidence"), for its errors.
    nouns: ClassVar[dict[str, str]] = {}


class NoParameters(Parameters, frozen=True, kw_only=True):
    """A method that takes no parameters (whatever is sent is ignored)."""


class AgentParams(Parameters, frozen=True, kw_only=True):
    """A method on one agent: ``agent`` is its id, an id prefix or its name."""

    agent: str


P = TypeVar("P", bound=Parameters)


def decoder(kind: type[P]) -> Callable[[dict[str, Any]], P]:
    """What the method table reads ``kind`` with (``MethodTable.add(name, fn, decoder(kind))``)."""
    fields = {f.encode_name: f for f in _fields(kind)}
    blank_is_absent = frozenset(name for name, f in fields.items() if _is_text(f.type))

    def decode(params: dict[str, Any]) -> P:
        given: dict[str, Any] = {}
        for key, value in params.items():
            if value is None or (value == "" and key in blank_is_absent):
                continue
            if key in kind.one_or_many and isinstance(value, str):
                value = [value]
            given[key] = value
        try:
            return msgspec.convert(given, kind)
        except msgspec.ValidationError as exc:
            raise _refusal(str(exc), fields, given, kind.nouns) from None

    return decode


def decode(kind: type[P], params: Params) -> P:
    """``params`` read as ``kind`` (for a handler called in-process with a dict)."""
    return decoder(kind)(dict(params))


def _fields(kind: type[Parameters]) -> tuple[mi.Field, ...]:
    info = mi.type_info(kind)
    assert isinstance(info, mi.StructType)
    return info.fields


def _members(t: mi.Type) -> tuple[mi.Type, ...]:
    return t.types if isinstance(t, mi.UnionType) else (t,)


def _is_text(t: mi.Type) -> bool:
    return any(isinstance(m, mi.StrType | mi.EnumType) for m in _members(t))


def _words(t: mi.Type) -> str:
    """What a parameter of type ``t`` must be, in words."""
    members = [m for m in _members(t) if not isinstance(m, mi.NoneType)]
    nullable = len(members) < len(_members(t))
    said = " or ".join(_word(m) for m in members)
    return f"{said} or null" if nullable else said


def _word(t: mi.Type) -> str:
    if isinstance(t, mi.StrType):
        return "a string"
    if isinstance(t, mi.BoolType):
        return "true or false"
    if isinstance(t, mi.IntType):
        return "a whole number" + (f" >= {t.ge}" if t.ge is not None else "")
    if isinstance(t, mi.FloatType):
        return "a number"
    if isinstance(t, mi.ListType | mi.VarTupleType | mi.FrozenSetType | mi.SetType):
        return "a list of strings" if isinstance(t.item_type, mi.StrType) else "a list"
    if isinstance(t, mi.DictType):
        if isinstance(t.value_type, mi.StrType):
            return "an object mapping strings to strings"
        return "an object"
    if isinstance(t, mi.EnumType):
        return "one of " + ", ".join(str(m.value) for m in t.cls)
    if isinstance(t, mi.StructType | mi.DataclassType):
        return f"an object ({t.cls.__name__})"
    return "a value of another type"


def _refusal(
    message: str, fields: dict[str, mi.Field], given: dict[str, Any], nouns: dict[str, str]
) -> Exception:
    """The error a failed decode answers: ``bad_request`` naming the parameter and what it must
    be, or ``refused`` for a name outside a closed set."""
    missing = re.match(r"Object missing required field `(\w+)`", message)
    if missing:
        return bad(f"parameter {missing.group(1)!r} is required; send it")
    at = re.search(r"- at `\$\.(\w+)([^`]*)`", message)
    if at is None or at.group(1) not in fields:
        return bad(f"the parameters are not understood: {message}")
    key, inner = at.groups()
    field = fields[key]
    value = given.get(key)
    noun = nouns.get(key)
    if inner.startswith("."):  # within an object: what msgspec says, where
        return bad(f"parameter {key!r} is not {noun or _words(field.type)}: {message}")
    enums = [m for m in _members(field.type) if isinstance(m, mi.EnumType)]
    if enums and isinstance(value, str):
        allowed = ", ".join(str(m.value) for m in enums[0].cls)
        return Refused(f"unknown {key} {value!r}; use one of {allowed}")
    what = f"an object of {noun}" if noun else _words(field.type)
    return bad(f"parameter {key!r} must be {what}, not {value!r}")


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


def whole(params: Params, key: str, *, minimum: int = 0) -> int | None:
    """A whole-number parameter of at least ``minimum`` (true and false are not numbers)."""
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise bad(f"parameter {key!r} must be a whole number >= {minimum}, not {value!r}")
    return value


def moment(params: Params, key: str) -> float | None:
    """A finite time in seconds, or None when absent or unusable (a hook must never fail)."""
    value = params.get(key)
    # NaN/inf would be stored as null and make the log unreadable at the next start.
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def harness_named(name: str) -> Harness:
    """The harness ``name`` names (refused with the names there are when none)."""
    try:
        return Harness(name)
    except ValueError:
        raise Refused(f"unknown harness {name!r}; use claude, codex, pi or generic") from None


def agent_param(registry: Registry, params: Params, key: str = "agent") -> Agent:
    """The agent a parameter names (id, id prefix or name)."""
    return resolve_agent(registry, text(params, key) or "")


def mission_of(registry: Registry, ref: str | None, agent: Agent | None = None) -> Mission:
    """The mission ``ref`` names, else (``ref`` None) the mission of ``agent``."""
    if ref is None and (agent is None or agent.mission is None):
        raise bad("parameter 'mission' is required; send it")
    if ref is None:
        assert agent is not None
        assert agent.mission is not None
        return registry.missions[agent.mission]
    return resolve_mission(registry, ref)


def checked_delivery(found: Delivery, key: str = "delivery") -> Delivery:
    """Delivery evidence a client sent, refused unless it says when it was read."""
    if not (math.isfinite(found.checked_at) and found.checked_at > 0):
        raise bad(f"{key}.checked_at must say when the evidence was read (seconds since 1970)")
    return found


class SpawnParams(Parameters, frozen=True, kw_only=True):
    """The parameters of ``agents.spawn`` (``SpawnRequest`` says what each is)."""

    #: None: config.toml's ``[agents] harness`` (claude unless the person chose).
    harness: Harness | None = None
    prompt: str | None = None
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] | None = None
    name: str | None = None
    worktree: bool = False
    role: Role = Role.AGENT
    parent: str | None = None
    mission: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    branch: str | None = None

    def request(self, default: str = DEFAULT_HARNESS) -> SpawnRequest:
        """The agent to launch, with the ``default`` harness when none was named."""
        return SpawnRequest(
            harness=self.harness or harness_named(default),
            prompt=self.prompt,
            argv=self.argv,
            cwd=self.cwd,
            env=self.env,
            name=self.name,
            worktree=self.worktree,
            role=self.role,
            parent=self.parent,
            mission=self.mission,
            model=self.model,
            permission_mode=self.permission_mode,
            branch=self.branch,
        )


def spawn_request(params: Params) -> SpawnRequest:
    """The parameters of ``agents.spawn``, read from a dict."""
    return decode(SpawnParams, params).request()


@dataclass(frozen=True)
class HookCall:
    """The parameters of ``hook`` as they came: a hook is never refused for them, and one that
    cannot be used is kept verbatim with the reason (``agents/intake.py`` reads it with
    ``hook_request``, live or spooled alike)."""

    raw: Mapping[str, Any]


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

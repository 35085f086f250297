"""Views of registry entities as JSON-ready data (``volee ls --json``, IPC results)."""

from __future__ import annotations

from typing import Any, TypedDict, cast

from ..core.model import Agent, Limit, Mission
from ..core.registry import Registry
from ..core.requests import RequestView, request_view
from ..store.codec import to_builtins
from .errors import Ambiguous, NotFound


class LimitView(TypedDict):
    """``limit_view``: the limit an agent met."""

    kind: str
    resets_at: float | None
    ended: bool
    at: float
    attempt: int | None
    attempts: int | None


class ProjectView(TypedDict):
    """``project_view``: where an agent works."""

    folder: str | None
    name: str
    repo: str | None
    branch: str | None


class ChangeSummary(TypedDict):
    """An agent's change against its base: files, lines added and removed, uncommitted."""

    files: int
    added: int
    removed: int
    uncommitted: bool


class OutcomeView(TypedDict):
    """What an agent's work came to, each null when not known: ``plan`` (``{done, total}``),
    ``change`` and ``last_message`` (the first line of its last reply)."""

    plan: dict[str, int] | None
    change: ChangeSummary | None
    last_message: str | None


class AgentView(OutcomeView):
    """An agent as the CLI contract describes it (``agent_view``; docs/cli-contract.md)."""

    id: str
    name: str
    state: str
    detail: str
    state_since: float
    harness: str
    session_id: str | None
    cwd: str | None
    mission: str | None
    held: str | None
    interrupted: str | None
    outcome: str | None
    denied: str | None
    action: str | None
    activity: str | None
    activity_at: float | None
    role: str
    parent: str | None
    worktree: str | None
    branch: str | None
    live: bool
    launched_by_volee: bool
    location: str | None
    pid: int | None
    restart: dict[str, object] | None
    model: str | None
    context: float | None
    cost_usd: float | None
    request: RequestView | None
    project: ProjectView
    waiting_since: float | None
    limit: LimitView | None
    plan_use: dict[str, object] | None


class MissionFields(TypedDict):
    """A mission's fields as ``core.model.Mission`` has them (msgspec's builtins)."""

    id: str
    goal: str
    kind: str
    repositories: list[str]
    requested_by: str
    coordinator: str | None
    status: str
    report: str | None
    reason: str
    thread: str | None
    base_branch: str | None
    created_at: float
    updated_at: float
    assessments: dict[str, dict[str, object]]
    report_requested: bool
    invited: list[str]


class MissionView(MissionFields):
    """A mission with its agents (``mission_view``)."""

    agents: list[AgentView]


def agent_view(
    agent: Agent, registry: Registry | None = None, *, outcome: OutcomeView | None = None
) -> AgentView:
    """An agent as the CLI contract describes it (plus a few useful extras).

    ``outcome`` is what its work came to (daemon/missions/outcomes.py: ``plan``, ``change``,
    ``last_message``); null where the caller has none.
    """
    restart = agent.restart
    known = outcome or NO_OUTCOME
    return {
        "id": agent.id,
        "name": agent.name,
        "state": str(agent.state),
        "detail": agent.detail,
        "state_since": agent.state_since,
        "harness": str(agent.harness),
        "session_id": agent.session,
        "cwd": agent.cwd,
        "mission": agent.mission,
        "held": agent.held,
        "interrupted": agent.interrupted,
        # A resting agent's turn that ended on a denial or an interruption (the list's word).
        "outcome": agent.outcome,
        "denied": agent.denied,
        "action": agent.action,
        "activity": agent.activity,
        "activity_at": agent.activity_at,
        "role": str(agent.role),
        "parent": agent.parent,
        "worktree": agent.worktree,
        "branch": agent.branch,
        "live": agent.state.live,
        "launched_by_volee": agent.launched_by_volee,
        "location": str(agent.location) if agent.location else None,
        "pid": agent.pid,
        "restart": to_builtins(restart) if restart else None,
        "model": agent.model,
        # The share of its context window its conversation uses (0..1), and its cost so far
        # in US dollars, as its harness last said (None: not known).
        "context": agent.context_share,
        "cost_usd": agent.cost_usd,
        "request": request_view(agent.request),
        "project": project_view(agent),
        "waiting_since": agent.request.at if agent.request is not None else None,
        "limit": limit_view(agent.limit),
        # The plan's use its harness last reported (claude.ai logins): 0..1 and the reset.
        # (``plan`` is what its work came to: its to-do list, ``OutcomeView``.)
        "plan_use": to_builtins(agent.plan) if agent.plan is not None else None,
        "plan": known["plan"],
        "change": known["change"],
        "last_message": known["last_message"],
    }


def limit_view(limit: Limit | None) -> LimitView | None:
    """The limit the agent met (docs/limits.md): ``kind`` five_hour|seven_day|rate|overloaded,
    ``resets_at`` (epoch seconds or null), ``ended`` (its turn ended on it; false while the
    harness retries), ``at``, and the retry's ``attempt``/``attempts``."""
    if limit is None:
        return None
    return {
        "kind": str(limit.kind),
        "resets_at": limit.resets_at,
        "ended": limit.ended,
        "at": limit.at,
        "attempt": limit.attempt,
        "attempts": limit.attempts,
    }


#: The outcome of an agent whose work came to nothing known yet.
NO_OUTCOME: OutcomeView = {"plan": None, "change": None, "last_message": None}


def project_view(agent: Agent) -> ProjectView:
    """Where the agent works: its folder (and the folder's last part as a short name), the
    repository and branch when known."""
    folder = agent.worktree or agent.cwd
    name = folder.rstrip("/").rsplit("/", 1)[-1] if folder else ""
    if agent.repo and agent.worktree:
        name = agent.repo.rstrip("/").rsplit("/", 1)[-1]
    return {"folder": folder, "name": name, "repo": agent.repo, "branch": agent.branch}


def mission_view(mission: Mission, registry: Registry) -> MissionView:
    """A mission with its agents and assessments."""
    data: dict[str, Any] = to_builtins(mission)
    data["agents"] = [
        agent_view(a) for a in registry.by_urgency(registry.mission_agents(mission.id))
    ]
    return cast(MissionView, data)  # the Mission's fields, as msgspec writes them


def listed(registry: Registry, include_all: bool) -> list[Agent]:
    """Agents for ``volee ls``: without --all, ended sessions volee only watched are left out
    (unless they offer an action, such as resuming an interrupted session)."""
    agents = registry.by_urgency()
    if include_all:
        return agents
    return [a for a in agents if a.launched_by_volee or a.state.live or a.action]


def resolve_agent(registry: Registry, ref: str) -> Agent:
    """An agent by id, unique id prefix or unique name (NotFound / Ambiguous otherwise)."""
    if not ref:
        raise NotFound("name an agent: an id (ag_…), a unique id prefix or a unique name")
    agent = registry.agents.get(ref)
    if agent is not None:
        return agent
    by_name = [a for a in registry.agents.values() if a.name == ref]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        ids = ", ".join(a.id for a in by_name)
        raise Ambiguous(f"{len(by_name)} agents are named {ref!r} ({ids}); use the id")
    prefix = ref if ref.startswith("ag_") else f"ag_{ref}"
    matches = [
        a for a in registry.agents.values() if a.id.startswith(prefix) or a.id.startswith(ref)
    ]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise Ambiguous(f"{ref!r} matches {len(matches)} agents; give more of the id")
    gone = registry.name_of(ref)
    if gone:
        raise NotFound(f"agent {gone} ({ref}) was forgotten")
    raise NotFound(f"no agent {ref!r}; `volee ls --all` lists them")


def resolve_mission(registry: Registry, ref: str) -> Mission:
    """A mission by id or unique id prefix."""
    mission = registry.missions.get(ref)
    if mission is not None:
        return mission
    matches = [m for m in registry.missions.values() if m.id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise Ambiguous(f"{ref!r} matches {len(matches)} missions; give more of the id")
    raise NotFound(f"no mission {ref!r}; `volee mission ls` lists them")

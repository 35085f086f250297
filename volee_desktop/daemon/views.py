"""Views of registry entities as JSON-ready data (``volee ls --json``, IPC results)."""

from __future__ import annotations

from typing import Any

from ..core.model import Agent, Mission
from ..core.registry import Registry
from ..core.requests import request_view
from ..store.codec import to_builtins
from .errors import Ambiguous, NotFound


def agent_view(agent: Agent, registry: Registry | None = None) -> dict[str, Any]:
    """An agent as the CLI contract describes it (plus a few useful extras)."""
    restart = agent.restart
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
    }


def project_view(agent: Agent) -> dict[str, Any]:
    """Where the agent works: its folder (and the folder's last part as a short name), the
    repository and branch when known."""
    folder = agent.worktree or agent.cwd
    name = folder.rstrip("/").rsplit("/", 1)[-1] if folder else ""
    if agent.repo and agent.worktree:
        name = agent.repo.rstrip("/").rsplit("/", 1)[-1]
    return {"folder": folder, "name": name, "repo": agent.repo, "branch": agent.branch}


def mission_view(mission: Mission, registry: Registry) -> dict[str, Any]:
    """A mission with its agents and assessments."""
    data: dict[str, Any] = to_builtins(mission)
    data["agents"] = [
        agent_view(a) for a in registry.by_urgency(registry.mission_agents(mission.id))
    ]
    return data


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

"""Missions across machines: ``missions.list`` lists every machine's, and a method on one
mission (show, answer, check, workers) whose MISSION is ``NAME:MISSION``, or an id found on
exactly one other machine, is done on that machine: approving a mission of devbox from the
laptop merges its workers' branches on devbox, where the repositories are.

The missions of another machine are in the link's copy of its registry (``link.py``), so
finding one asks nothing over the link.
"""

from __future__ import annotations

from typing import Any

from ...core.registry import Registry
from ...ipc.methods import Method
from ..views import mission_view, resolve_mission
from .link import MachineLink
from .targets import find_target

#: The methods on one mission that go to its machine; how long each may take there (an
#: approval waits for the merges there: ``missions.approval.MERGE_WAIT``, and some more).
FORWARDED: dict[str, float] = {
    Method.MISSIONS_SHOW: 30.0,
    Method.MISSIONS_ANSWER: 300.0,
    Method.MISSIONS_CHECK: 60.0,
    Method.MISSIONS_WORKERS: 60.0,
}


def target(
    links: dict[str, MachineLink], here: Registry, ref: str
) -> tuple[MachineLink, str] | None:
    """The other machine mission ``ref`` is on, and its id there; None: this machine's."""
    return find_target(
        links,
        here,
        ref,
        lambda registry, r: resolve_mission(registry, r).id,
        things="missions",
        hint="say which with NAME:MISSION",
    )


def listed(links: dict[str, MachineLink], include_all: bool) -> list[dict[str, Any]]:
    """The other machines' missions as ``missions.list`` shows them, with their machine."""
    views = []
    for link in links.values():
        registry = link.registry
        if registry is None:
            continue
        missions = sorted(registry.missions.values(), key=lambda m: m.created_at, reverse=True)
        if not include_all:
            missions = [m for m in missions if not m.status.ended] or missions[:10]
        for mission in missions:
            view = mission_view(mission, registry)
            views.append({**view, "machine": link.name, "reachable": link.state.reachable})
    return views

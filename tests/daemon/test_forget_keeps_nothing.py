"""A forgotten agent leaves nothing behind in the daemon's memory (the soak, issue 22).

The soak bench forgets and replaces an agent every few ticks for hours: every table the
daemon keeps by agent (or by request) must drop the forgotten one, or the daemon grows by
each agent it ever had.  The registry keeps only its name (``Tables.names``) and its sessions
as ignored, by design.
"""

from __future__ import annotations

from typing import Any

from tests.daemon.test_agents import Rig, asking, rig, root
from volee_desktop.core.states import AgentState

__all__ = ["rig", "root"]


def kept_of(rig: Rig, agent_id: str, request_id: str) -> list[str]:
    """The daemon's tables, by agent or request, that still name the agent or its request."""
    tables: dict[str, Any] = {
        "answers locks": rig.d.answers._locks,
        "answers seen": rig.d.answers._seen,
        "limits looked": rig.d.limits._looked,
        "limits tails": rig.d.limits._claude_tail,
        "screens terms": rig.d.agents.screens.terms,
        "screens last": rig.d.agents.screens.last,
        "screens changed": rig.d.agents.screens._changed,
        "watchers": rig.d.agents.watchers,
        "suspects": rig.d.agents.suspects,
        "outcomes": rig.d.outcomes._known,
    }
    return [name for name, table in tables.items() if agent_id in table or request_id in table]


async def test_a_forgotten_agent_that_was_answered_is_in_no_table(rig: Rig) -> None:
    view = await asking(rig)
    request = rig.agent(view["id"]).request
    assert request is not None
    await rig.call("agents.allow", agent=view["name"], request=request.id)
    await rig.wait_state(view["id"], AgentState.DONE)
    # What a look at its retry line and a wait for its screen would have left.
    rig.d.limits._looked[view["id"]] = 0.0
    rig.d.agents.screens.changed(view["id"])
    rig.d.agents.suspects[view["id"]] = "its host record was suspect at start"
    assert kept_of(rig, view["id"], request.id)  # the tables did hold it

    await rig.call("agents.forget", agent=view["name"])

    assert kept_of(rig, view["id"], request.id) == []

"""The generic profile: any argv; state from the process alone; it cannot resume."""

from __future__ import annotations

from typing import Any

from ..core.events import Event
from ..core.model import Agent, LaunchSettings
from .base import Error, LaunchContext, LaunchPlan


class GenericProfile:
    """Runs any command in a host; no hooks, no conversation to resume."""

    name = "generic"
    can_resume = False
    min_version: str | None = None

    def launch(self, agent_id: str, settings: LaunchSettings, ctx: LaunchContext) -> LaunchPlan:
        argv = list(settings.argv)
        if not argv:
            raise Error(
                "the generic harness needs a command: volee spawn --harness generic -- CMD…"
            )
        return LaunchPlan(tuple(argv), dict(settings.env), {}, None)

    def resume(
        self,
        agent_id: str,
        settings: LaunchSettings,
        session: str,
        prompt: str | None,
        ctx: LaunchContext,
    ) -> LaunchPlan:
        raise Error("the generic harness cannot resume a conversation; relaunch it instead")

    def hook_events(
        self, agent: Agent, hook: str, payload: dict[str, Any], at: float
    ) -> list[Event]:
        return []

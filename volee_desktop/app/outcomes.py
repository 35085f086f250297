"""What each agent's work came to, for the list: its plan "3/7", its change, its last reply.

The daemon keeps them (``plan``, ``change``, ``last_message`` of the agent view,
daemon/missions/outcomes.py) and refreshes them at each turn's end; the registry the app folds does
not hold them, so the app asks (``agents.get``) when an agent's turn ends and when it first
sees one, and repaints its row.  ``outcome_text`` is the row's and the tooltip's words.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import QObject, Signal

from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .live import Change

TURN_ENDS = frozenset({AgentState.DONE, AgentState.IDLE, AgentState.STOPPED, AgentState.FAILED})
Get = Callable[[str], Awaitable[Any]]
Spawn = Callable[[Coroutine[Any, Any, None], str], object]


def outcome_text(view: dict[str, Any] | None) -> str:
    """``plan 3/7 · 3 files +120 −14 (uncommitted)`` ("" when there is nothing to say)."""
    if not view:
        return ""
    parts = []
    plan = view.get("plan")
    if isinstance(plan, dict) and plan.get("total"):
        parts.append(f"plan {plan.get('done', 0)}/{plan['total']}")
    change = view.get("change")
    if isinstance(change, dict) and change.get("files"):
        files = change["files"]
        lines = f"+{change.get('added', 0)} −{change.get('removed', 0)}"
        text = f"{files} file{'s' if files != 1 else ''} {lines}"
        parts.append(text + (" (uncommitted)" if change.get("uncommitted") else ""))
    return " · ".join(parts)


class OutcomeStore(QObject):
    """The outcomes the daemon said, by agent id; ``changed`` when one came."""

    changed = Signal(str)

    def __init__(
        self, parent: QObject | None = None, get: Get | None = None, spawn: Spawn | None = None
    ) -> None:
        super().__init__(parent)
        self.views: dict[str, dict[str, Any]] = {}
        self.get = get  # asks the daemon (``agents.outcome``); None: nothing is asked
        self.spawn = spawn
        self._asking: set[str] = set()

    def text(self, agent_id: str) -> str:
        return outcome_text(self.views.get(agent_id))

    def last_message(self, agent_id: str) -> str | None:
        view = self.views.get(agent_id) or {}
        last = view.get("last_message")
        return last if isinstance(last, str) else None

    # --- LiveObserver: ask when an agent is first seen and when its turn ends ------

    def on_reset(self, registry: Registry) -> None:
        for agent_id in registry.agents:
            self.ask(agent_id)

    def on_change(self, change: Change) -> None:
        for before, after in change.agents:
            if after is None:
                self.views.pop(before.id if before is not None else "", None)
            elif before is None or (after.state in TURN_ENDS and after.state != before.state):
                self.ask(after.id)

    def ask(self, agent_id: str) -> None:
        """Ask the daemon for the agent's outcome (once at a time per agent)."""
        if self.get is None or self.spawn is None or agent_id in self._asking:
            return
        self._asking.add(agent_id)
        self.spawn(self._ask(self.get, agent_id), f"the outcome of {agent_id}")

    async def _ask(self, get: Get, agent_id: str) -> None:
        try:
            view = await get(agent_id)
        except Exception:  # the link's errors: the row keeps what it had
            return
        finally:
            self._asking.discard(agent_id)
        if isinstance(view, dict):
            self.views[agent_id] = {k: view.get(k) for k in ("plan", "change", "last_message")}
            self.changed.emit(agent_id)

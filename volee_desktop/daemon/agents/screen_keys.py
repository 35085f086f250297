"""An agent's rendered screen, and the keys that are not an answer (``agents.output``,
``agents.keys``).

- ``agents.output {agent, lines?}``: the agent's rendered screen (the last one if it ended)
- ``agents.keys {agent, key}``: a key that is not a line of text: ``esc``, ``shift-tab``
  (Claude Code's mode), or ``option:N`` (the N-th option of the dialog on its screen, typed
  only once the screen shows a dialog with that option, and never into an open request's
  dialog: that one is answered with allow / deny / answer, which record it); ``taken``
  says whether the screen moved after it (typed once: a second Esc is another key)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

from msgspec import Meta

from ...harness.dialogs import find_dialog
from ...ipc.methods import Method
from ...ipc.server import Connection
from ..context import Context
from ..errors import NotFound, Refused
from ..params import AgentParams, bad, decoder
from ..views import resolve_agent
from .answers import TAKEN_WAIT
from .host_io import type_keys
from .results import KeysTyped, Output
from .runner import AgentsRunner
from .screens import Screens

log = logging.getLogger(__name__)

OUTPUT_LINES = 40
#: ``agents.keys``'s named keys, as a terminal sends them.
NAMED_KEYS: dict[str, bytes] = {"esc": b"\x1b", "shift-tab": b"\x1b[Z"}


class OutputParams(AgentParams, frozen=True, kw_only=True):
    """``agents.output``: how many of the screen's last lines (OUTPUT_LINES when absent)."""

    lines: Annotated[int, Meta(ge=1)] | None = None


class KeyParams(AgentParams, frozen=True, kw_only=True):
    """``agents.keys``: one named key (esc, shift-tab) or ``option:N``."""

    key: str


class ScreenMethods:
    """``agents.output`` and ``agents.keys``."""

    def __init__(self, ctx: Context, agents: AgentsRunner, screens: Screens) -> None:
        self.service = ctx.service
        self.clock = ctx.clock
        self.agents = agents
        self.screens = screens
        ctx.methods.add(Method.AGENTS_OUTPUT, self.api_output, decoder(OutputParams))
        ctx.methods.add(Method.AGENTS_KEYS, self.api_keys, decoder(KeyParams))

    async def api_output(self, _conn: Connection, params: OutputParams) -> Output:
        agent = resolve_agent(self.service.current(), params.agent)
        lines = params.lines or OUTPUT_LINES
        snapshot = await self.screens.snapshot(agent.id, fresh=True)
        if snapshot is None:
            raise NotFound(
                f"volee has no screen of agent {agent.name}: it never ran in a volee host"
            )
        tail = snapshot.tail(lines)
        return {
            "agent": agent.id,
            "name": agent.name,
            "lines": tail,
            "text": "\n".join(tail),
            "rows": snapshot.rows,
            "cols": snapshot.cols,
            "cursor": list(snapshot.cursor),
            "live": snapshot.live,
            "at": snapshot.at,
            "version": snapshot.version,
        }

    async def api_keys(self, _conn: Connection, params: KeyParams) -> KeysTyped:
        agent = resolve_agent(self.service.current(), params.agent)
        key = params.key
        keys = NAMED_KEYS.get(key)
        if keys is None:
            number = key.removeprefix("option:")
            if not key.startswith("option:") or not number.isdigit() or int(number) < 1:
                raise bad(f"key {key!r} is not one of esc, shift-tab, option:N")
            if agent.request is not None and agent.request.answered is None:
                raise Refused(
                    f"agent {agent.name} asks {agent.request.summary}: answer it with allow, "
                    "deny or answer (they record it); nothing typed"
                )
            # The person picked it from a read of theirs (fresh): this one is as fresh.
            snapshot = await self.screens.snapshot(agent.id, fresh=True)
            dialog = find_dialog(snapshot.lines if snapshot is not None else [])
            option = dialog.option(int(number)) if dialog is not None else None
            if option is None:
                raise Refused(
                    f"agent {agent.name}'s screen shows no dialog with an option {number}; "
                    "nothing typed"
                )
            keys = option.key
        client = await self.agents.running_host(agent.id)
        if client is None:
            raise Refused(f"agent {agent.name} has no running program in a volee host")
        # Fresh: output its host still holds must not count as the key's effect.
        shown = await self.screens.snapshot(agent.id, fresh=True)
        before = shown.version if shown is not None else 0
        await asyncio.to_thread(type_keys, client, keys)
        # A key is checked to have been taken, never typed again: a second Esc or Shift+Tab
        # is not the same key twice.
        taken = await self.screens.moved(agent.id, before, self.clock, TAKEN_WAIT)
        log.info("typed %s to %s (%s)", key, agent.name, "taken" if taken else "no change")
        return {"agent": agent.id, "name": agent.name, "key": key, "taken": taken}

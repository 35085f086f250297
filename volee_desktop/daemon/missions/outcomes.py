"""What each agent's work came to, kept for the list: its plan, its change, its last reply.

``volee ls --json`` lists sixty agents in a few milliseconds, so nothing here is read while
listing: each agent's outcome is refreshed when it registers and when a turn ends (done,
idle, stopped, failed), from its transcript (read incrementally, daemon/missions/transcripts.py) and
git (about six small git runs, in a thread; at most two agents at a time).  An agent listed
before its first refresh shows nulls and is refreshed then.  A transcript behind the turn's
Stop hook (its reply not written yet) is read again alone, git not run again.  Nothing is
stored: after a restart the first listing refreshes each agent once.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace

from ...core import events as ev
from ...core.model import Agent
from ...core.states import AgentState
from ...harness.transcript import first_line
from ...ipc.methods import Method
from ...ipc.server import Connection, MethodTable
from .. import git
from ..context import Tasks
from ..params import AgentParams, decoder
from ..service import Service
from ..views import ChangeSummary, OutcomeView, resolve_agent
from .results import AgentOutcome, BranchChange
from .review import change_of, where_of
from .transcripts import Reading, Transcripts

log = logging.getLogger(__name__)

#: Agents refreshed at the same time (each runs git in a thread).
AT_ONCE = 2
#: ``agents.outcome`` waits at most this long (seconds) for a refresh under way.
SETTLE_WAIT = 10.0
TURN_ENDS = frozenset({AgentState.DONE, AgentState.IDLE, AgentState.STOPPED, AgentState.FAILED})
#: A transcript behind the Stop hook is read again after this long (seconds), at most
#: ``REREADS`` times.
REREAD_AFTER = 1.0
REREADS = 5


@dataclass(frozen=True)
class Outcome:
    """An agent's plan (``{done, total}``), change against its base, and last reply's first
    line; None where there is none."""

    plan: dict[str, int] | None = None
    change: ChangeSummary | None = None
    last_message: str | None = None
    #: The transcript did not have the reply the Stop hook told yet (not in the view).
    behind: bool = False

    def view(self) -> OutcomeView:
        return {"plan": self.plan, "change": self.change, "last_message": self.last_message}


NONE = Outcome()


class Outcomes:
    """Keeps each agent's outcome, refreshed at the end of each turn."""

    def __init__(
        self, service: Service, tasks: Tasks, transcripts: Transcripts, methods: MethodTable
    ) -> None:
        self.service = service
        self.tasks = tasks
        self.transcripts = transcripts
        self._known: dict[str, Outcome] = {}
        self._pending: set[str] = set()
        self._again: set[str] = set()
        self._settled: dict[str, asyncio.Event] = {}
        self._rereads: dict[str, int] = {}
        self._slots = asyncio.Semaphore(AT_ONCE)
        service.listen(self._on_event)
        methods.add(Method.AGENTS_OUTCOME, self.api_outcome, decoder(AgentParams))

    async def api_outcome(self, _conn: Connection, params: AgentParams) -> AgentOutcome:
        """The agent's outcome once the refresh under way (if any) is over (the app asks at
        the end of a turn, while the daemon reads it)."""
        agent = resolve_agent(self.service.current(), params.agent)
        if agent.id not in self._known:
            self.refresh(agent.id)
        event = self._settled.get(agent.id)
        if event is not None:
            try:
                await asyncio.wait_for(event.wait(), SETTLE_WAIT)
            except TimeoutError:
                pass  # what is known so far
        view = (self._known.get(agent.id) or NONE).view()
        return {"agent": agent.id, **view}

    def get(self, agent_id: str) -> Outcome:
        """The agent's outcome as last refreshed (a first refresh starts when there is none)."""
        known = self._known.get(agent_id)
        if known is None:
            self.refresh(agent_id)
            return NONE
        return known

    def _on_event(self, _seq: int, event: ev.Event) -> None:
        match event:
            case ev.AgentRegistered() | ev.WorkspaceUpdated():
                self.refresh(event.agent)
            case ev.StateChanged() if event.state in TURN_ENDS:
                self.refresh(event.agent)
            case ev.AgentForgotten():
                self._known.pop(event.agent, None)
                self._rereads.pop(event.agent, None)
                self.transcripts.forget(event.agent)
            case _:
                pass

    def refresh(self, agent_id: str) -> None:
        """Read the agent's transcript and git again soon (once at a time per agent; a refresh
        asked for meanwhile runs after it)."""
        if agent_id in self._pending:
            self._again.add(agent_id)
            return
        self._pending.add(agent_id)
        self._settled.setdefault(agent_id, asyncio.Event()).clear()
        self.tasks.spawn(self._refresh(agent_id), f"outcome of {agent_id}")

    async def _refresh(self, agent_id: str) -> None:
        try:
            async with self._slots:
                outcome = await self._read(agent_id)
            if outcome is not None and agent_id in self.service.current().agents:
                self._known[agent_id] = outcome
                self._reread_if_behind(agent_id, outcome.behind)
        except Exception:
            log.exception("the outcome of %s could not be read", agent_id)
        finally:
            self._pending.discard(agent_id)
            if agent_id in self._again:
                self._again.discard(agent_id)
                self.refresh(agent_id)
            else:
                self._settled.pop(agent_id, asyncio.Event()).set()

    def _reread_if_behind(self, agent_id: str, behind: bool) -> None:
        """Read a transcript behind the Stop hook again a little later, a few times, for the
        reply's whole first line (the hook's is cut at 100 characters)."""
        done = self._rereads.get(agent_id, 0)
        if not behind or done >= REREADS:
            self._rereads.pop(agent_id, None)
            return
        self._rereads[agent_id] = done + 1
        self.tasks.spawn(self._reread(agent_id), f"outcome of {agent_id} again")

    async def _reread(self, agent_id: str) -> None:
        """The transcript alone read again (its change in git is as the refresh read it); a
        refresh under way or asked meanwhile reads both and decides again."""
        await asyncio.sleep(REREAD_AFTER)
        agent = self.service.current().agents.get(agent_id)
        known = self._known.get(agent_id)
        if agent is None or known is None or agent_id in self._pending:
            return
        reading = await self.transcripts.summary(agent)
        if agent_id in self._pending or self._known.get(agent_id) is not known:
            return
        plan, last, behind = _from_transcript(agent, reading)
        self._known[agent_id] = replace(known, plan=plan, last_message=last, behind=behind)
        self._reread_if_behind(agent_id, behind)

    async def _read(self, agent_id: str) -> Outcome | None:
        registry = self.service.current()
        agent = registry.agents.get(agent_id)
        if agent is None:
            return None
        reading = await self.transcripts.summary(agent)
        plan, last, behind = _from_transcript(agent, reading)

        def changed() -> BranchChange | None:
            where = where_of(agent, registry)
            return change_of(where) if where is not None else None

        try:
            change = await asyncio.to_thread(changed)
        except git.GitError as exc:
            log.warning("the change of %s could not be read: %s", agent.name, exc)
            change = None
        summary: ChangeSummary | None = None
        if change is not None:
            summary = {
                "files": change["files"],
                "added": change["added"],
                "removed": change["removed"],
                "uncommitted": change["uncommitted"],
            }
        return Outcome(plan, summary, last, behind)


def _from_transcript(
    agent: Agent, reading: Reading
) -> tuple[dict[str, int] | None, str | None, bool]:
    """The plan, the last reply's first line, and whether the transcript is behind the Stop
    hook (then the hook's reply is the last one)."""
    plan: dict[str, int] | None = None
    if reading.plan is not None and reading.plan.items:
        plan = {"done": reading.plan.done, "total": len(reading.plan.items)}
    last = first_line(reading.last_message)
    if agent.state is AgentState.DONE and agent.detail and not _tells(last, agent.detail):
        # The Stop hook's last_assistant_message (its first line) is the turn's last word:
        # Claude Code may run the hook before the reply is in its transcript, which then
        # still ends at an earlier reply, or none (read again soon where there is one).
        return plan, agent.detail, bool(reading.paths)
    return plan, last, False


def _tells(line: str | None, detail: str) -> bool:
    """Whether a transcript's first line of the last reply is the one the hook's detail
    (``one_line``: cut to 100 characters with "…") shows."""
    if line is None:
        return False
    return line.startswith(detail.removesuffix("…").strip())

"""Limits: what the screen says while a harness retries, and continuing agents after a reset.

The rules are ``core.limits``'; this module gathers the facts and carries them out
(docs/limits.md):

- **The screen while it retries.**  Claude Code says nothing in its hooks while it retries a
  429 or 529 ("✻ 5-hour limit reached · retrying in 4s (10:50pm) · attempt 4/10"); a
  working agent's output that holds "retrying" gets its screen read (at most once a
  second), and a new retry is recorded as ``limit-hit`` (not ended) with the row's detail.
  Also when the agent is still launching, idle or done: a busy daemon may take the turn's
  ``UserPromptSubmit`` after the line was drawn, and only the line says which limit it is.
- **codex's message.**  codex 0.171 ends a turn on its usage limit with no hook, and draws
  "■ You’ve hit your usage limit … try again at 12:15 AM." above its viewport: a working
  codex agent's output is read as text (its last 4 KiB), and the message makes it ``idle``
  with its limit (``limit-hit``, ended).
- **The continue.**  One timer, at the earliest due continue of ``core.limits.schedule``;
  when it fires, each due agent gets volee's labelled prompt (posted as volee's notice,
  typed into its session) and ``limit-continued``.  Not an agent whose screen shows Claude
  Code continuing by itself.  ``agents.continue`` is the person's "continue now" (one agent,
  or every waiting one).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from ...config import LimitsConfig
from ...core import events as ev
from ...core import limits as rules
from ...core.model import VOLEE, Agent, Harness, LimitKind, MessageKind
from ...core.states import AgentState
from ...harness import claude, codex
from ...ipc.methods import Method
from ...ipc.server import Connection
from ..clock import Timer
from ..context import Context
from ..errors import Refused
from ..params import Parameters, bad, decoder
from ..views import AgentView, agent_view, resolve_agent
from .runner import AgentsRunner

log = logging.getLogger(__name__)

#: A working agent's screen is read at most this often while its output says "retrying".
LOOK_EVERY = 1.0
#: How much of a working codex agent's output, as text, is kept to find its limit message.
CODEX_TAIL = 4096
#: How much of a Claude Code agent's last output is kept: a read of the PTY can cut its one
#: "retrying" in two, or leave the limit's name ("✻ 5-hour limit reached") in the read before.
CLAUDE_CARRY = 256
#: The states in which a Claude Code agent's screen may show a turn retrying a limit: working,
#: or one whose prompt's hook the daemon has not taken yet (launching, idle, done).
UNSEEN_TURN = frozenset(
    {AgentState.WORKING, AgentState.LAUNCHING, AgentState.IDLE, AgentState.DONE}
)
#: The states of a turn that runs (its retry line read on any output); any other ends it.
TURN_RUNS = frozenset({AgentState.WORKING, AgentState.LAUNCHING})
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
_CLOCK = re.compile(
    r"^(?:(?P<month>[A-Za-z]{3})\s+(?P<day>\d{1,2}),?\s+)?(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?"
    r"\s*(?P<half>[ap]m)?$",
    re.IGNORECASE,
)


def local_clock(at: float) -> str:
    """An epoch time as a clock time in local time ("16:20")."""
    return time.strftime("%H:%M", time.localtime(at))


def reset_time(clock: str, now: float) -> float | None:
    """The epoch time of a reset the screen names ("1:38am", "Dec 3, 4pm"), local time: the
    first such time after ``now`` (None when it reads as no time)."""
    match = _CLOCK.match(clock.strip())
    if match is None:
        return None
    hour, minute = int(match["hour"]), int(match["minute"] or 0)
    half = (match["half"] or "").lower()
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    base = datetime.fromtimestamp(now)
    if match["month"]:
        try:
            month = datetime.strptime(match["month"].title(), "%b").month
            when = base.replace(month=month, day=int(match["day"]), hour=hour, minute=minute)
        except ValueError:
            return None
        if when.timestamp() < now - 86400:
            when = when.replace(year=when.year + 1)
        return when.replace(second=0, microsecond=0).timestamp()
    when = base.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when.timestamp() <= now - 60:
        when += timedelta(days=1)
    return when.timestamp()


_CODEX_DATE = re.compile(
    r"^(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?:st|nd|rd|th)?, (?P<year>\d{4}) (?P<clock>.+)$"
)


def codex_reset(seen: codex.ScreenLimit, now: float) -> float | None:
    """The epoch time of the reset codex's screen names (local time), None when it names none."""
    if seen.clock is None:
        return None
    match = _CODEX_DATE.match(seen.clock)
    if match is None:
        return reset_time(seen.clock, now)
    try:
        day = datetime.strptime(
            f"{match['year']} {match['month']} {match['day']}", "%Y %b %d"
        ).replace(hour=12)
    except ValueError:
        return None
    return reset_time(match["clock"], day.replace(hour=0, minute=0).timestamp())


def policy_of(limits: LimitsConfig, restart_delays: tuple[float, ...]) -> rules.LimitPolicy:
    """The rules' policy from ``[limits]``; the budget is the restart bounds' (M38)."""
    return rules.LimitPolicy(
        resume=limits.resume,
        margin=limits.margin,
        stagger=limits.stagger,
        unknown_wait=limits.unknown_wait,
        budget=len(restart_delays),
    )


class ContinueParams(Parameters, frozen=True, kw_only=True):
    """``agents.continue``: one agent, or ``all`` those that wait on a usage limit."""

    agent: str | None = None
    all: bool = False


class Limits:
    """Reads the screens of retrying agents, and continues agents after their limit."""

    def __init__(self, ctx: Context, agents: AgentsRunner) -> None:
        self.service = ctx.service
        self.clock = ctx.clock
        self.tasks = ctx.tasks
        self.agents = agents
        self.screens = agents.screens
        self.policy = policy_of(ctx.config.limits, ctx.config.agents.restart_delays)
        self.clock_text: Callable[[float], str] = local_clock
        self.timer: tuple[float, Timer] | None = None
        self._last = float("-inf")  # when volee last continued an agent on its own
        self.continued = 0
        self._looked: dict[str, float] = {}
        self._looking: set[str] = set()
        self._codex_tail: dict[str, str] = {}
        # Claude Code's output as text (a tail) and the last retry line seen in it: what the
        # rendered screen may have lost by the time the turn ends (the line redrawn as the
        # error) still says which limit a bare "rate_limit" StopFailure ended the turn on.
        self._claude_tail: dict[str, str] = {}
        self._claude_carry: dict[str, bytes] = {}  # the last CLAUDE_CARRY bytes of output
        self._retried: dict[str, claude.ScreenRetry] = {}
        self._running = False
        self.screens.on_data.append(self._data)
        self.screens.on_rows.append(self._rows)
        self.service.listen(self._on_event)
        ctx.methods.add(Method.AGENTS_CONTINUE, self.api_continue, decoder(ContinueParams))
        ctx.status.add("limits", self.status)
        ctx.closing.add(self.close)

    def status(self) -> str:
        waiting = [a for a in self.service.current().agents.values() if rules.waits(a)]
        due = f"; next continue at {local_clock(self.timer[0])}" if self.timer else ""
        return f"{len(waiting)} agent(s) wait on a limit, {self.continued} continued{due}"

    async def close(self) -> None:
        if self.timer is not None:
            self.timer[1].cancel()
            self.timer = None

    def start(self) -> None:
        """Arm the timer for what the registry holds (after the daemon took its hosts back)."""
        self._running = True
        self.reschedule()

    # --- the schedule -----------------------------------------------------------------------

    def _on_event(self, _seq: int, event: ev.Event) -> None:
        if isinstance(event, ev.LimitHit) and event.ended:
            self._ended_on_rate(event)
        elif isinstance(event, ev.LimitContinued | ev.AgentForgotten):
            self._retried.pop(event.agent, None)
            self._claude_tail.pop(event.agent, None)
            if isinstance(event, ev.AgentForgotten):
                self._looked.pop(event.agent, None)
                self._claude_carry.pop(event.agent, None)
                self._codex_tail.pop(event.agent, None)
        elif isinstance(event, ev.StateChanged) and event.state not in TURN_RUNS:
            # The turn ended (or waits on the person): its retry line is no longer read. What
            # the line said stays for the limit a StopFailure's "idle" is about to record.
            self._claude_tail.pop(event.agent, None)
            if event.state is not AgentState.IDLE:
                self._retried.pop(event.agent, None)
        if isinstance(
            event,
            ev.LimitHit
            | ev.LimitContinued
            | ev.StateChanged
            | ev.StopRequested
            | ev.AgentForgotten
            | ev.MessagePosted,
        ):
            self.reschedule()

    def reschedule(self) -> None:
        if not self._running:
            return
        due = rules.schedule(self.service.current().agents.values(), self.policy)
        first = min((d.at for d in due), default=None)
        if first is not None:
            # Never two continues closer than the stagger, even when a late timer (a loaded
            # machine) finds several of them due at once.
            first = max(first, self._last + self.policy.stagger)
        if self.timer is not None and self.timer[0] == first:
            return
        if self.timer is not None:
            self.timer[1].cancel()
            self.timer = None
        if first is not None:
            self.timer = (first, self.clock.call_at(first, self._fire))

    def _fire(self) -> None:
        self.timer = None
        self.tasks.spawn(self.continue_due(), "limits-continue")

    async def continue_due(self) -> list[str]:
        """Continue the first agent whose time has come, if the last continue is a stagger
        ago (the timer is armed again for the next); returns the ids continued."""
        now = self.clock.now()
        done: list[str] = []
        due = rules.schedule(self.service.current().agents.values(), self.policy)
        for item in due[:1] if now >= self._last + self.policy.stagger else []:
            agent = self.service.current().agents.get(item.agent)
            if agent is None or item.at > now:
                continue
            try:
                self._last = now
                if await self.continue_agent(agent, automatic=True):
                    done.append(agent.id)
            except (Refused, OSError) as exc:
                log.warning("could not continue %s after its limit: %s", agent.name, exc)
        self.reschedule()
        return done

    async def continue_agent(self, agent: Agent, *, automatic: bool) -> bool:
        """Type volee's labelled prompt into a waiting agent and record it (False: Claude Code
        continues it itself, so volee leaves it)."""
        limit = agent.limit
        if not rules.waits(agent) or limit is None:
            raise Refused(f"agent {agent.name} does not wait on a limit ({agent.state})")
        if agent.harness is Harness.CLAUDE:
            snapshot = await self.screens.snapshot(agent.id)
            if snapshot is not None and claude.auto_continues(snapshot.tail(20)):
                log.info("%s: Claude Code continues it after the limit itself", agent.name)
                return False
        now = self.clock.now()
        text = rules.continue_prompt(limit, self.clock_text, now)
        await self.service.commit(
            [ev.LimitContinued(at=now, agent=agent.id, automatic=automatic, prompt=text)]
        )
        message = await self.agents.post(agent, VOLEE, text, MessageKind.NOTICE)
        await self.agents.deliver(agent.id, text, message)
        self.continued += 1
        return True

    # --- the person's "continue now" ------------------------------------------------------

    async def api_continue(self, _conn: Connection, params: ContinueParams) -> list[AgentView]:
        """``{agent}`` or ``{all: true}``: continue now; answers the agents' views."""
        registry = self.service.current()
        if params.all:
            targets = [a for a in registry.by_urgency() if rules.waits(a)]
        elif params.agent is not None:
            targets = [resolve_agent(registry, params.agent)]
        else:
            raise bad("name an agent, or give all: true for every agent that waits on a limit")
        for agent in targets:
            await self.continue_agent(agent, automatic=False)
        fresh = self.service.current()
        return [agent_view(fresh.agents[a.id]) for a in targets if a.id in fresh.agents]

    # --- the screen while it retries --------------------------------------------------------

    def _data(self, agent_id: str, data: bytes) -> None:
        agent = self.service.current().agents.get(agent_id)
        if agent is None or agent.harness is Harness.CODEX:
            if agent is not None and agent.state is AgentState.WORKING:
                self._codex_output(agent_id, data)
            else:
                self._codex_tail.pop(agent_id, None)
            return
        # Not only while it works: a busy daemon may not have taken the turn's UserPromptSubmit
        # when Claude Code draws its retry line (the agent still launching, idle or done), and
        # the line alone says which limit the bare StopFailure will end the turn on.
        if agent.harness is not Harness.CLAUDE:
            return
        carry = self._claude_carry.get(agent_id, b"")
        # "retrying" whole in this read, or cut between the last read and this one.
        said = b"retrying" in data or b"retrying" in carry[-16:] + data[:16]
        self._claude_carry[agent_id] = (
            data[-CLAUDE_CARRY:] if len(data) >= CLAUDE_CARRY else (carry + data)[-CLAUDE_CARRY:]
        )
        if agent_id in self._claude_tail:
            self._claude_output(agent_id, data)
        elif said:  # the line's start (the limit's name) may be in the read before
            self._claude_output(agent_id, carry + data)
        if agent.state not in UNSEEN_TURN:
            return
        # Claude Code redraws only the cells that change: "retrying" is in its output once per
        # retry line, the next attempts (and the limit's name, after a first "API error ·
        # retrying") come as bare cells. A turn seen retrying has its screen read again on any
        # output (at most every LOOK_EVERY), until the turn ends.
        if not said and agent_id not in self._claude_tail:
            return
        if agent_id in self._looking:
            return
        self._looking.add(agent_id)
        self.tasks.spawn(self._look(agent_id, agent.state), f"limits-look-{agent_id}")

    def _rows(self, agent_id: str, lines: list[str]) -> None:
        """Rows an output changed, as the agent's screen is fed (in the feeding thread: one
        dict read and write, no event): a retry line of the plan's limit is kept for the bare
        StopFailure that may end the turn, even where "retrying" never came whole."""
        if not any("retrying" in line for line in lines):
            return  # nearly every feed of every agent: no regex for them
        seen = claude.screen_retry(lines)
        if seen is not None and seen.kind.plan:
            self._keep_retry(agent_id, seen)

    def _keep_retry(self, agent_id: str, seen: claude.ScreenRetry) -> None:
        """Keep the last retry line of the plan's limit seen in the turn; the in-flight form
        ("retrying… · attempt 2/4") shows no clock, so the clock said before stays."""
        old = self._retried.get(agent_id)
        if seen.clock is None and old is not None and old.kind is seen.kind:
            seen = dataclasses.replace(seen, clock=old.clock)
        self._retried[agent_id] = seen

    def _claude_output(self, agent_id: str, data: bytes) -> None:
        """Keep the last retry line Claude Code's output said, read as text (escapes dropped)."""
        tail = _text_tail(self._claude_tail, agent_id, data)
        if "retrying" not in tail:
            return
        # The last retry line: from the mark before its last "retrying" to the end.
        cut = tail.rfind("retrying")
        start = max(tail.rfind(mark, 0, cut) for mark in ("✻", "●", "\n", "\r"))
        seen = claude.screen_retry([" ".join(tail[start + 1 :].split())])
        if seen is not None and seen.kind.plan:
            self._keep_retry(agent_id, seen)

    def _ended_on_rate(self, hit: ev.LimitHit) -> None:
        """A turn ended on a bare rate limit: where Claude Code's output said which plan limit
        it retried, that limit (and its reset) is the one the turn ended on."""
        seen = self._retried.pop(hit.agent, None)
        self._claude_tail.pop(hit.agent, None)
        if hit.resets_at is not None:
            return
        if seen is None:
            if hit.kind is LimitKind.RATE:
                self.tasks.spawn(self._ended_unread(hit), f"limits-unread-{hit.agent}")
            return
        # A bare "rate", or the limit seen retrying whose clock no read of the screen caught.
        if hit.kind is not LimitKind.RATE and hit.kind is not seen.kind:
            return
        agent = self.service.current().agents.get(hit.agent)
        if agent is None:
            return
        now = self.clock.now()
        resets = reset_time(seen.clock, now) if seen.clock else None

        async def take() -> None:
            fresh = self.service.current().agents.get(hit.agent)
            if fresh is not None:
                await self._ended_before_read(fresh, seen.kind, resets, now)

        self.tasks.spawn(take(), f"limits-ended-{hit.agent}")

    async def _ended_unread(self, hit: ev.LimitHit) -> None:
        """A turn ended on a bare rate limit and nothing read a retry line in its output: the
        word "retrying" can come cut by the cells Claude Code leaves as they were (a letter the
        row already held at that place; seen in the 30-agent trial). The output not yet fed to
        the screen is fed one part at a time, and the last plan's limit a retry line showed is
        the one the turn ended on."""
        await self.screens.feed(hit.agent)  # its row watcher (_rows) keeps a retry line
        seen = self._retried.pop(hit.agent, None)
        agent = self.service.current().agents.get(hit.agent)
        if seen is None or agent is None:
            return
        now = self.clock.now()
        resets = reset_time(seen.clock, now) if seen.clock else None
        await self._ended_before_read(agent, seen.kind, resets, now)

    def _codex_output(self, agent_id: str, data: bytes) -> None:
        """codex ends its turn on a usage limit without a hook, and draws the message above
        its viewport (where an emulated screen does not keep it): read its output as text."""
        tail = _text_tail(self._codex_tail, agent_id, data)
        if "usage" not in tail or agent_id in self._looking:
            return
        seen = codex.screen_limit([" ".join(tail.split())])
        if seen is None or seen.clock is None:
            return  # not said whole yet (the reset comes last)
        self._codex_tail.pop(agent_id, None)
        self._looking.add(agent_id)
        self.tasks.spawn(self._codex_limited(agent_id, seen), f"limits-codex-{agent_id}")

    async def _look(self, agent_id: str, then: AgentState) -> None:
        """Read the retry line of an agent whose output said "retrying" (in state ``then``)."""
        try:
            wait = self._looked.get(agent_id, 0.0) + LOOK_EVERY - time.monotonic()
            if wait > 0:
                await self.clock.wait(asyncio.Event(), wait)
            self._looked[agent_id] = time.monotonic()
            snapshot = await self.screens.snapshot(agent_id)
            if snapshot is None:
                return
            seen = claude.screen_retry(snapshot.tail(12))
            agent = self.service.current().agents.get(agent_id)
            if seen is None or agent is None:
                return
            now = self.clock.now()
            resets = reset_time(seen.clock, now) if seen.clock else None
            old = agent.limit
            if resets is None and old is not None and old.kind is seen.kind:
                resets = old.resets_at  # "retrying… · attempt 2/4" (in flight) shows no clock
            said = self._retried.get(agent_id)
            if resets is None and said is not None and said.kind is seen.kind and said.clock:
                resets = reset_time(said.clock, now)  # the clock the output said, as text
            if rules.waits(agent):
                await self._ended_before_read(agent, seen.kind, resets, now)
                return
            if agent.state is not AgentState.WORKING and agent.state is not then:
                # A hook came since the line (the turn ended): the screen may not have caught up.
                return
            # Working, or a turn whose UserPromptSubmit the daemon has not taken yet (the line
            # came while the agent was launching, idle or done, and no hook since): it works.
            if (
                old is not None
                and not old.ended
                and (old.kind, old.attempt, old.attempts, old.resets_at)
                == (seen.kind, seen.attempt, seen.attempts, resets)
            ):
                return
            hit = ev.LimitHit(
                at=now,
                agent=agent_id,
                kind=seen.kind,
                resets_at=resets,
                attempt=seen.attempt,
                attempts=seen.attempts,
            )
            limit = rules.limit_of(hit)
            detail = rules.detail(limit)
            await self.service.commit(
                [
                    hit,
                    ev.StateChanged(
                        at=now,
                        agent=agent_id,
                        state=AgentState.WORKING,
                        detail=detail,
                        progress=False,
                    ),
                ]
            )
        except Refused as exc:
            log.info("the retry of %s was not recorded: %s", agent_id, exc)
        finally:
            self._looking.discard(agent_id)

    async def _ended_before_read(
        self, agent: Agent, kind: LimitKind, resets: float | None, now: float
    ) -> None:
        """The turn ended on the limit (``StopFailure``) before its retry line was read (a busy
        daemon): the hook says only "rate_limit", the line which limit and when it resets. The
        limit the turn ended on takes what the line says; anything else is left as it is."""
        limit = agent.limit
        if not rules.waits(agent) or limit is None or limit.resets_at is not None:
            return
        if not kind.plan or limit.kind not in (LimitKind.RATE, kind):
            return
        if limit.kind is kind and resets is None:
            return  # nothing the limit does not say already
        hit = ev.LimitHit(
            at=now,
            agent=agent.id,
            kind=kind,
            resets_at=resets,
            ended=True,
            attempt=limit.attempt,
            attempts=limit.attempts,
            message=limit.message,
        )
        await self.service.commit([hit])
        log.info("%s: the turn ended on %s, read from its retry line after its end", agent.id, kind)

    async def _codex_limited(self, agent_id: str, seen: codex.ScreenLimit) -> None:
        try:
            agent = self.service.current().agents.get(agent_id)
            if agent is None or agent.state is not AgentState.WORKING:
                return
            now = self.clock.now()
            resets = codex_reset(seen, now)
            # codex names no window: a reset within five hours is taken as the 5-hour one.
            window = resets is None or resets - now <= 5 * 3600
            kind = LimitKind.FIVE_HOUR if window else LimitKind.SEVEN_DAY
            await self.service.commit(
                [
                    ev.StateChanged(
                        at=now,
                        agent=agent_id,
                        state=AgentState.IDLE,
                        detail=f"limited: {rules.KIND_TEXT[kind]}",
                    ),
                    ev.LimitHit(
                        at=now,
                        agent=agent_id,
                        kind=kind,
                        resets_at=resets,
                        ended=True,
                        message="You've hit your usage limit",
                    ),
                ]
            )
        except Refused as exc:
            log.info("the limit of %s was not recorded: %s", agent_id, exc)
        finally:
            self._looking.discard(agent_id)


def _text_tail(tails: dict[str, str], agent_id: str, data: bytes) -> str:
    """The last CODEX_TAIL characters of an agent's output as text (escapes dropped), with
    ``data`` added; kept in ``tails``."""
    text = _ESCAPES.sub(b" ", data).decode("utf-8", "replace")
    tail = (tails.get(agent_id, "") + text)[-CODEX_TAIL:]
    tails[agent_id] = tail
    return tail

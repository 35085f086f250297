"""Answering an agent: allow, deny, pick an option or reply (its screen: ``screen_keys.py``).

IPC methods (all here, in one class, so that a per-caller rule can guard them):

- ``agents.allow {agent, request?, always?}``
- ``agents.deny {agent, request?, reason?}``
- ``agents.answer {agent, request?, option? | text?}`` (questions: an option, 1-based, or a reply)

An answer can never hit the wrong dialog: the agent's open request must be the one named
(``request``, when given), not answered yet, and its dialog must be on the agent's rendered
screen (``harness/dialogs.py`` checks the question, the options and the request's own input)
before any key is typed.  Otherwise the answer is refused with the reason and nothing is
typed.  An answer is recorded (``request-answered``), so it never goes in twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...core import events as ev
from ...core.answer import Answer, AnswerError, AnswerKind, AnswerMethod
from ...core.model import HUMAN, VOLEE, Agent, MessageKind, Request
from ...core.requests import request_id as new_request_id
from ...core.states import AgentState
from ...harness.dialogs import Dialog, Keys, answer_keys, dialog_for
from ...hosts.launcher import HostClient
from ...ipc.methods import Method
from ...ipc.server import Connection
from ..context import Context
from ..errors import NotFound, Refused
from ..params import AgentParams, bad, decoder
from ..views import resolve_agent
from .host_io import type_keys
from .results import Answered
from .runner import AgentsRunner
from .screens import Screens, Snapshot

log = logging.getLogger(__name__)

#: How long an answer waits for its dialog to be drawn (a hook comes before its dialog).
DIALOG_WAIT = 3.0
#: How long a refusal waits for its dialog to go before the reason is typed as a message.
CLOSE_WAIT = 3.0
#: A dialog takes keys this long after it is first seen drawn (Claude Code 2.1.332 drops a
#: key typed within ~100 ms of drawing its dialog).
KEY_READY = 0.3
#: How long the harness has to show it took an answer (any output) before volee types it
#: again, and how many times it types it.
TAKEN_WAIT = 2.0
KEY_TRIES = 3
#: How long output must settle before volee looks whether a dialog is still on screen.
SETTLE = 1.0
#: Reads of an asking agent's screen once its dialog was seen, at most one this often:
#: Claude Code blinks a bullet twice a second while it asks (a read is ~1.4 ms, issue 27).
LOOK_EVERY = 2.0
#: How long an agent's host holds its output back while the dialog of its open request is on
#: screen and seen (``host_io.WATCH_EVERY_MS`` otherwise).  Asking, Claude Code blinks its
#: bullet every 600 ms; held 500 ms each blink woke the daemon (0.068 s of its CPU a minute),
#: held 2 s once the dialog was seen, 0.032-0.034 s (docs/performance.md); now the most a host
#: holds.  What the program draws after keys or a resize reach it (a dialog answered in its
#: terminal) is sent at once all the same (``hosts.requests.STIRRED``), every read that
#: decides what a key did is fresh, and a hook that changes the request ends the hold.
#: After a new watch connection the hold is its own again.
DIALOG_EVERY_MS = 10_000
#: An asking agent's output up to this size is fed to its screen at once, on the loop (pyte:
#: about 20 us for a blink of 44 bytes; 10 s of blinks are about 730 bytes): one that changed
#: only rows above its dialog needs no read of the screen (``Answers._above_dialog``).
FEED_NOW = 2048
ANSWERED_THERE = "answered in its terminal"


def denied_notice(request: Request) -> str:
    """volee's message after a refusal without a reason: the agent carries on without it."""
    return (
        f"[volee] The person denied this: {request.summary}. Do not do it; carry on with "
        "the rest of your task without it, or say what you would need instead."
    )


class AnsweredParams(AgentParams, frozen=True, kw_only=True):
    """What an answer names besides the answer itself: the agent, and the request (None: the
    one open now)."""

    request: str | None = None


@dataclass(frozen=True)
class AnswerCall:
    """An answer call, decoded once at the boundary."""

    agent: str
    answer: Answer
    request: str | None


def answer_decoder(method: AnswerMethod) -> Callable[[dict[str, Any]], AnswerCall]:
    """How the method table reads ``method``'s parameters: the agent and request as any
    method's, the rest as one ``Answer`` (its refusal a bad_request)."""
    names = decoder(AnsweredParams)

    def decode(params: dict[str, Any]) -> AnswerCall:
        named = names(params)
        try:
            answer = Answer.from_call(method, params)
        except AnswerError as exc:
            raise bad(str(exc)) from None
        return AnswerCall(named.agent, answer, named.request)

    return decode


class Answers:
    """The answers to agents' requests, and their screens."""

    def __init__(self, ctx: Context, agents: AgentsRunner, screens: Screens) -> None:
        self.service = ctx.service
        self.clock = ctx.clock
        self.agents = agents
        self.screens = screens
        self.tasks = ctx.tasks
        self._locks: dict[str, asyncio.Lock] = {}
        # The request whose dialog was seen on screen, by agent (one open request at a time:
        # kept per agent, not per request, so that answered ones do not pile up), and agents
        # with a look scheduled.
        self._seen: dict[str, tuple[str, float]] = {}  # agent id -> (request id, first seen)
        self._looking: set[str] = set()
        self._again: set[str] = set()
        self._looked_at: dict[str, float] = {}  # agent id -> when its screen was last read
        #: agent id -> (request id, the row its dialog's text starts on) at the last read
        self._dialog_top: dict[str, tuple[str, int]] = {}
        self.screens.on_output.append(self._output)
        # A request's dialog is watched for on screen from when it opens (_event).
        self.service.listen(self._event)
        for name, method in (
            (Method.AGENTS_ALLOW, AnswerMethod.ALLOW),
            (Method.AGENTS_DENY, AnswerMethod.DENY),
            (Method.AGENTS_ANSWER, AnswerMethod.ANSWER),
        ):
            ctx.methods.add(name, self.api_answer, answer_decoder(method))

    # --- the IPC methods --------------------------------------------------------------------

    def _agent(self, ref: str) -> Agent:
        return resolve_agent(self.service.current(), ref)

    async def api_answer(self, _conn: Connection, call: AnswerCall) -> Answered:
        """``agents.allow``, ``agents.deny`` and ``agents.answer``: one ``Answer`` each."""
        return await self.answer(self._agent(call.agent), call.answer, call.request)

    # --- answering --------------------------------------------------------------------------

    async def answer(
        self, agent: Agent, answer: Answer, request_id: str | None = None, by: str = HUMAN
    ) -> Answered:
        """Type the answer to ``agent``'s open request, once its dialog is confirmed on screen.

        Its keys are asked for once, when the dialog is found; typed again (the same keys)
        while the very dialog stays on screen."""
        lock = self._locks.setdefault(agent.id, asyncio.Lock())
        async with lock:
            request = self._open_request(agent.id, request_id)
            keys = await self._keys(agent, request, answer)
            client = await self.agents.running_host(agent.id)
            if client is None:
                raise Refused(f"agent {agent.name} has no running program to answer")
            # The last check, then the answer is recorded before any key: from now on a
            # second answer is refused (the commit refuses it if anything changed meanwhile).
            self._open_request(agent.id, request.id)
            now = self.clock.now()
            await self.service.commit(
                [
                    ev.RequestAnswered(
                        at=now, agent=agent.id, request=request.id, answer=answer.word, by=by
                    )
                ]
            )
            if not await self._type(agent, request, keys, client):
                await self._reopen(agent.id, request)
                raise Refused(
                    f"agent {agent.name} did not take the answer ({KEY_TRIES} tries): its "
                    "dialog is still on screen; answer it again, or in its terminal"
                )
            if keys.text:
                await asyncio.to_thread(client.send_text, keys.text, keys.enter)
            if answer.kind is AnswerKind.DENY:
                await self._denied(agent, request)
                await self._carry_on(agent, request, answer, client)
        current = self.service.current().agents.get(agent.id)
        return {
            "agent": agent.id,
            "name": agent.name,
            "request": request.id,
            "answer": answer.word,
            "summary": request.summary,
            "state": str(current.state) if current else None,
        }

    def _open_request(self, agent_id: str, request_id: str | None) -> Request:
        """The agent's open, unanswered request (the one named, if named), or a refusal."""
        registry = self.service.current()
        agent = registry.agents.get(agent_id)
        if agent is None:
            name = registry.name_of(agent_id) or agent_id
            raise NotFound(f"agent {name} is gone (forgotten); there is nothing to answer")
        request = agent.request
        if request is None:
            now = f"{agent.state}" + (f": {agent.detail}" if agent.detail else "")
            raise Refused(f"agent {agent.name} asks nothing now (it is {now})")
        if request_id is not None and request_id != request.id:
            raise Refused(f"agent {agent.name} no longer asks that; it now asks: {request.summary}")
        if request.answered is not None:
            raise Refused(
                f"agent {agent.name}'s request ({request.summary}) was already answered: "
                f"{request.answered}"
            )
        return request

    async def _keys(self, agent: Agent, request: Request, answer: Answer) -> Keys:
        """The keys for ``answer``, once the screen shows the request's dialog (waiting a
        little for it to be drawn); a refusal saying why otherwise."""
        if not self.screens.live(agent.id):
            raise Refused(
                f"volee cannot see agent {agent.name}'s screen (it does not run in a volee "
                "host of this version), so it will not type into it; answer in its terminal"
            )
        deadline = self.clock.now() + DIALOG_WAIT
        while True:
            changed = self.screens.changed(agent.id)
            snapshot = await self.screens.snapshot(agent.id, fresh=True)
            result = dialog_for(snapshot.lines if snapshot else [], request)
            if isinstance(result, Dialog):
                # Asked once: the same keys are typed again if the dialog does not take them.
                keys = answer_keys(result, request, answer)
                if not isinstance(keys, Keys):
                    raise Refused(f"not answered, nothing typed: {keys}")
                # A dialog takes keys a moment after it is drawn: not sooner than KEY_READY
                # after volee first saw it.
                seen = self._seen_at(agent.id, request.id)
                ready = seen + KEY_READY - self.clock.now()
                if ready > 0:
                    await self.clock.wait(asyncio.Event(), ready)
                return keys
            remaining = deadline - self.clock.now()
            if remaining <= 0 or not _may_still_be_drawn(result):
                raise Refused(f"not answered, nothing typed: {result}")
            await self.clock.wait(changed, min(remaining, 0.5))
            self._open_request(agent.id, request.id)

    async def _taken(self, agent_id: str, request: Request, version: int) -> bool:
        """Whether the harness took the keys: the request moved on, its dialog left the
        screen, or it printed anything at all after them (``version``: the bytes of output
        seen before the keys).  A harness that drops a key prints nothing."""

        def past(snapshot: Snapshot) -> bool:
            agent = self.service.current().agents.get(agent_id)
            if agent is None or agent.request is None or agent.request.id != request.id:
                return True
            return not _still_shows(snapshot, request)

        return await self.screens.moved(agent_id, version, self.clock, TAKEN_WAIT, past)

    async def _type(self, agent: Agent, request: Request, keys: Keys, client: HostClient) -> bool:
        """Type ``keys`` until the harness takes them (at most KEY_TRIES times); False if its
        dialog is still on screen after the last."""
        for attempt in range(1, KEY_TRIES + 1):
            # Fresh (as every read here): output its host still holds back (host_io's
            # WATCH_EVERY_MS) must not count as the harness taking the keys.
            shown = await self.screens.snapshot(agent.id, fresh=True)
            version = shown.version if shown is not None else 0
            await asyncio.to_thread(type_keys, client, keys.keys)
            if await self._taken(agent.id, request, version):
                return True
            # The very dialog is still there: the key came before the harness listened (it
            # draws its dialog a moment before it reads keys). Check the screen; type again.
            snapshot = await self.screens.snapshot(agent.id, fresh=True)
            if snapshot is None or not _still_shows(snapshot, request):
                return True  # it moved on meanwhile
            log.info("%s did not take the answer (try %d); typing it again", agent.name, attempt)
        return False

    async def _reopen(self, agent_id: str, request: Request) -> None:
        """An answer its harness never took: the request is open again (a new id)."""
        now = self.clock.now()
        agent = self.service.current().agents.get(agent_id)
        if agent is None or agent.request is None or agent.request.id != request.id:
            return
        fresh = replace(
            request,
            id=new_request_id(agent_id, now, request.kind, request.summary),
            answered=None,
            answered_by=None,
            answered_at=None,
        )
        await self.service.commit(
            [
                ev.StateChanged(
                    at=now,
                    agent=agent_id,
                    state=AgentState.NEEDS_INPUT,
                    detail=agent.detail,
                    request=fresh,
                )
            ]
        )

    async def _denied(self, agent: Agent, request: Request) -> None:
        """A refused dialog ends the turn and no hook says so (Claude Code and codex both)."""
        try:
            await self.service.commit(
                [
                    ev.StateChanged(
                        at=self.clock.now(),
                        agent=agent.id,
                        state=AgentState.IDLE,
                        detail=f"you denied {request.summary}",
                    )
                ]
            )
        except Refused as exc:
            log.info("the refusal of %s's request was not recorded: %s", agent.name, exc)

    async def _carry_on(
        self, agent: Agent, request: Request, answer: Answer, client: HostClient
    ) -> None:
        """After a refusal the agent waits: tell it the reason (or that it may carry on)."""
        deadline = self.clock.now() + CLOSE_WAIT
        while self.clock.now() < deadline:
            snapshot = await self.screens.snapshot(agent.id, fresh=True)
            if snapshot is None or not _still_shows(snapshot, request):
                break
            await self.clock.wait(self.screens.changed(agent.id), 0.2)
        if answer.reason:
            sender, kind, body = HUMAN, MessageKind.TEXT, answer.reason
        else:
            sender, kind, body = VOLEE, MessageKind.NOTICE, denied_notice(request)
        current = self.service.current().agents.get(agent.id)
        if current is None:
            return
        message_id = await self.agents.post(current, sender, body, kind)
        try:
            await asyncio.to_thread(client.send_text, body)
        except Exception as exc:  # the refusal went in; the message stays undelivered
            log.warning("the reason for denying %s was not delivered: %s", agent.name, exc)
            return
        await self.service.commit(
            [ev.MessageDelivered(at=self.clock.now(), message=message_id, recipient=agent.id)]
        )

    # --- what it asks, as it opens and ends ---------------------------------------------------

    def _event(self, _seq: int, event: ev.Event) -> None:
        if isinstance(event, ev.AgentForgotten):  # nothing of it is kept (the soak, issue 22)
            self._locks.pop(event.agent, None)
            self._seen.pop(event.agent, None)
            self._looked_at.pop(event.agent, None)
            self._dialog_top.pop(event.agent, None)
            return
        if isinstance(event, ev.RequestAnswered):
            self.screens.probe(event.agent, None)
            self._kept_top(event.agent, None)
            return
        if not isinstance(event, ev.StateChanged):
            return
        self._watch_for_dialog(event.agent)
        if event.request is None:
            self._kept_top(event.agent, None)
            return
        # A request told after its dialog was drawn (a hook late or spooled under load) would
        # never be seen on screen, so its dialog's going would count for nothing (ci-3): look
        # now, not only at the next output.
        self._output(event.agent)

    # --- answered in the agent's own terminal -------------------------------------------------

    def _output(self, agent_id: str) -> None:
        """New output of an agent: if it asks something, look whether its dialog is (still)
        on screen; output during a look makes it look once more."""
        agent = self.service.current().agents.get(agent_id)
        request = agent.request if agent is not None else None
        if request is not None and request.answered is not None:
            request = None
        if self._above_dialog(agent_id, request):
            return
        if agent_id in self._looking:
            self._again.add(agent_id)
            return
        if agent is None or request is None:
            self._looked_at.pop(agent_id, None)
            return
        self._looking.add(agent_id)
        self.tasks.spawn(self._look(agent_id), f"look at {agent.name}'s dialog")

    def _above_dialog(self, agent_id: str, request: Request | None) -> bool:
        """Whether this output of an agent asking ``request`` (open, unanswered) changed only
        rows above its dialog, as the last read saw it: the dialog is as it was, and the
        screen is not read for it. Claude Code blinks its tool line's bullet twice a second
        while it asks (issue 27): each blink woke a read (a worker thread, the screen
        rendered, the dialog parsed)."""
        kept = self._dialog_top.get(agent_id)
        if kept is None:
            return False
        if request is None or request.id != kept[0]:
            self._kept_top(agent_id, None)
            return False
        try:
            rows = self.screens.feed_now(agent_id, FEED_NOW)
        except Exception:  # a row watcher's or a probe's failure: never the output's relay
            log.exception("feeding %s's output at once failed", agent_id)
            return False
        return rows is not None and all(row < kept[1] for row in rows)

    def _kept_top(self, agent_id: str, kept: tuple[str, int] | None) -> None:
        """Keep where the open request's dialog starts on screen (None: none is kept), and
        have its host hold the output back ``DIALOG_EVERY_MS`` while one is: what comes then
        is mostly the bullet's blink (issue 27), and the dialog was seen already, so its going
        is seen in the next frame all the same."""
        if kept is None:
            self._dialog_top.pop(agent_id, None)
            self.screens.hold(agent_id, None)
        else:
            self._dialog_top[agent_id] = kept
            self.screens.hold(agent_id, DIALOG_EVERY_MS)

    def _wait_before_look(self, agent_id: str) -> float:
        """No wait until the request's dialog was seen (an answer waits for it), then
        ``LOOK_EVERY`` between two reads of the screen."""
        agent = self.service.current().agents.get(agent_id)
        request, last = agent.request if agent else None, self._looked_at.get(agent_id)
        if request is None or last is None or not self._was_seen(agent_id, request.id):
            return 0.0
        return max(0.0, last + LOOK_EVERY - self.clock.now())

    async def _look(self, agent_id: str) -> None:
        try:
            while True:
                if (wait := self._wait_before_look(agent_id)) > 0:  # output meanwhile: this look
                    await self.clock.wait(asyncio.Event(), wait)
                self._again.discard(agent_id)
                self._looked_at[agent_id] = self.clock.now()
                if await self._dialog_gone(agent_id) is not None:
                    # Gone: look again a moment later (a redraw is not an answer), then end
                    # the request unless a hook said what happened (the tool ran) meanwhile.
                    await self.clock.wait(asyncio.Event(), SETTLE)
                    request = await self._dialog_gone(agent_id)
                    if request is not None:
                        await self._ended_in_terminal(agent_id, request)
                if agent_id not in self._again:
                    return
        finally:
            self._looking.discard(agent_id)
            self._again.discard(agent_id)

    async def _dialog_gone(self, agent_id: str) -> Request | None:
        """The open request whose dialog was on screen and is no longer (None otherwise)."""
        agent = self.service.current().agents.get(agent_id)
        request = agent.request if agent is not None else None
        if request is None or request.answered is not None:
            return None
        snapshot = await self.screens.snapshot(agent_id)
        if snapshot is None or not snapshot.live:
            return None
        dialog = dialog_for(snapshot.lines, request)
        if isinstance(dialog, Dialog):
            self._seen_at(agent_id, request.id)
            self._kept_top(agent_id, (request.id, dialog.top))
            return None
        self._kept_top(agent_id, None)
        if self._was_seen(agent_id, request.id):
            return request
        self._watch_for_dialog(agent_id)  # again: a new watch connection, a new terminal
        return None

    def _watch_for_dialog(self, agent_id: str) -> None:
        """While the agent's open request has not been seen on screen, look for its dialog in
        each output as it is fed: a look reads the screen in a worker thread, and under load
        the dialog could be drawn and refused before a worker was free (ci-9), never seen."""
        agent = self.service.current().agents.get(agent_id)
        request = agent.request if agent is not None else None
        if request is None or request.answered is not None:
            self.screens.probe(agent_id, None)
            return
        if self._was_seen(agent_id, request.id):
            return
        seen = self._seen_at

        def probe(lines: list[str]) -> bool:  # in the feeding thread: a dict write if shown
            if isinstance(dialog_for(lines, request), Dialog):
                seen(agent_id, request.id)
                return True
            return False

        self.screens.probe(agent_id, probe, request.id)

    def _was_seen(self, agent_id: str, request_id: str) -> bool:
        """Whether the dialog of the agent's request ``request_id`` was seen on screen."""
        seen = self._seen.get(agent_id)
        return seen is not None and seen[0] == request_id

    def _seen_at(self, agent_id: str, request_id: str) -> float:
        """When the dialog of the agent's request ``request_id`` was first seen (now if not
        before)."""
        seen = self._seen.get(agent_id)
        if seen is None or seen[0] != request_id:
            seen = self._seen[agent_id] = (request_id, self.clock.now())
        return seen[1]

    async def _ended_in_terminal(self, agent_id: str, request: Request) -> None:
        """Answered where the agent runs, with no hook to say so (a refusal with Esc): the
        request ends, so volee's buttons go and a later answer is refused."""
        lock = self._locks.setdefault(agent_id, asyncio.Lock())
        async with lock:
            agent = self.service.current().agents.get(agent_id)
            if agent is None or agent.request is None or agent.request.id != request.id:
                return
            if agent.request.answered is not None:
                return
            self._seen.pop(agent_id, None)
            log.info("%s's dialog (%s) was answered in its terminal", agent.name, request.summary)
            try:
                await self.service.commit(
                    [
                        ev.StateChanged(
                            at=self.clock.now(),
                            agent=agent_id,
                            state=AgentState.IDLE,
                            detail=ANSWERED_THERE,
                        )
                    ]
                )
            except Refused as exc:
                log.info("the end of %s's request was not recorded: %s", agent.name, exc)


def _may_still_be_drawn(reason: str) -> bool:
    """A refusal that a moment may cure: the dialog not drawn yet, or the previous one still."""
    return reason == "no dialog is open on its screen" or "about something else" in reason


def _still_shows(snapshot: Snapshot, request: Request) -> bool:
    """Whether the screen still shows the request's own dialog."""
    return isinstance(dialog_for(snapshot.lines, request), Dialog)

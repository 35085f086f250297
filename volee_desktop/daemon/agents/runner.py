"""The agents runner: the commands (spawn, send, stop, forget, resume, seen, screen, attach).

Each command is a typed operation (``spawn(SpawnRequest) -> Agent``, ``stop(agent)``…) that
missions and recovery call directly; the ``api_*`` methods are thin IPC handlers over them
that read their parameters through ``params``.  Launching and watching hosts is
``agenthosts.AgentHosts``, which this runner extends.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from ...config import harness_model, model_problem
from ...core import events as ev
from ...core.ids import AGENT
from ...core.model import (
    HUMAN,
    VOLEE,
    Agent,
    Harness,
    LaunchSettings,
    MessageKind,
)
from ...core.names import unique_name
from ...core.recovery import continue_prompt, resume_prompt
from ...core.requests import send_refusal
from ...core.states import AgentState
from ...harness.base import Error as HarnessError
from ...harness.base import Profile
from ...harness.env import allowed_env
from ...hosts.errors import Error as HostsError
from ...hosts.records import HostRecord, host_alive
from ...ipc.methods import Method
from ...ipc.server import Connection
from ..context import Context
from ..errors import NotFound, Refused
from ..ids import fresh
from ..params import AgentParams, Parameters, SpawnParams, bad, decoder
from ..spawn import SpawnRequest, make_worktree, slug
from ..threads import direct_thread, posted
from ..views import AgentView, agent_view, resolve_agent
from .host_io import read_quietly
from .hosts import HOOKSHIM, AgentHosts, EndPolicy
from .results import AttachInfo, Forgotten, Harnesses, ScreenText, Sent
from .screens import Screens
from .sessions import can_continue, fresh_notice, fresh_prompt, launch_settings, lost_task


@dataclass(frozen=True)
class Delivered:
    """A message typed into an agent's live session, or the agent resumed with it."""

    resumed: bool
    message: str | None

    def view(self) -> Sent:
        """The reply of ``agents.send``."""
        return {"delivered": True, "resumed": self.resumed, "message": self.message}


#: Lines of screen ``agents.screen`` returns when not told.
SCREEN_LINES = 60


class SendParams(AgentParams, frozen=True, kw_only=True):
    """``agents.send``: the text, and who sends it (the person unless an agent does)."""

    text: str | None = None
    sender: str | None = None


class ResumeParams(AgentParams, frozen=True, kw_only=True):
    """``agents.resume``: with ``text``, the message it resumes with."""

    text: str | None = None


class ScreenParams(AgentParams, frozen=True, kw_only=True):
    """``agents.screen``: how many of the screen's last lines."""

    lines: Annotated[int, Meta(ge=1)] | None = None


class HarnessesParams(Parameters, frozen=True, kw_only=True):
    """``agents.harnesses``: one harness only, or every one."""

    harness: str | None = None


class AgentsRunner(AgentHosts):
    """Launches and watches hosts; the IPC methods for agents live here."""

    def __init__(
        self,
        ctx: Context,
        profiles: Mapping[str, Profile],
        ends: EndPolicy,
        screens: Screens,
        mcp_url: Callable[[str], str | None] = lambda _agent: None,
    ) -> None:
        super().__init__(ctx, profiles, ends, screens, mcp_url)
        methods = ctx.methods
        methods.add(Method.AGENTS_SPAWN, self.api_spawn, decoder(SpawnParams))
        methods.add(Method.AGENTS_SEND, self.api_send, decoder(SendParams))
        for name, fn in (
            (Method.AGENTS_STOP, self.api_stop),
            (Method.AGENTS_FORGET, self.api_forget),
            (Method.AGENTS_SEEN, self.api_seen),
            (Method.AGENTS_ATTACH_INFO, self.api_attach_info),
        ):
            methods.add(name, fn, decoder(AgentParams))
        methods.add(Method.AGENTS_RESUME, self.api_resume, decoder(ResumeParams))
        methods.add(Method.AGENTS_SCREEN, self.api_screen, decoder(ScreenParams))
        methods.add(Method.AGENTS_HARNESSES, self.api_harnesses, decoder(HarnessesParams))
        ctx.status.add("hosts", lambda: f"{len(self.watchers)} watched")
        ctx.closing.add(self.close)

    async def close(self) -> None:
        self.harness_probes.close()
        for task in list(self.watchers.values()):
            task.cancel()
        if self.watchers:
            await asyncio.gather(*self.watchers.values(), return_exceptions=True)
        self.watchers.clear()

    # --- commands ---------------------------------------------------------------------------

    def _agent(self, params: AgentParams) -> Agent:
        return resolve_agent(self.service.current(), params.agent)

    async def api_spawn(self, _conn: Connection, params: SpawnParams) -> AgentView:
        # No harness named: config.toml's [agents] harness (claude unless the person chose).
        agent = await self.spawn(params.request(self.config.agents.harness))
        return agent_view(agent)

    async def spawn(self, request: SpawnRequest) -> Agent:
        """Register a new agent and start its host; refused (with the reason) if it cannot."""
        harness = request.harness
        if request.model is not None and (problem := model_problem(request.model, harness)):
            raise Refused(f"--model {request.model!r}: {problem}; nothing was started")
        profile = self.profile(harness)
        prompt = request.prompt
        argv = request.argv
        cwd = Path(request.cwd or os.getcwd()).expanduser().absolute()
        if not cwd.is_dir():
            raise Refused(f"directory {cwd} does not exist; create it or pass another --cwd")
        env = dict(os.environ) if request.env is None else dict(request.env)
        registry = self.service.current()
        name = request.name or unique_name(
            slug(prompt or (argv[0] if argv else harness)), registry.agents.values()
        )
        if any(a.name == name for a in registry.agents.values()):
            raise Refused(f"an agent is already named {name!r}; pick another --name")
        worktree = branch = repo = None
        if request.worktree:
            repo, worktree, branch = await asyncio.to_thread(
                make_worktree, cwd, name, request.branch
            )
            cwd = Path(worktree)
        mode = request.permission_mode or (
            self.config.claude.permission_mode if harness is Harness.CLAUDE else None
        )
        # No --model: the one config.toml names for this harness ([claude] model…), if any.
        model = request.model or harness_model(self.config, harness)
        settings = LaunchSettings(
            harness=harness,
            argv=argv,
            cwd=str(cwd),
            env=allowed_env(env),
            model=model,
            permission_mode=mode,
            prompt=prompt,
        )
        agent_id = fresh(AGENT)
        registered = ev.AgentRegistered(
            at=self.now(),
            agent=agent_id,
            name=name,
            harness=harness,
            role=request.role,
            parent=request.parent,
            mission=request.mission,
            launch=settings,
            cwd=str(cwd),
            worktree=worktree,
            repo=repo,
            branch=branch,
        )
        await self.service.commit([registered])
        agent = self.service.current().agents[agent_id]
        try:
            plan = profile.launch(agent_id, settings, self.context(agent_id, harness))
            await self.start_host(agent, plan, how=ev.StartKind.LAUNCH, automatic=False)
        except (HostsError, HarnessError, Refused, OSError) as exc:
            # Its program never ran, and the caller reads why right now: keep no failed agent
            # behind (it would raise a notification about what the person just read).
            await self.drop_unstarted(agent)
            kept = f"; its worktree {worktree} stays" if worktree else ""
            raise Refused(f"agent {name} could not start: {exc} (no agent was kept{kept})") from exc
        return self.service.registry.agents[agent_id]

    async def api_harnesses(self, _conn: Connection, params: HarnessesParams) -> Harnesses:
        return {"harnesses": await self.harness_choices(params.harness)}

    async def drop_unstarted(self, agent: Agent) -> None:
        """Remove an agent whose first launch was refused before its program ran."""
        await self.service.commit([ev.AgentForgotten(at=self.now(), agent=agent.id)])
        self.remove_record(agent.id)
        shutil.rmtree(self.files_of(agent.id), ignore_errors=True)

    async def api_send(self, _conn: Connection, params: SendParams) -> Sent:
        agent = self._agent(params)
        body = params.text
        if body is None or not body.strip():
            raise bad("nothing to send: give the text")
        sender = params.sender or HUMAN
        refusal = send_refusal(agent)
        if refusal is not None and sender == HUMAN:
            # The person is told at once (nothing recorded); another agent's message is kept
            # unread (deliver refuses to type it).
            raise Refused(refusal)
        message_id = await self.post(agent, sender, body)
        delivered = await self.deliver(agent.id, body, message_id)
        return delivered.view()

    async def post(
        self, agent: Agent, sender: str, text: str, kind: MessageKind = MessageKind.TEXT
    ) -> str:
        """Record a message to an agent in its direct thread with the sender."""
        at = self.now()
        thread, events = direct_thread(self.service.current(), (sender, agent.id), at)
        message = posted(thread, sender, (agent.id,), text, at, kind)
        await self.service.commit([*events, message])
        return message.message

    async def deliver(self, agent_id: str, text: str, message_id: str | None) -> Delivered:
        """Type ``text`` into the agent's live session, or resume it with the text."""
        agent = self.service.current().agents[agent_id]
        record = await asyncio.to_thread(read_quietly, self.record_of(agent_id))
        resumed = False
        if record is not None and record.exit is None and host_alive(record):
            # Never into an open approval dialog: it would take the text as its answer.
            refusal = send_refusal(agent)
            if refusal is not None:
                message = self.service.current().messages.get(message_id or "")
                if message is not None and message.sender != HUMAN:
                    # Another agent's (or volee's) words: the dialog is the person's to answer
                    # (docs/trust-model.md); the message stays unread until it is read.
                    raise Refused(
                        f"agent {agent.name} waits for the person's answer to a permission; "
                        "the message stays unread until it reads its messages (read_messages)"
                    )
                raise Refused(refusal)
            await asyncio.to_thread(self.host(agent_id).send_text, text)
        else:
            await self.resume(agent, prompt=text, automatic=False, reason="a message arrived")
            resumed = True
        if message_id is not None:
            await self.service.commit(
                [ev.MessageDelivered(at=self.now(), message=message_id, recipient=agent_id)]
            )
        return Delivered(resumed=resumed, message=message_id)

    async def resume(
        self,
        agent: Agent,
        *,
        prompt: str | None,
        automatic: bool,
        reason: str,
        how: ev.StartKind | None = None,
    ) -> HostRecord:
        """Start the agent again: its harness's resume command, or a relaunch."""
        if agent.held_for_good:
            raise Refused(f"agent {agent.name} belongs to a mission that is over; it stays stopped")
        profile = self.profile(agent.harness)
        settings = launch_settings(agent)
        if not Path(settings.cwd).is_dir():
            raise Refused(f"directory {settings.cwd} of agent {agent.name} no longer exists")
        ctx = self.context(agent.id, agent.harness)
        session = agent.session
        if profile.can_resume and session and not await can_continue(profile, session, settings):
            # Killed before it saved its conversation: `--resume` would end at once, so a
            # new session starts, told plainly that it remembers nothing (volee's notice),
            # and given its task again if none of it can have run.
            task = lost_task(agent, settings)
            await self.post(agent, VOLEE, fresh_notice(task), MessageKind.NOTICE)
            agent = self.service.current().agents[agent.id]
            prompt = fresh_prompt(prompt, task)
            session = None
        if profile.can_resume and session:
            plan = profile.resume(agent.id, settings, session, prompt, ctx)
            kind = how or ev.StartKind.RESUME
        else:
            if prompt and profile.can_resume:
                settings = LaunchSettings(
                    harness=settings.harness,
                    argv=settings.argv,
                    cwd=settings.cwd,
                    env=settings.env,
                    model=settings.model,
                    permission_mode=settings.permission_mode,
                    prompt=prompt,
                )
            plan = profile.launch(agent.id, settings, ctx)
            kind = how or ev.StartKind.RELAUNCH
        return await self.start_host(agent, plan, how=kind, automatic=automatic, reason=reason)

    async def can_continue(self, agent: Agent) -> bool:
        """False only when ``agent``'s session left no conversation (resume starts anew)."""
        profile = self.profile(agent.harness)
        if not (profile.can_resume and agent.session):
            return True
        return await can_continue(profile, agent.session, launch_settings(agent))

    async def api_resume(self, _conn: Connection, params: ResumeParams) -> AgentView:
        agent = self._agent(params)
        if agent.state.live and agent.pid is not None:
            raise Refused(f"agent {agent.name} is running; `volee attach {agent.name}` to see it")
        text = params.text
        if text:
            message_id = await self.post(agent, HUMAN, text)
            agent = self.service.current().agents[agent.id]
        else:
            message_id = None
            if agent.held and not agent.held_for_good:
                # Resuming by hand is the person's word: it lifts the hold like a message.
                message_id = await self.post(agent, HUMAN, "(resumed by you)", MessageKind.NOTICE)
                agent = self.service.current().agents[agent.id]
        if not text and agent.restart is not None:
            await self.carry_on(agent)
            return agent_view(self.service.registry.agents[agent.id])
        prompt = text
        if (
            not text
            and agent.interrupted
            and agent.action == "resume"
            and await self.can_continue(agent)
        ):
            # Its turn was cut off: volee's own resume prompt, as a notice from volee.
            prompt = resume_prompt(agent.interrupted)
            await self.post(agent, VOLEE, prompt, MessageKind.NOTICE)
            agent = self.service.current().agents[agent.id]
        try:
            await self.resume(agent, prompt=prompt, automatic=False, reason="resumed by you")
        except (HostsError, HarnessError, OSError) as exc:
            raise Refused(f"agent {agent.name} could not be resumed: {exc}") from exc
        if message_id is not None and text:
            await self.service.commit(
                [ev.MessageDelivered(at=self.now(), message=message_id, recipient=agent.id)]
            )
        return agent_view(self.service.registry.agents[agent.id])

    async def api_stop(self, _conn: Connection, params: AgentParams) -> AgentView:
        agent = self._agent(params)
        await self.stop(agent, reason="")
        return agent_view(self.service.registry.agents[agent.id])

    async def stop(self, agent: Agent, reason: str) -> None:
        """Hold the agent, cancel a waiting restart, end its program."""
        at = self.now()
        events: list[ev.Event] = [
            ev.StopRequested(at=at, agent=agent.id, by=ev.Stopper.HUMAN, reason=reason)
        ]
        if agent.restart is not None:
            events.append(ev.RestartCancelled(at=at, agent=agent.id, reason="stopped by you"))
        await self.service.commit(events)
        record = await asyncio.to_thread(read_quietly, self.record_of(agent.id))
        if record is not None and record.exit is None and host_alive(record):
            await asyncio.to_thread(self.host(agent.id, timeout=15.0).stop, 5.0)
            watcher = self.watchers.get(agent.id)
            if watcher is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(watcher), 10.0)
                except (TimeoutError, asyncio.CancelledError):
                    pass
        current = self.service.current().agents.get(agent.id)
        if current is not None and current.state is not AgentState.STOPPED:
            await self.service.commit(
                [
                    ev.StateChanged(
                        at=self.now(),
                        agent=agent.id,
                        state=AgentState.STOPPED,
                        detail="stopped by you",
                    )
                ]
            )

    async def api_forget(self, _conn: Connection, params: AgentParams) -> Forgotten:
        agent = self._agent(params)
        if agent.state.live or agent.restart is not None:
            await self.stop(agent, reason="forgotten")
        await self.service.commit([ev.AgentForgotten(at=self.now(), agent=agent.id)])
        watcher = self.watchers.pop(agent.id, None)
        if watcher is not None:
            watcher.cancel()
        self.remove_record(agent.id)
        shutil.rmtree(self.files_of(agent.id), ignore_errors=True)
        self.screens.forget(agent.id)
        self.suspects.pop(agent.id, None)
        return {"forgotten": agent.id, "name": agent.name}

    async def api_seen(self, _conn: Connection, params: AgentParams) -> AgentView:
        agent = self._agent(params)
        if agent.state is AgentState.DONE:
            await self.service.commit(
                [
                    ev.StateChanged(
                        at=self.now(), agent=agent.id, state=AgentState.IDLE, progress=False
                    )
                ]
            )
        return agent_view(self.service.registry.agents[agent.id])

    async def api_screen(self, _conn: Connection, params: ScreenParams) -> ScreenText:
        agent = self._agent(params)
        lines = params.lines or SCREEN_LINES
        record = await asyncio.to_thread(read_quietly, self.record_of(agent.id))
        if record is None or not host_alive(record):
            raise NotFound(f"agent {agent.name} has no running host; its output is gone")
        text = await asyncio.to_thread(self.host(agent.id).screen, lines)
        return {"text": text}

    async def carry_on(self, agent: Agent) -> None:
        """A run that waits for its automatic restart goes on now, as that restart would have:
        its session resumed with "Continue where you left off." as volee's notice, or launched
        again when it never started a session (M38: attach and resume carry the run on; neither
        counts as automatic nor gives the budget back)."""
        pending = agent.restart
        prompt = None
        if (
            pending is not None
            and agent.session
            and agent.state is not AgentState.LAUNCHING
            and await self.can_continue(agent)
        ):
            prompt = continue_prompt(pending.reason)
            await self.post(agent, VOLEE, prompt, MessageKind.NOTICE)
            agent = self.service.current().agents[agent.id]
        try:
            await self.resume(agent, prompt=prompt, automatic=False, reason="carried on by you")
        except (HostsError, HarnessError, OSError) as exc:
            raise Refused(f"agent {agent.name} could not be started again: {exc}") from exc

    async def api_attach_info(self, _conn: Connection, params: AgentParams) -> AttachInfo:
        agent = self._agent(params)
        record = await asyncio.to_thread(read_quietly, self.record_of(agent.id))
        ended = record is None or record.exit is not None or not host_alive(record)
        if ended and agent.restart is not None:
            # Its restart waits (its host may linger): attaching is the person's word that it
            # goes on now.
            await self.carry_on(agent)
            agent = self.service.current().agents[agent.id]
            record = await asyncio.to_thread(read_quietly, self.record_of(agent.id))
        if record is None or not host_alive(record):
            hint = (
                f"`volee resume {agent.name}` starts it again"
                if agent.state is AgentState.STOPPED
                else ""
            )
            raise NotFound(f"agent {agent.name} has no running host. {hint}".strip())
        if agent.state is AgentState.DONE:
            await self.service.commit(
                [
                    ev.StateChanged(
                        at=self.now(), agent=agent.id, state=AgentState.IDLE, progress=False
                    )
                ]
            )
        return {
            "socket": str(self.socket_of(agent.id)),
            "agent": agent.id,
            "name": agent.name,
        }


# Re-exported: tests and benches import it from here.
__all__ = ["HOOKSHIM", "AgentsRunner"]

"""The agents runner: the commands (spawn, send, stop, forget, resume, seen, screen, attach).

Launching and watching hosts is ``agenthosts.AgentHosts``, which this runner extends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ..core import events as ev
from ..core.ids import AGENT, MESSAGE, THREAD
from ..core.model import (
    HUMAN,
    VOLEE,
    Agent,
    Harness,
    LaunchSettings,
    MessageKind,
    Role,
    ThreadKind,
)
from ..core.names import unique_name
from ..core.states import AgentState
from ..harness.base import Answer, ConversationProbe, Profile
from ..harness.base import Error as HarnessError
from ..harness.env import allowed_env
from ..hosts.errors import Error as HostsError
from ..hosts.launcher import HostClient
from ..hosts.records import HostRecord, host_alive
from ..ipc.protocol import ErrorCode, IpcError
from ..ipc.server import Connection
from .agenthosts import (
    HOOKSHIM,
    AgentHosts,
    _read_quietly,
    _type_keys,
    exit_events,
)
from .errors import NotFound, Refused
from .ids import fresh
from .views import agent_view, resolve_agent

log = logging.getLogger(__name__)

WORKTREES = ".claude/worktrees"
#: volee's prompt for a new session replacing one that was killed before it saved anything:
#: it claims no memory of the lost turn.
FRESH_SESSION_NOTICE = (
    "[volee] Your previous session ended before it saved anything; this is a new session "
    "in the same folder. Check the state of the work before continuing."
)


def launch_settings(agent: Agent) -> LaunchSettings:
    """The settings to start ``agent`` with: those of its launch, or, for an agent volee only
    watched, the daemon's environment (allow-listed), like one spawned from its shell."""
    return agent.launch or LaunchSettings(
        harness=agent.harness, cwd=agent.cwd, env=allowed_env(dict(os.environ))
    )


#: Added when the lost session's task never got anywhere (see :func:`lost_task`).
TASK_AGAIN = "None of your tools had started, so here is the task you were started with, again:"


def lost_task(agent: Agent, settings: LaunchSettings) -> str | None:
    """The task volee launched ``agent`` with, when none of it can have run: its session saved
    nothing and no tool of the agent ever started (volee hears each one before it runs).

    recovery.md, row 9: a session its harness never wrote runs its first task again. Claude
    Code writes its conversation through a queue, so a session killed just after its first
    prompt is such a session even though it reported itself.
    """
    if not agent.launched_by_volee or agent.activity_at is not None:
        return None
    return settings.prompt or None


def fresh_notice(task: str | None) -> str:
    """volee's notice opening a new session that replaces a lost one (recorded as volee's)."""
    if not task:
        return FRESH_SESSION_NOTICE
    return f"{FRESH_SESSION_NOTICE} {TASK_AGAIN}\n\n{task}"


def fresh_prompt(prompt: str | None, task: str | None = None) -> str:
    """The first prompt of a new session replacing a lost one: volee's notice (with the task
    that never got anywhere, if any), then the person's message if there is one (volee's own
    resume prompt would claim a memory)."""
    notice = fresh_notice(task)
    if prompt is None or prompt.startswith("[volee]"):
        return notice
    return f"{notice}\n\n{prompt}"


async def _can_continue(profile: Profile, session: str, settings: LaunchSettings) -> bool:
    """Whether ``session`` left a conversation to resume; when it did not (its program was
    killed before writing any), a new session is the only way to start it again."""
    if not isinstance(profile, ConversationProbe):
        return True
    found = await asyncio.to_thread(profile.has_conversation, session, settings)
    if not found:
        log.info("session %s has no conversation to resume: starting a new one", session)
    return found


def slug(text: str, limit: int = 24) -> str:
    """A short name from a task: lowercase words joined by dashes."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:limit].strip("-")
    return out or "agent"


class AgentsRunner(AgentHosts):
    """Launches and watches hosts; the IPC methods for agents live here."""

    # --- registration ---------------------------------------------------------------------

    def install(self) -> None:
        """Add this runner's IPC methods to the daemon's API."""
        api = self.daemon.api
        for name, fn in (
            ("agents.spawn", self.api_spawn),
            ("agents.send", self.api_send),
            ("agents.stop", self.api_stop),
            ("agents.forget", self.api_forget),
            ("agents.resume", self.api_resume),
            ("agents.seen", self.api_seen),
            ("agents.screen", self.api_screen),
            ("agents.attach_info", self.api_attach_info),
        ):
            api.add(name, fn)
        self.daemon.status_parts["hosts"] = lambda: f"{len(self.watchers)} watched"
        self.daemon.on_close.append(self.close)

    async def close(self) -> None:
        for task in list(self.watchers.values()):
            task.cancel()
        if self.watchers:
            await asyncio.gather(*self.watchers.values(), return_exceptions=True)
        self.watchers.clear()

    # --- commands ---------------------------------------------------------------------------

    def _agent(self, params: dict[str, Any]) -> Agent:
        ref = params.get("agent")
        if not isinstance(ref, str) or not ref:
            raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'agent' must name an agent")
        return resolve_agent(self.service.current(), ref)

    async def api_spawn(self, _conn: Connection, params: dict[str, Any]) -> Any:
        check_spawn_params(params)
        harness_name = params.get("harness") or "claude"
        try:
            harness = Harness(harness_name)
        except ValueError:
            raise Refused(
                f"unknown harness {harness_name!r}; use claude, codex, pi or generic"
            ) from None
        profile = self.profile(harness)
        prompt = params.get("prompt") or None
        argv = tuple(str(a) for a in params.get("argv") or ())
        cwd = Path(str(params.get("cwd") or os.getcwd())).expanduser().absolute()
        if not cwd.is_dir():
            raise Refused(f"directory {cwd} does not exist; create it or pass another --cwd")
        given = params.get("env")
        env: dict[str, Any] = given if isinstance(given, dict) else dict(os.environ)
        registry = self.service.current()
        name = str(params.get("name") or "") or unique_name(
            slug(prompt or (argv[0] if argv else harness)), registry.agents.values()
        )
        if any(a.name == name for a in registry.agents.values()):
            raise Refused(f"an agent is already named {name!r}; pick another --name")
        worktree = branch = repo = None
        if params.get("worktree"):
            repo, worktree, branch = await asyncio.to_thread(make_worktree, cwd, name)
            cwd = Path(worktree)
        mode = params.get("permission_mode") or (
            self.daemon.config.claude.permission_mode if harness is Harness.CLAUDE else None
        )
        settings = LaunchSettings(
            harness=harness,
            argv=argv,
            cwd=str(cwd),
            env=allowed_env({str(k): str(v) for k, v in env.items()}),
            model=params.get("model") or None,
            permission_mode=mode,
            prompt=prompt,
        )
        role = Role(params.get("role") or "agent")
        agent_id = fresh(AGENT)
        registered = ev.AgentRegistered(
            at=self.now(),
            agent=agent_id,
            name=name,
            harness=harness,
            role=role,
            parent=params.get("parent") or None,
            mission=params.get("mission") or None,
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
            await self.start_host(agent, plan, how="launch", automatic=False)
        except (HostsError, HarnessError, Refused, OSError) as exc:
            await self.launch_failed(agent, str(exc))
            raise Refused(f"agent {name} ({agent_id}) could not start: {exc}") from exc
        return agent_view(self.service.registry.agents[agent_id])

    async def api_send(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise IpcError(ErrorCode.BAD_REQUEST, "nothing to send: give the text")
        sender = str(params.get("sender") or HUMAN)
        message_id = await self.post(agent, sender, text)
        return await self.deliver(agent.id, text, message_id)

    async def post(
        self, agent: Agent, sender: str, text: str, kind: MessageKind = MessageKind.TEXT
    ) -> str:
        """Record a message to an agent in its direct thread with the sender."""
        registry = self.service.current()
        thread = next(
            (
                t.id
                for t in registry.threads.values()
                if t.kind is ThreadKind.DIRECT and set(t.parties) == {sender, agent.id}
            ),
            None,
        )
        events: list[ev.Event] = []
        at = self.now()
        if thread is None:
            thread = fresh(THREAD)
            events.append(
                ev.ThreadOpened(
                    at=at, thread=thread, kind=ThreadKind.DIRECT, parties=(sender, agent.id)
                )
            )
        message_id = fresh(MESSAGE)
        events.append(
            ev.MessagePosted(
                at=at,
                message=message_id,
                thread=thread,
                sender=sender,
                recipients=(agent.id,),
                kind=kind,
                body=text,
            )
        )
        await self.service.commit(events)
        return message_id

    async def deliver(self, agent_id: str, text: str, message_id: str | None) -> dict[str, Any]:
        """Type ``text`` into the agent's live session, or resume it with the text."""
        agent = self.service.current().agents[agent_id]
        record = await asyncio.to_thread(_read_quietly, self.record_of(agent_id))
        resumed = False
        if record is not None and record.exit is None and host_alive(record):
            client = HostClient(record.socket or self.socket_of(agent_id))
            answer = self._answer(agent, text)
            if answer is None:
                await asyncio.to_thread(client.send_text, text)
            else:
                await asyncio.to_thread(_type_keys, client, answer.keys)
                if answer.state is not None:
                    await self.service.commit(
                        [
                            ev.StateChanged(
                                at=self.now(),
                                agent=agent_id,
                                state=answer.state,
                                detail=answer.detail,
                            )
                        ]
                    )
                if answer.then:
                    await asyncio.to_thread(client.send_text, answer.then)
        else:
            await self.resume(agent, prompt=text, automatic=False, reason="a message arrived")
            resumed = True
        if message_id is not None:
            await self.service.commit(
                [ev.MessageDelivered(at=self.now(), message=message_id, recipient=agent_id)]
            )
        return {"delivered": True, "resumed": resumed, "message": message_id}

    def _answer(self, agent: Agent, text: str) -> Answer | None:
        """A reply to a dialog the harness shows (a permission), typed as keys."""
        answer = getattr(self.profiles.get(agent.harness), "answer", None)
        if answer is None:
            return None
        result: Answer | None = answer(agent, text)
        return result

    async def resume(
        self,
        agent: Agent,
        *,
        prompt: str | None,
        automatic: bool,
        reason: str,
        how: str | None = None,
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
        if profile.can_resume and session and not await _can_continue(profile, session, settings):
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
            kind = how or "resume"
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
            kind = how or "relaunch"
        return await self.start_host(agent, plan, how=kind, automatic=automatic, reason=reason)

    async def can_continue(self, agent: Agent) -> bool:
        """False only when ``agent``'s session left no conversation (resume starts anew)."""
        profile = self.profile(agent.harness)
        if not (profile.can_resume and agent.session):
            return True
        return await _can_continue(profile, agent.session, launch_settings(agent))

    async def api_resume(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        if agent.state.live and agent.pid is not None:
            raise Refused(f"agent {agent.name} is running; `volee attach {agent.name}` to see it")
        text = params.get("text") if isinstance(params.get("text"), str) else None
        if text:
            message_id = await self.post(agent, HUMAN, text)
            agent = self.service.current().agents[agent.id]
        else:
            message_id = None
            if agent.held and not agent.held_for_good:
                # Resuming by hand is the person's word: it lifts the hold like a message.
                message_id = await self.post(agent, HUMAN, "(resumed by you)", MessageKind.NOTICE)
                agent = self.service.current().agents[agent.id]
        prompt = text
        if (
            not text
            and agent.interrupted
            and agent.action == "resume"
            and await self.can_continue(agent)
        ):
            # Its turn was cut off: volee's own resume prompt, as a notice from volee.
            from ..core.recovery import resume_prompt

            prompt = resume_prompt(agent.interrupted)
            await self.post(agent, "volee", prompt, MessageKind.NOTICE)
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

    async def api_stop(self, _conn: Connection, params: dict[str, Any]) -> Any:
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
        record = await asyncio.to_thread(_read_quietly, self.record_of(agent.id))
        if record is not None and record.exit is None and host_alive(record):
            client = HostClient(record.socket or self.socket_of(agent.id), timeout=15.0)
            await asyncio.to_thread(client.stop, 5.0)
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

    async def api_forget(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        if agent.state.live or agent.restart is not None:
            await self.stop(agent, reason="forgotten")
        await self.service.commit([ev.AgentForgotten(at=self.now(), agent=agent.id)])
        watcher = self.watchers.pop(agent.id, None)
        if watcher is not None:
            watcher.cancel()
        for path in (self.record_of(agent.id), self.record_of(agent.id).with_suffix(".log")):
            path.unlink(missing_ok=True)
        shutil.rmtree(self.files_of(agent.id), ignore_errors=True)
        return {"forgotten": agent.id, "name": agent.name}

    async def api_seen(self, _conn: Connection, params: dict[str, Any]) -> Any:
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

    async def api_screen(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        lines = params.get("lines", 60)
        if lines is None:
            lines = 60
        if not isinstance(lines, int) or isinstance(lines, bool) or lines < 1:
            raise IpcError(
                ErrorCode.BAD_REQUEST,
                f"parameter 'lines' must be a whole number >= 1, not {lines!r}",
            )
        record = await asyncio.to_thread(_read_quietly, self.record_of(agent.id))
        if record is None or not host_alive(record):
            raise NotFound(f"agent {agent.name} has no running host; its output is gone")
        client = HostClient(record.socket or self.socket_of(agent.id))
        text = await asyncio.to_thread(client.screen, lines)
        return {"text": text}

    async def api_attach_info(self, _conn: Connection, params: dict[str, Any]) -> Any:
        agent = self._agent(params)
        record = await asyncio.to_thread(_read_quietly, self.record_of(agent.id))
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
            "socket": record.socket or str(self.socket_of(agent.id)),
            "agent": agent.id,
            "name": agent.name,
        }


_SPAWN_STRINGS = (
    "harness", "prompt", "name", "cwd", "role", "mission", "parent", "model", "permission_mode",
)  # fmt: skip


def check_spawn_params(params: dict[str, Any]) -> None:
    """Refuse spawn parameters of the wrong type with a bad_request that names them."""
    for key in _SPAWN_STRINGS:
        value = params.get(key)
        if value is not None and not isinstance(value, str):
            raise IpcError(ErrorCode.BAD_REQUEST, f"parameter {key!r} must be a string")
    argv = params.get("argv")
    if argv is not None and (
        not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)
    ):
        raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'argv' must be a list of strings")
    env = params.get("env")
    if env is not None and (
        not isinstance(env, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'env' must map strings to strings")
    if params.get("worktree") not in (None, True, False):
        raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'worktree' must be true or false")


def make_worktree(cwd: Path, name: str) -> tuple[str, str, str]:
    """A new branch in a worktree under ``<repo>/.claude/worktrees/<name>``."""
    try:
        top = subprocess.run(
            ["git", "-C", str(cwd), "rev-parse", "--show-toplevel"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise Refused(f"--worktree needs a git repository; {cwd} is not in one") from exc
    path = Path(top) / WORKTREES / name
    branch = f"volee/{name}"
    if path.exists():
        raise Refused(f"worktree {path} already exists; pick another --name")
    proc = subprocess.run(
        ["git", "-C", top, "worktree", "add", "-b", branch, str(path)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise Refused(f"git worktree add failed: {proc.stderr.strip()}")
    return top, str(path), branch


# Re-exported: the recovery runner, the CLI and benches import these from here.
__all__ = ["HOOKSHIM", "AgentsRunner", "_read_quietly", "allowed_env", "exit_events", "slug"]

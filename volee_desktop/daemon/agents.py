"""The agents runner: spawn, send, stop, forget, resume, and watching every live host.

Hosts are separate processes (``volee_desktop.hosts``); the runner starts them
in a thread (the launcher blocks until the program started), keeps one watch
connection per live host to learn when its program ends, and turns what it
sees into events.  What happens after an end (restart, interruption) is the
recovery runner's decision, reached through ``on_exit`` / ``on_vanished``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import events as ev
from ..core.ids import AGENT, MESSAGE, THREAD
from ..core.model import HUMAN, Agent, Harness, LaunchSettings, MessageKind, Role, ThreadKind
from ..core.states import AgentState
from ..harness.base import Answer, LaunchContext, LaunchPlan, Profile
from ..harness.base import Error as HarnessError
from ..harness.versions import Prober
from ..hosts import wire
from ..hosts.errors import Error as HostsError
from ..hosts.launcher import HostClient, launch_host
from ..hosts.records import HostRecord, host_alive, read_record, record_path
from ..ipc.protocol import ErrorCode, IpcError
from ..ipc.server import Connection
from .errors import NotFound, Refused
from .ids import fresh, session_uuid
from .views import agent_view, resolve_agent

if TYPE_CHECKING:
    from .main import Daemon

log = logging.getLogger(__name__)

ENV_ALLOW = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LC_\w+|TERM|COLORTERM|TZ|TMPDIR|XDG_\w+|"
    r"ANTHROPIC_\w+|CLAUDE_\w+|CLAUDECODE|DISABLE_\w+|IS_SANDBOX|OPENAI_\w+|CODEX_\w+|PI_\w+|"
    r"FAKE_\w+|NODE_\w+|NPM_CONFIG_\w+|HTTPS?_PROXY|NO_PROXY|SSH_AUTH_SOCK|GIT_\w+|EDITOR|"
    r"VISUAL|DISPLAY|WAYLAND_DISPLAY|DBUS_SESSION_BUS_ADDRESS)$"
)
WORKTREES = ".claude/worktrees"
HOOKSHIM = Path(__file__).resolve().parents[1] / "cli" / "hookshim.py"

ExitHandler = Callable[[Agent, HostRecord], Awaitable[None]]


def allowed_env(env: dict[str, str]) -> dict[str, str]:
    """The part of a caller's environment an agent may inherit (recorded with its launch)."""
    return {k: v for k, v in env.items() if ENV_ALLOW.match(k)}


def slug(text: str, limit: int = 24) -> str:
    """A short name from a task: lowercase words joined by dashes."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:limit].strip("-")
    return out or "agent"


class AgentsRunner:
    """Launches and watches hosts; the IPC methods for agents live here."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.service = daemon.service
        self.profiles: dict[str, Profile] = daemon.profiles
        self.watchers: dict[str, asyncio.Task[None]] = {}
        self.on_exit: ExitHandler = self._default_exit
        self.on_vanished: ExitHandler = self._default_vanished
        self.volee_cmd: tuple[str, ...] = (sys.executable, "-m", "volee_desktop.cli")
        # Hooks run the shim file itself with -I -S: no site start-up, no package import; a
        # third of `volee hook`'s CPU on every hook of every agent (docs/decisions.md D5).
        self.hook_cmd: tuple[str, ...] = (sys.executable, "-I", "-S", str(HOOKSHIM))
        # VOLEE_CLAUDE_BIN, VOLEE_CODEX_BIN, VOLEE_PI_BIN: the harness executables to use.
        self.binaries: dict[str, str] = {
            h: os.environ[f"VOLEE_{h.upper()}_BIN"]
            for h in ("claude", "codex", "pi")
            if os.environ.get(f"VOLEE_{h.upper()}_BIN")
        }
        self._starting: set[str] = set()
        self.prober = Prober()

    # --- paths -----------------------------------------------------------------------------

    @property
    def hosts_dir(self) -> Path:
        return self.daemon.dirs.hosts

    def record_of(self, agent_id: str) -> Path:
        return record_path(self.hosts_dir, agent_id)

    def socket_of(self, agent_id: str) -> Path:
        return self.daemon.dirs.runtime / "hosts" / f"{agent_id[-10:]}.sock"

    def files_of(self, agent_id: str) -> Path:
        return self.daemon.dirs.state / "agents" / agent_id

    def now(self) -> float:
        return time.time()

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

    # --- launching -------------------------------------------------------------------------

    def profile(self, harness: str) -> Profile:
        profile = self.profiles.get(harness)
        if profile is None:
            known = ", ".join(sorted(self.profiles))
            raise Refused(f"unknown harness {harness!r}; volee knows {known}")
        return profile

    def context(self, agent_id: str, harness: str, session: str | None = None) -> LaunchContext:
        return LaunchContext(
            volee=self.volee_cmd,
            files_dir=str(self.files_of(agent_id)),
            session_id=session or session_uuid(),
            binary=self.binaries.get(harness),
            hook=self.hook_cmd,
        )

    def agent_env(self, agent: Agent, plan: LaunchPlan) -> dict[str, str]:
        env = dict(plan.env)
        env["VOLEE_AGENT"] = agent.id
        env["VOLEE_SOCKET"] = str(self.daemon.dirs.socket)
        env["VOLEE_SPOOL"] = str(self.daemon.dirs.spool)
        env["VOLEE_HARNESS"] = str(agent.harness)
        env["VOLEE_HOME"] = os.environ.get("VOLEE_HOME", "") or env.get("VOLEE_HOME", "")
        if not env["VOLEE_HOME"]:
            del env["VOLEE_HOME"]
        env.setdefault("TERM", "xterm-256color")
        env.setdefault("PATH", os.environ.get("PATH", os.defpath))
        return env

    async def start_host(
        self, agent: Agent, plan: LaunchPlan, *, how: str, automatic: bool, reason: str = ""
    ) -> HostRecord:
        """Run ``plan`` for ``agent`` in a new host; record it; watch it."""
        if agent.id in self._starting:
            raise Refused(f"agent {agent.name} is already being started")
        record = self.record_of(agent.id)
        old = await asyncio.to_thread(_read_quietly, record)
        if old is not None and host_alive(old):
            if old.exit is None:
                raise Refused(f"agent {agent.name} already runs in host {old.host_pid}")
            # Its program ended; the host only lingers for late attachers: let it go now.
            if not await asyncio.to_thread(_end_linger, old, self.socket_of(agent.id)):
                raise Refused(
                    f"the old host {old.host_pid} of agent {agent.name} does not go away; "
                    "try again in a few seconds"
                )
        self._starting.add(agent.id)
        try:
            files = self.files_of(agent.id)
            files.mkdir(parents=True, exist_ok=True)
            os.chmod(files, 0o700)
            for path, text in plan.files.items():
                Path(path).write_text(text)
            cwd = agent.launch.cwd if agent.launch else agent.cwd
            env = self.agent_env(agent, plan)
            await self.check_binary(agent, plan, env)
            host = await asyncio.to_thread(
                launch_host,
                agent.id,
                list(plan.argv),
                cwd,
                env,
                record,
                self.socket_of(agent.id),
            )
        finally:
            self._starting.discard(agent.id)
        events: list[ev.Event] = []
        at = self.now()
        if plan.session_id and plan.session_id != agent.session:
            events.append(
                ev.SessionLinked(
                    at=at,
                    agent=agent.id,
                    session=plan.session_id,
                    how="resumed" if how == "resume" else "started",
                )
            )
        events.append(
            ev.HostStarted(
                at=at,
                agent=agent.id,
                host_pid=host.host_pid,
                program_pid=host.program_pid,
                automatic=automatic,
                how=how,
                reason=reason,
            )
        )
        if agent.harness is Harness.GENERIC:
            events.append(ev.StateChanged(at=at, agent=agent.id, state=AgentState.WORKING))
        await self.service.commit(events)
        self.watch(agent.id, host)
        return host

    async def check_binary(self, agent: Agent, plan: LaunchPlan, env: dict[str, str]) -> None:
        """Refuse, saying why, a harness binary that is missing or older than volee needs."""
        profile = self.profiles.get(agent.harness)
        minimum = profile.min_version if profile is not None else None
        if minimum is None or not plan.argv:
            return
        try:
            await asyncio.to_thread(
                self.prober.require, str(agent.harness), plan.argv[0], minimum, env
            )
        except HarnessError as exc:
            raise Refused(str(exc)) from exc

    async def launch_failed(self, agent: Agent, reason: str) -> None:
        await self.service.commit(
            [ev.StateChanged(at=self.now(), agent=agent.id, state=AgentState.FAILED, detail=reason)]
        )

    # --- watching --------------------------------------------------------------------------

    def watch(self, agent_id: str, host: HostRecord) -> None:
        """Keep a connection to the host to learn when the program ends."""
        old = self.watchers.pop(agent_id, None)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._watch(agent_id, host))
        self.watchers[agent_id] = task

        def done(t: asyncio.Task[None]) -> None:
            if self.watchers.get(agent_id) is t:
                del self.watchers[agent_id]
            if not t.cancelled() and t.exception() is not None:
                log.error("watcher of %s failed", agent_id, exc_info=t.exception())

        task.add_done_callback(done)

    async def _watch(self, agent_id: str, host: HostRecord) -> None:
        path = host.socket or str(self.socket_of(agent_id))
        ended = False
        try:
            reader, writer = await asyncio.open_unix_connection(path)
        except OSError:
            reader = None
        if reader is not None:
            writer.write(wire.json_frame({"op": "watch"}))
            await writer.drain()
            frames = wire.FrameReader()
            try:
                while not ended:
                    data = await reader.read(65536)
                    if not data:
                        break
                    for kind, payload in frames.feed(data):
                        if kind == wire.JSON:
                            msg = json.loads(payload)
                            if msg.get("event") == "exit":
                                ended = True
                        if ended:
                            break
            finally:
                writer.close()
        # Connection closed: the program ended, or the host went away (read the record).
        await self._host_gone(agent_id)

    async def _host_gone(self, agent_id: str) -> None:
        record = await asyncio.to_thread(_read_quietly, self.record_of(agent_id))
        agent = self.service.current().agents.get(agent_id)
        if agent is None or record is None:
            return
        if record.exit is not None:
            await self.on_exit(agent, record)
        elif not host_alive(record):
            await self.on_vanished(agent, record)

    async def _default_exit(self, agent: Agent, record: HostRecord) -> None:
        await self.service.commit(exit_events(agent, record, self.now()))

    async def _default_vanished(self, agent: Agent, record: HostRecord) -> None:
        at = self.now()
        await self.service.commit(
            [
                ev.InterruptionDetected(
                    at=at, agent=agent.id, cause="host-stopped", state=agent.state
                ),
                ev.StateChanged(
                    at=at,
                    agent=agent.id,
                    state=AgentState.STOPPED,
                    detail="interrupted: volee's host was stopped",
                ),
            ]
        )

    # --- commands ---------------------------------------------------------------------------

    def _agent(self, params: dict[str, Any]) -> Agent:
        ref = params.get("agent")
        if not isinstance(ref, str) or not ref:
            raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'agent' must name an agent")
        return resolve_agent(self.service.current(), ref)

    async def api_spawn(self, _conn: Connection, params: dict[str, Any]) -> Any:
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
        # An agent volee only watched has no launch settings: it runs with the daemon's
        # environment (allow-listed), like one spawned from this daemon's shell.
        settings = agent.launch or LaunchSettings(
            harness=agent.harness, cwd=agent.cwd, env=allowed_env(dict(os.environ))
        )
        if not Path(settings.cwd).is_dir():
            raise Refused(f"directory {settings.cwd} of agent {agent.name} no longer exists")
        ctx = self.context(agent.id, agent.harness)
        if profile.can_resume and agent.session:
            plan = profile.resume(agent.id, settings, agent.session, prompt, ctx)
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
        if not text and agent.interrupted and agent.action == "resume":
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
        events: list[ev.Event] = [ev.StopRequested(at=at, agent=agent.id, by=HUMAN, reason=reason)]
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
        lines = int(params.get("lines") or 60)
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

    # --- start-up --------------------------------------------------------------------------

    async def adopt_live_hosts(self) -> list[tuple[Agent, HostRecord]]:
        """Re-adopt every live host; return the agents whose host is gone without an exit."""
        gone: list[tuple[Agent, HostRecord]] = []
        registry = self.service.current()
        if not self.hosts_dir.is_dir():
            return gone
        for path in sorted(self.hosts_dir.glob("ag_*.json")):
            record = await asyncio.to_thread(_read_quietly, path)
            if record is None:
                continue
            agent = registry.agents.get(record.agent)
            if agent is None:
                continue
            if host_alive(record):
                if record.exit is None:
                    await self.service.commit(
                        [ev.HostAdopted(at=self.now(), agent=agent.id, host_pid=record.host_pid)]
                    )
                self.watch(agent.id, record)
            elif record.exit is not None:
                if agent.state.live or agent.pid is not None:
                    await self.on_exit(agent, record)
            elif record.program_pid is not None and record.error is None:
                gone.append((agent, record))
        return gone


def exit_events(agent: Agent, record: HostRecord, at: float) -> list[ev.Event]:
    """Events for a program that ended (without any restart decision)."""
    status = record.exit
    assert status is not None
    during = agent.state in (AgentState.WORKING, AgentState.LAUNCHING)
    exited = ev.ProgramExited(
        at=at,
        agent=agent.id,
        code=status.code,
        signal=status.signal_name,
        during_turn=during,
    )
    events: list[ev.Event] = [exited]
    if agent.held or status.stop_requested:
        state, detail = AgentState.STOPPED, agent.detail or "stopped by you"
    elif exited.crashed:
        state, detail = AgentState.FAILED, exited.description
    else:
        state = AgentState.STOPPED
        detail = agent.detail if agent.state is AgentState.STOPPED else "exited"
    if state is not agent.state or detail != agent.detail:
        events.append(ev.StateChanged(at=at, agent=agent.id, state=state, detail=detail))
    return events


def unique_name(base: str, agents: Any) -> str:
    """``base``, or ``base-2``, ``base-3``… if taken."""
    names = {a.name for a in agents}
    if base not in names:
        return base
    n = 2
    while f"{base}-{n}" in names:
        n += 1
    return f"{base}-{n}"


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


def _type_keys(client: HostClient, keys: bytes) -> None:
    """Type ``keys`` as they are (no paste, no Enter), as an attached terminal would."""
    with client.open_stream() as stream:
        stream.write(keys)
        # Closing with unread output would reset the connection, and the host could lose the
        # keys with it: say we are done writing, then read until the host hangs up.
        stream.sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + 5.0
        while not stream.closed and time.monotonic() < deadline:
            stream.read(0.5)


def _end_linger(record: HostRecord, path: Path, timeout: float = 5.0) -> bool:
    """Ask a host whose program has ended to exit now; True once it is gone."""
    try:
        HostClient(record.socket or path, timeout=2.0).close()
    except (HostsError, OSError) as exc:
        log.info("host %d would not close (%s); waiting for its linger", record.host_pid, exc)
    deadline = time.monotonic() + timeout
    while host_alive(record):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _read_quietly(path: Path) -> HostRecord | None:
    try:
        return read_record(path)
    except HostsError as exc:
        log.warning("host record %s unreadable: %s", path, exc)
        return None

"""Agent hosts: launching a host for an agent, watching its program end, re-adopting live ones.

Hosts are separate processes (``volee_desktop.hosts``); this base of the agents runner starts
them in a thread (the launcher blocks until the program started), keeps one watch connection
per live host to learn when its program ends, and turns what it sees into events.  What happens
after an end (restart, interruption) is the decision of the end policy it is built with
(``recovery.Exits``), reached through its ``on_exit`` / ``on_vanished``.  Whatever a host
that went away left of its agent's tree is ended here too (``leftovers``): at once when the
host vanished, once the host is gone when the program ended, and at start for the hosts
found gone.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from ...atomicfile import write_atomic
from ...core import events as ev
from ...core.model import Agent, Harness
from ...core.states import AgentState
from ...harness.base import Error as HarnessError
from ...harness.base import LaunchContext, LaunchPlan, ModeCheck, Profile
from ...harness.env import without_desktop
from ...harness.versions import Prober, show
from ...hosts import recordio
from ...hosts.errors import Error as HostsError
from ...hosts.launcher import HostClient, launch_host
from ...hosts.records import HostRecord, host_alive, record_path
from ...paths import ensure_private_dir
from ..context import Context
from ..errors import Refused
from ..ids import session_uuid
from . import leftovers
from .harnesses import HarnessProbes
from .host_io import WatchProtocol, end_linger, is_host_command, read_quietly, wait_gone
from .results import HarnessChoice
from .screens import Screens

log = logging.getLogger(__name__)

HOOKSHIM = Path(__file__).resolve().parents[2] / "cli" / "hookshim.py"
STATUSLINE = HOOKSHIM.with_name("statusline.py")
MCP_RELAY = Path(__file__).resolve().parents[2] / "mcp" / "relay.py"

GONE_CHECKS = 40
GONE_CHECK_PAUSE = 0.05  # seconds: 2 s in all before a live host is watched again
# How long a host whose program ended may take to go (its linger, then ending what the
# program left: hosts/host.py) before its leftovers are looked for all the same.
HOST_GOING = 30.0


class EndPolicy(Protocol):
    """What an agent's end leads to (``recovery.Exits``): a plain end, a restart, a resume."""

    async def on_exit(self, agent: Agent, record: HostRecord) -> None:
        """The program ended: ``record.exit`` says how."""
        ...

    async def on_vanished(self, agent: Agent, record: HostRecord) -> None:
        """The host went away without an exit status."""
        ...


class AgentHosts:
    """Launches and watches the hosts of agents; the commands live in ``AgentsRunner``."""

    def __init__(
        self,
        ctx: Context,
        profiles: Mapping[str, Profile],
        ends: EndPolicy,
        screens: Screens,
        mcp_url: Callable[[str], str | None] = lambda _agent: None,
    ) -> None:
        self.service = ctx.service
        self.dirs = ctx.dirs
        self.clock = ctx.clock
        self.tasks = ctx.tasks
        self.profiles = profiles
        #: The settings in force (the person's confirmation replaces it: daemon/serving/safety.py).
        self.config = ctx.config
        self.ends = ends
        self.watchers: dict[str, asyncio.Task[None]] = {}
        self.screens = screens
        self.volee_cmd: tuple[str, ...] = (sys.executable, "-m", "volee_desktop.cli")
        # Hooks run the shim file itself with -I -S: no site start-up, no package import; a
        # third of `volee hook`'s CPU on every hook of every agent (docs/decisions.md D5).
        self.hook_cmd: tuple[str, ...] = (sys.executable, "-I", "-S", str(HOOKSHIM))
        # Where there is no HTTP endpoint (mcp_url below), the MCP server a harness starts is
        # a relay of the same kind (3 MiB, not 60 MB): the daemon serves every session.
        self.mcp_cmd: tuple[str, ...] = (sys.executable, "-I", "-S", str(MCP_RELAY))
        # Where the daemon serves MCP over HTTP for an agent (daemon/serving/mcphttp.py; None: not
        # serving, the harness gets the relay): no process at all between Claude Code and it.
        self.mcp_url = mcp_url
        self.statusline_cmd: tuple[str, ...] = (sys.executable, "-I", "-S", str(STATUSLINE))
        # VOLEE_CLAUDE_BIN, VOLEE_CODEX_BIN, VOLEE_PI_BIN: the harness executables to use.
        self.binaries: dict[str, str] = {
            h: os.environ[f"VOLEE_{h.upper()}_BIN"]
            for h in ("claude", "codex", "pi")
            if os.environ.get(f"VOLEE_{h.upper()}_BIN")
        }
        self._starting: set[str] = set()
        self.prober = Prober()
        self.harness_probes = HarnessProbes(
            profiles, self.profile, lambda: self.config, self.binaries, self.prober
        )
        # Agents whose host record was suspect at start (agent id -> why), for the status.
        self.suspects: dict[str, str] = {}

    # --- paths -----------------------------------------------------------------------------

    @property
    def hosts_dir(self) -> Path:
        return self.dirs.hosts

    def record_of(self, agent_id: str) -> Path:
        return record_path(self.hosts_dir, agent_id)

    def socket_of(self, agent_id: str) -> Path:
        return self.dirs.runtime / "hosts" / f"{agent_id[-10:]}.sock"

    def host(self, agent_id: str, timeout: float = 5.0) -> HostClient:
        """A client of the agent's host (its socket): the one place the daemon makes one."""
        return HostClient(self.socket_of(agent_id), timeout=timeout)

    async def running_host(self, agent_id: str) -> HostClient | None:
        """A client of the agent's host while its program runs there; None when there is no
        such host (never started in one, its program ended, or the host is gone)."""
        record = await asyncio.to_thread(read_quietly, self.record_of(agent_id))
        if record is None or record.exit is not None or not host_alive(record):
            return None
        return self.host(agent_id)

    def remove_record(self, agent_id: str) -> None:
        """Remove the host record of an agent and its host's log."""
        path = self.record_of(agent_id)
        for each in (path, path.with_suffix(".log")):
            each.unlink(missing_ok=True)

    def files_of(self, agent_id: str) -> Path:
        return self.dirs.state / "agents" / agent_id

    def make_files_dir(self, agent_id: str) -> Path:
        """The agent's files folder, created 0700 in an ``agents/`` folder that is 0700 too."""
        files = self.files_of(agent_id)
        ensure_private_dir(files.parent)
        return ensure_private_dir(files)

    def now(self) -> float:
        return self.clock.now()

    def is_starting(self, agent_id: str) -> bool:
        """Whether a start of the agent is under way (another start is refused meanwhile)."""
        return agent_id in self._starting

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
            mcp=self.mcp_cmd,
            mcp_url=self.mcp_url(agent_id),
            statusline=self.statusline_cmd,
        )

    def agent_env(self, agent: Agent, plan: LaunchPlan) -> dict[str, str]:
        # The person's display and session bus only for the harnesses agents.desktop names.
        env = without_desktop(plan.env, str(agent.harness), self.config.agents.desktop)
        env["VOLEE_AGENT"] = agent.id
        env["VOLEE_SOCKET"] = str(self.dirs.socket)
        env["VOLEE_SPOOL"] = str(self.dirs.spool)
        env["VOLEE_HARNESS"] = str(agent.harness)
        env["VOLEE_HOME"] = os.environ.get("VOLEE_HOME", "") or env.get("VOLEE_HOME", "")
        if not env["VOLEE_HOME"]:
            del env["VOLEE_HOME"]
        env.setdefault("TERM", "xterm-256color")
        env.setdefault("PATH", os.environ.get("PATH", os.defpath))
        return env

    async def start_host(
        self,
        agent: Agent,
        plan: LaunchPlan,
        *,
        how: ev.StartKind,
        automatic: bool,
        reason: str = "",
    ) -> HostRecord:
        """Run ``plan`` for ``agent`` in a new host; record it; watch it."""
        if agent.id in self._starting:
            raise Refused(f"agent {agent.name} is already being started")
        record = self.record_of(agent.id)
        old = await asyncio.to_thread(read_quietly, record)
        if old is not None and host_alive(old):
            if old.exit is None:
                raise Refused(f"agent {agent.name} already runs in host {old.host_pid}")
            # Its program ended; the host only lingers for late attachers: let it go now.
            if not await asyncio.to_thread(end_linger, old, self.host(agent.id, timeout=2.0)):
                raise Refused(
                    f"the old host {old.host_pid} of agent {agent.name} does not go away; "
                    "try again in a few seconds"
                )
        self._starting.add(agent.id)
        try:
            self.make_files_dir(agent.id)
            for path, text in plan.files.items():
                # Settings with hook commands, MCP configs: the agent's own, 0600.
                write_atomic(Path(path), text.encode(), 0o600)
            cwd = agent.launch.cwd if agent.launch else agent.cwd
            env = self.agent_env(agent, plan)
            await self.check_binary(agent, plan, env)
            try:
                host = await asyncio.to_thread(
                    launch_host,
                    agent.id,
                    list(plan.argv),
                    cwd,
                    env,
                    record,
                    self.socket_of(agent.id),
                )
            except HostsError:
                # A host that could not start the program exits: reap it (nobody watches it).
                failed = await asyncio.to_thread(read_quietly, record)
                if failed is not None:
                    self.tasks.spawn(self._after_host(failed), f"leftovers-{agent.id}")
                raise
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
                    how=ev.LinkKind.RESUMED if how is ev.StartKind.RESUME else ev.LinkKind.STARTED,
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
            found = await asyncio.to_thread(
                self.prober.require, str(agent.harness), plan.argv[0], minimum, env
            )
            if isinstance(profile, ModeCheck) and agent.launch is not None:
                text = await asyncio.to_thread(self.prober.help, found.path, env)
                version = show(found.version) if found.version else "of an unknown version"
                profile.check_modes(agent.launch, text, version)
        except HarnessError as exc:
            raise Refused(str(exc)) from exc

    async def harness_choices(self, only: str | None = None) -> list[HarnessChoice]:
        """``agents.harnesses`` (``harnesses.HarnessProbes``)."""
        return await self.harness_probes.choices(only)

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
        path = str(self.socket_of(agent_id))  # never the record's word (docs/faults.md)
        screens = self.screens
        # With its output: the daemon renders the agent's screen (daemon/agents/screens.py).
        watch = WatchProtocol(
            lambda data: screens.output(agent_id, data),
            lambda rows, cols: screens.started(agent_id, rows, cols),
            lambda rows, cols: screens.resized(agent_id, rows, cols),
            lambda: screens.exited(agent_id),
        )
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_unix_connection(lambda: watch, path)
        except OSError:
            transport = None
        if transport is not None:
            screens.flushers[agent_id] = watch.flush
            screens.holders[agent_id] = watch.hold
            try:
                await watch.done
            finally:
                transport.close()
                if screens.flushers.get(agent_id) == watch.flush:
                    del screens.flushers[agent_id]
                if screens.holders.get(agent_id) == watch.hold:
                    del screens.holders[agent_id]
            if watch.ended:
                await self.screens.ended(agent_id)
        # Connection closed: the program ended, or the host went away (read the record).
        await self._host_gone(agent_id)

    async def _host_gone(self, agent_id: str) -> None:
        # The watch connection closes while a killed host is still exiting: give the kernel a
        # moment to finish it (or the host a moment to write the exit) before judging.
        for _ in range(GONE_CHECKS):
            record = await asyncio.to_thread(read_quietly, self.record_of(agent_id))
            agent = self.service.current().agents.get(agent_id)
            if agent is None or record is None:
                return
            if record.exit is not None:
                self.tasks.spawn(self._after_host(record), f"leftovers-{agent_id}")
                await self.ends.on_exit(agent, record)
                return
            if not host_alive(record):
                # Killed outright: what it held of the agent's tree is nobody's now.
                await self.end_leftovers([record])
                await self.ends.on_vanished(agent, record)
                return
            await asyncio.sleep(GONE_CHECK_PAUSE)
        # Still alive with no exit: the host closed this connection for another reason.
        if record is not None:
            self.watch(agent_id, record)

    # --- leftovers -------------------------------------------------------------------------

    async def _after_host(self, record: HostRecord) -> None:
        """Once the host of an ended program is gone, end what it may have left behind."""
        await wait_gone(record, HOST_GOING)
        await self.end_leftovers([record])

    async def end_leftovers(self, records: list[HostRecord], *, fresh: bool = True) -> None:
        """End every process the hosts of ``records`` (gone) left of their agents' trees."""
        dead = [
            leftovers.Dead(
                agent=r.agent,
                host_pid=r.host_pid,
                host_start=r.host_start_ticks,
                program_pid=r.program_pid,
                program_start=r.program_start_ticks,
                fresh=fresh,
            )
            for r in records
        ]
        ended = await asyncio.to_thread(
            leftovers.end_leftovers,
            dead,
            adopted=leftovers.is_subreaper(),
            live_host=self._live_host,
        )
        if ended:
            names = ", ".join(sorted({r.agent for r in records}))
            log.warning(
                "ended %d process(es) left behind by the host of %s: %s", len(ended), names, ended
            )

    def _live_host(self, proc: leftovers.Proc) -> bool:
        """Whether ``proc`` is the live host of an agent (a thread's question: reads files)."""
        argv = recordio.command_line(proc.pid) or []
        pairs = dict(itertools.pairwise(argv))
        agent_id = pairs.get("--agent")
        if agent_id is None or not any("volee_desktop" in arg for arg in argv):
            return False
        if self.is_starting(agent_id):
            return True  # its record is not written yet
        record = read_quietly(self.record_of(agent_id))
        return (
            record is not None
            and record.host_pid == proc.pid
            and record.host_start_ticks in (None, proc.start)
        )

    # --- start-up --------------------------------------------------------------------------

    async def adopt_live_hosts(self) -> list[tuple[Agent, HostRecord]]:
        """Re-adopt every live host; return the agents whose host is gone without an exit.

        A live process is adopted only when it is volee's host for that agent (``identify``);
        otherwise its record is suspect: set aside, said in the timeline and the agent's
        detail, and the process is never signalled nor talked to.
        """
        gone: list[tuple[Agent, HostRecord]] = []
        dead: list[HostRecord] = []
        registry = self.service.current()
        if not self.hosts_dir.is_dir():
            return gone
        for path in sorted(self.hosts_dir.glob("ag_*.json")):
            record = await asyncio.to_thread(read_quietly, path)
            if record is None:
                continue
            agent = registry.agents.get(path.stem) or registry.agents.get(record.agent)
            if agent is None:
                continue
            if not host_alive(record) and record.program_pid is not None:
                dead.append(record)  # went while no daemon ran: its orphans went to init
            if host_alive(record):
                problem = await asyncio.to_thread(self.identify, agent.id, record)
                if problem is not None:
                    await self.suspect(agent, record, path, problem)
                    continue
                if record.exit is None:
                    await self.service.commit(
                        [ev.HostAdopted(at=self.now(), agent=agent.id, host_pid=record.host_pid)]
                    )
                self.watch(agent.id, record)
            elif record.exit is not None:
                if agent.state.live or agent.pid is not None:
                    await self.ends.on_exit(agent, record)
            elif record.program_pid is not None and record.error is None:
                gone.append((agent, record))
        if dead:
            self.tasks.spawn(self.end_leftovers(dead, fresh=False), "leftovers-at-start")
        return gone

    def identify(self, agent_id: str, record: HostRecord) -> str | None:
        """None when the live process of ``record`` is volee's host for ``agent_id``; else why
        it is not.  Checked in order, the cheap ones first: the record's own fields, the
        process's command line, then the host's answer on volee's socket for that agent
        (served by that very pid, as the kernel says)."""
        expected = self.socket_of(agent_id)
        if record.agent != agent_id:
            return f"the record names agent {record.agent!r}, not {agent_id}"
        if record.socket and Path(record.socket) != expected:
            return f"its socket field points at {record.socket}, not at {expected}"
        argv = recordio.command_line(record.host_pid)
        if argv is not None and not is_host_command(argv, agent_id, expected):
            shown = " ".join(argv)[:120]
            return f"pid {record.host_pid} is not volee's host for this agent (it runs {shown!r})"
        try:
            reply, pid = self.host(agent_id, timeout=2.0).hello()
        except HostsError as exc:
            return f"pid {record.host_pid} does not answer on {expected} ({exc})"
        if pid is not None and pid != record.host_pid:
            return f"{expected} is served by pid {pid}, not by pid {record.host_pid}"
        if reply.get("ok") and reply.get("agent") != agent_id:
            return f"the host on {expected} serves agent {reply.get('agent')!r}"
        if not reply.get("ok") and pid is None:
            return f"the host on {expected} does not say whose it is ({reply.get('error')})"
        return None

    async def suspect(self, agent: Agent, record: HostRecord, path: Path, problem: str) -> None:
        """Set a lying record aside and say so; the process it names is left alone."""
        aside = path.with_name(f"{path.name}.suspect-{time.time_ns()}")
        try:
            await asyncio.to_thread(os.replace, path, aside)
        except OSError as exc:
            log.error("could not set the suspect host record %s aside: %s", path, exc)
            aside = path
        log.warning("host record %s is suspect, not adopted: %s", path, problem)
        self.suspects[agent.id] = problem
        at = self.now()
        events: list[ev.Event] = [
            ev.HostSuspect(
                at=at,
                agent=agent.id,
                host_pid=record.host_pid,
                reason=problem,
                set_aside=str(aside),
            )
        ]
        if agent.state is not AgentState.STOPPED or agent.pid is not None:
            events.append(
                ev.StateChanged(
                    at=at,
                    agent=agent.id,
                    state=AgentState.STOPPED,
                    detail=(
                        f"its host record was suspect ({problem}); nothing was signalled. "
                        f"`volee resume {agent.name}` starts it again"
                    ),
                )
            )
        await self.service.commit(events)

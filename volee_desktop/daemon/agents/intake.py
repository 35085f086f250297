"""Hook intake: a payload from ``volee hook`` (live or spooled) becomes events, or is kept.

Nothing is ever thrown away: a payload that cannot be read, or that belongs
to no agent, is written to ``spool/rejected/`` with the reason and logged.  A
hook must never slow or break the agent, so a rejection is not an error reply.

The spool speaks only for its writer, and no connection vouches for who wrote a spool file
(any process of the person's user can): while the daemon serves, a spooled payload for an
agent whose program is alive (so its hooks reach the socket, which identifies them) is
refused and recorded in that agent's timeline; the rest, and everything at start (spooled
while no daemon ran), is taken as "unverified (from the spool)" (``HookSpooled``).  A payload
too large for one message is handed over instead: the shim writes it to ``.<key>.big`` and
sends a small ``hook`` request naming it, which its connection vouches for
(docs/trust-model.md, "The spool").
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ...atomicfile import write_atomic
from ...core import events as ev
from ...core.events import HookSpooled, RequestRefused, StateChanged
from ...core.model import Agent, Location, session_key
from ...core.registry import Registry
from ...harness.base import PayloadError, Profile
from ...hosts.records import HostRecord, program_alive
from ...ipc.methods import Method
from ..clock import Clock
from ..errors import Refused
from ..params import hook_request
from ..service import Service

log = logging.getLogger(__name__)


class HookResult(TypedDict):
    """``hook``: accepted with the events it made, or not and why (never an error: the shim
    would spool it)."""

    accepted: bool
    events: NotRequired[int]
    reason: NotRequired[str]


class Intake:
    """Turns hook payloads into committed events."""

    def __init__(
        self, service: Service, profiles: Mapping[str, Profile], spool: Path, clock: Clock
    ) -> None:
        self._service = service
        self._profiles = profiles
        self.spool = spool
        self.rejected = spool / "rejected"
        self._clock = clock
        self.accepted = 0
        self.rejected_count = 0
        #: The agents whose program runs now (set by the composition root): their spooled
        #: payloads are refused while the daemon serves.
        self.live: Callable[[], set[str]] = set
        #: Whether the daemon's socket is up (so an agent's own hooks reach it, identified).
        self.serving = False
        #: (agent, session) pairs whose refusal is already in the agent's timeline.
        self._foreign_noted: set[tuple[str, str]] = set()

    async def hook(self, params: Mapping[str, Any], *, spooled: bool = False) -> HookResult:
        """Handle one hook request; always answers (accepted or kept with the reason).

        ``spooled``: the payload comes from a spool file, which no connection vouches for;
        its events are committed after a ``HookSpooled`` that marks them unverified.
        """
        if not spooled and isinstance(params.get("handover"), str):
            params = self._handed_over(params)
        request = hook_request(params)
        when = request.received_at if request.received_at is not None else self._clock.now()
        if request.event is None:
            return self._reject(params, "no hook event name (run as `volee hook EVENT`)")
        if request.too_large:
            return self._reject(
                params,
                f"the hook payload is too large (over {request.too_large} bytes, the limit of "
                "`volee hook`); it was not read, so its events are lost",
            )
        raw = request.payload
        if raw is None:
            return self._reject(params, "no payload text")
        try:
            payload = json.loads(raw) if raw.strip() else None
        except json.JSONDecodeError as exc:
            return self._reject(params, f"payload is not JSON: {exc}")
        except RecursionError:
            return self._reject(params, "payload is nested too deeply to read (~1,000 levels)")
        if not isinstance(payload, dict):
            return self._reject(params, "payload is not a JSON object")
        registry = self._service.current()
        agent_id = request.agent
        if agent_id is not None:
            agent = registry.agents.get(agent_id)
            if agent is None:
                gone = registry.name_of(agent_id)
                reason = f"agent {gone} was forgotten" if gone else f"unknown agent {agent_id}"
                return self._reject(params, reason)
        else:
            harness = request.harness
            session = payload.get("session_id")
            owner = registry.owner_of(harness, session) if isinstance(session, str) else None
            if owner is None:
                return self._reject(params, f"no agent owns {harness} session {session!r}")
            agent = registry.agents[owner]
        profile = self._profiles.get(agent.harness)
        if profile is None:
            return self._reject(params, f"no hook support for harness {agent.harness}")
        try:
            events = profile.hook_events(agent, request.event, payload, when)
        except PayloadError as exc:
            return self._reject(params, str(exc))
        session = payload.get("session_id")
        foreign = self._foreign_session(registry, agent, session, when)
        events += foreign
        # A payload that arrives late (spooled, then ingested at the next start; or overtaken
        # by a later hook) must not take the agent back to an older state, e.g. done -> working.
        events = [
            e
            for e in events
            if not (isinstance(e, StateChanged) and e.at < agent.state_since)
            and not (isinstance(e, ev.SessionLinked) and self._foreign(registry, agent, e.session))
        ]
        if spooled and events:
            mark = HookSpooled(
                at=self._clock.now(),
                agent=agent.id,
                hook=request.event,
                events=len(events),
                written_at=request.received_at,
            )
            events = [mark, *events]
        try:
            await self._service.commit(events, key=request.key)
        except Refused as exc:
            return self._reject(params, str(exc))
        if foreign and isinstance(session, str):
            if len(self._foreign_noted) > 1000:
                self._foreign_noted.clear()
            self._foreign_noted.add((agent.id, session))
        self.accepted += 1
        return {"accepted": True, "events": len(events)}

    def _handed_over(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """A payload too large for one message, which the shim wrote to ``.<key>.big``: its
        text joins the request (whose connection said who sent it), and the file goes."""
        key = params.get("handover")
        out = {k: v for k, v in params.items() if k != "handover"}
        if not isinstance(key, str) or not key.replace("-", "").isalnum():
            out["payload"] = None
            return out
        path = self.spool / f".{key}.big"
        try:
            kept = json.loads(_read_regular(path, MAX_SPOOL_FILE))
            payload = kept.get("payload") if isinstance(kept, dict) else None
        except (OSError, ValueError, RecursionError) as exc:
            log.warning("a handed-over hook payload %s could not be read: %s", path.name, exc)
            payload = None
        out["payload"] = payload if isinstance(payload, str) else None
        path.unlink(missing_ok=True)
        return out

    async def _refuse_spooled(self, params: Mapping[str, Any], agent_id: str) -> None:
        """A spooled payload for an agent whose program runs: kept, and in its timeline."""
        event = hook_request(params).event or "?"
        reason = (
            f"a spooled {event} hook for this agent while its program runs and volee serves "
            "(its own hooks come over the socket, which says who sent them; a spool file says "
            f"nothing of its writer); not taken, kept in {self.rejected}"
        )
        self._reject(params, reason)
        refused = RequestRefused(
            at=self._clock.now(), agent=agent_id, method=Method.HOOK, reason=reason
        )
        try:
            await self._service.commit([refused])
        except Refused as exc:
            log.warning("the refused spool file is in no timeline: %s", exc)

    def _named_agent(self, params: Mapping[str, Any]) -> str | None:
        """The agent a spooled payload speaks for (by id, else by its session), or None."""
        request = hook_request(params)
        registry = self._service.current()
        if request.agent is not None:
            return request.agent if request.agent in registry.agents else None
        try:
            payload = json.loads(request.payload or "")
        except (ValueError, RecursionError):
            return None
        session = payload.get("session_id") if isinstance(payload, dict) else None
        return registry.owner_of(request.harness, session) if isinstance(session, str) else None

    @staticmethod
    def _foreign(registry: Registry, agent: Agent, session: str) -> str | None:
        """Whose ``session`` is, when it is not ``agent``'s to take: another agent's name, or
        that of the forgotten agent it belonged to."""
        owner = registry.owner_of(agent.harness, session)
        if owner is not None and owner != agent.id:
            return f"agent {registry.name_of(owner) or owner}"
        gone = registry.ignored.get(session_key(agent.harness, session))
        if gone is not None and gone != agent.id:
            return f"forgotten agent {registry.name_of(gone) or gone}"
        return None

    def _foreign_session(
        self, registry: Registry, agent: Agent, session: Any, at: float
    ) -> list[ev.Event]:
        """The hook's agent is who sent it (its caller's ancestry, ``access._hook``), not whom
        its session id names: a session id of another agent is not adopted (its link is left
        out, the rest of the hook counts) and the other agent is left alone.  A hostile agent
        may send one on purpose, and a session wrongly given to the other agent (discovery did,
        with two codex in one folder: docs/harnesses.md) must not stop this one.  The first
        time for each pair, the agent's timeline says so (the refusal, committed with the hook)."""
        if not isinstance(session, str):
            return []
        whose = self._foreign(registry, agent, session)
        if whose is None:
            return []
        log.warning(
            "a hook of agent %s reports session %s of %s: not taken", agent.name, session, whose
        )
        if (agent.id, session) in self._foreign_noted:
            return []
        reason = f"reported session {session[:80]} of {whose} in a hook: not taken"
        return [ev.RequestRefused(at=at, agent=agent.id, method=Method.HOOK, reason=reason)]

    def _reject(self, params: Mapping[str, Any], reason: str) -> HookResult:
        self.rejected_count += 1
        self.rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
        key = hook_request(params).key
        stem = key if key is not None and key.replace("-", "").isalnum() else None
        stem = stem or f"{time.time_ns()}-{os.getpid()}"
        record = {"reason": reason, "params": dict(params)}
        try:
            write_atomic(self.rejected / f"{stem}.json", json.dumps(record).encode())
        except OSError:
            log.exception("could not keep a rejected hook payload (%s)", reason)
        log.warning("hook %s kept in %s: %s", hook_request(params).event, self.rejected, reason)
        return {"accepted": False, "reason": reason}

    async def ingest_spool(self) -> int:
        """Ingest spooled payloads in order, exactly once (their keys are in the log).

        While ``serving`` (the daemon's socket is up) a payload for an agent whose program
        runs is refused (see the module docstring); at start every payload is taken, marked
        unverified.

        Only regular files are opened, and never in a way that blocks: a FIFO, a socket, a
        symlink or a folder named ``*.json`` is moved to ``rejected/`` unread.  A half-written
        ``.tmp`` left by a hook that was killed mid-write (or a ``.big`` one killed before it
        handed it over) is moved there too once it is old.
        """
        try:  # one read of the folder (the idle daemon looks every SPOOL_EVERY)
            with os.scandir(self.spool) as entries:
                names = [entry.name for entry in entries]
        except (FileNotFoundError, NotADirectoryError):
            return 0
        except OSError as exc:  # as a glob found nothing in it
            log.debug("the spool %s cannot be read: %s", self.spool, exc)
            return 0
        self._clean_stale_tmp(
            [n for n in names if n.startswith(".") and n.endswith((".tmp", ".big"))]
        )
        paths = sorted(self.spool / n for n in names if n.endswith(".json"))
        if not paths:
            return 0
        # Read once per round, and only when there is something to judge (at rest: nothing).
        live = self.live() if self.serving else set()
        count = 0
        for path in paths:
            try:
                params = json.loads(_read_regular(path, MAX_SPOOL_FILE))
                if not isinstance(params, dict):
                    raise ValueError("not a JSON object")
            except FileNotFoundError:
                continue  # ingested meanwhile (or removed by hand)
            except RecursionError:
                self._keep_unreadable(path, "unreadable spool file: nested too deeply")
                continue
            except (OSError, ValueError) as exc:
                self._keep_unreadable(path, f"unreadable spool file: {exc}")
                continue
            params.setdefault("key", path.stem)
            params.pop("handover", None)
            named = self._named_agent(params) if live else None
            key = params.get("key")
            if named is not None and isinstance(key, str) and self._service.has_committed(key):
                named = None  # taken already (a hook that both reached the daemon and spooled)
            if named is not None and named in live:
                await self._refuse_spooled(params, named)
            else:
                await self.hook(params, spooled=True)
            path.unlink(missing_ok=True)
            count += 1
        return count

    def _clean_stale_tmp(self, names: list[str]) -> None:
        now = self._clock.now()
        for path in (self.spool / name for name in names):
            try:
                st = path.lstat()
            except OSError:
                continue
            # A hook writes, fsyncs and renames within milliseconds: an old one was killed.
            if now - st.st_mtime < STALE_TMP:
                continue
            try:
                self._keep_unreadable(path, "half-written by a hook that was killed mid-write")
            except OSError as exc:
                log.warning("could not move the stale spool file %s: %s", path, exc)

    def _keep_unreadable(self, path: Path, reason: str) -> None:
        self.rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self.rejected / path.name
        os.replace(path, target)
        write_atomic(target.with_name(target.name + ".reason.txt"), reason.encode())
        log.warning("spool file %s kept in %s: %s", path.name, self.rejected, reason)


def live_agents(records: Callable[[], list[HostRecord]], registry: Registry) -> set[str]:
    """The agents whose program runs: by their host's record (start time checked, so a
    reused pid is not taken for the program), or, for those volee only watches, by the pid
    discovery follows."""
    live = {
        record.agent
        for record in records()
        if record.program_pid is not None and program_alive(record)
    }
    for agent in registry.agents.values():
        if agent.location is not Location.HOST and agent.pid is not None and agent.state.live:
            live.add(agent.id)
    return live


#: A spool file larger than this is not read (the shim never writes one: its cap is 8 MiB).
MAX_SPOOL_FILE = 64 << 20
#: A ``.tmp`` in the spool older than this (seconds) was left by a hook killed mid-write.
STALE_TMP = 600.0


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; else OSError.

    Opened with O_NONBLOCK and O_NOFOLLOW, so a FIFO or a symlink never blocks nor leads
    elsewhere; the type is checked on the open file, not on the name (no race).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file ({stat.filemode(st.st_mode)})")
        if st.st_size > limit:
            raise OSError(f"{path.name} is {st.st_size} bytes, more than {limit}")
        os.set_blocking(fd, True)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

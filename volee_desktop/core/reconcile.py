"""Reconciliation: a harness listing compared with the registry gives events (seed 002).

``reconcile(registry, listing, previous, processes, now)`` is pure: the daemon's
discovery loop takes the listing (``claude agents --json --all``, the sessions
folder, the process table) and commits what this returns.  Rules, in order:

1. ``continued``: a session that changes its id inside the same process (same
   pid) keeps its agent; a stand-in id (no session file yet) never replaces one.
2. ``moved_to_background``: a terminal session that stops being listed while its
   process still runs went on as a background session in the same directory;
   the agent takes it.  A background session that just started beside a
   terminal session waits ``MOVE_GRACE`` seconds before it becomes an agent of
   its own.
3. Listed sessions: a known agent's state follows the listing only when the
   coarse category differs (a richer state from hooks is never overwritten by
   a coarser one); a live session nobody owns becomes an ``independent`` agent;
   finished sessions nobody owns are history and are skipped; a watched agent
   takes the listing's name (agent-renamed); an older session of an agent that
   runs on its own beside the agent's current one is released and becomes an
   agent of its own (session-released, ADR 0027).
4. Disappearance: when a complete listing no longer contains the current
   session of an agent volee watches through discovery (terminal or
   background, not a volee host), it becomes ``stopped`` (terminal) or
   ``lost`` (background), never ``done``; a session file left behind by a dead
   process that was busy makes it interrupted, with a resume action.
5. Dead sessions nobody owns that were busy when their process died become
   independent agents, stopped and interrupted, with a resume action (volee
   did not launch them, so it never resumes them on its own).
6. Expiry: an agent volee only watched that is gone with its session for
   ``expire_after`` seconds is removed (agent-expired); listed again, its
   sessions come back as a new agent.

Sessions of forgotten agents are ignored; a harness's own subagent sessions
never become agents.  Events come out in an order that validates as one batch
against ``registry``: each group is checked on a working copy before it is
kept, so one surprising session never spoils the others.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from . import events as ev
from .ids import AGENT, new_id
from .model import Agent, Harness, Interruption, Location, Role, session_key
from .names import unique_name
from .registry import Registry
from .states import AgentState, Coarse, coarse

#: A background session that starts beside a terminal session waits this long (seconds)
#: before it becomes an agent of its own: it may be the terminal session moving (ADR 0034).
MOVE_GRACE = 5.0
#: A watched agent gone with its session is removed after this long (seconds).
EXPIRE_AFTER = 24 * 3600.0
#: A dead session older than this is history, not an interruption to offer (seconds).
DEAD_MAX_AGE = 7 * 24 * 3600.0

INTERRUPTED_CAUSE = Interruption.CRASHED
INTERRUPTED_DETAIL = "interrupted: its process ended mid-turn"
NOT_RESUMED = "volee did not launch it, so it is not resumed on its own"
#: RecoveryDecided.rule for sessions started outside volee (recovery.md's table is for hosts).
RULE_NOT_LAUNCHED = 0


@dataclass(frozen=True, kw_only=True)
class ListedSession:
    """One session of a harness listing, harness-neutral."""

    harness: Harness
    session: str
    pid: int | None = None
    cwd: str = ""
    location: Location = Location.TERMINAL
    status: Coarse | None = None  # None: the listing does not say (process-table entries)
    waiting_for: str = ""
    #: An idle session whose last turn ended with its answer (codex/pi session files say
    #: it): volee's ``done``, not ``idle``.
    done: bool = False
    #: When that turn ended (the file's time): an agent idle since before then is done again,
    #: one the person saw done since (idle after) stays idle.
    done_at: float | None = None
    name: str = ""
    started_at: float | None = None  # seconds since the epoch
    finished: bool = False  # a completed or stopped background session (``--all``)
    failed: bool = False
    subagent: bool = False
    #: ``session`` is a stand-in (the process is seen, its session file not yet): it never
    #: replaces a session an agent already has.
    stand_in: bool = False

    @property
    def key(self) -> str:
        return session_key(self.harness, self.session)


@dataclass(frozen=True, kw_only=True)
class DeadSession:
    """A session file left behind by a process that is gone (kill -9, a crash)."""

    harness: Harness
    session: str
    pid: int
    cwd: str = ""
    name: str = ""
    busy: bool = False  # its last status was busy: it was interrupted mid-turn
    updated_at: float | None = None
    location: Location = Location.TERMINAL

    @property
    def key(self) -> str:
        return session_key(self.harness, self.session)


@dataclass(frozen=True, kw_only=True)
class Listing:
    """What discovery saw at ``taken_at``: live sessions, dead ones, and where it is complete."""

    sessions: tuple[ListedSession, ...] = ()
    dead: tuple[DeadSession, ...] = ()
    #: Harnesses whose every live session is in ``sessions`` (a partial listing proves no end).
    complete: frozenset[Harness] = field(default_factory=frozenset)
    taken_at: float = 0.0

    def keys(self) -> set[str]:
        return {s.key for s in self.sessions if not s.subagent}


EMPTY = Listing()


def listed_state(
    status: Coarse | None, waiting_for: str = "", done: bool = False
) -> tuple[AgentState, str]:
    """The agent state a listing's coarse status stands for."""
    if status is Coarse.IDLE and done:
        return AgentState.DONE, ""
    if status is Coarse.BUSY:
        return AgentState.WORKING, ""
    if status is Coarse.WAITING:
        return AgentState.NEEDS_INPUT, waiting_for or "waiting"
    if status is Coarse.GONE:
        return AgentState.STOPPED, ""
    return AgentState.IDLE, ""


def agent_id_for(session: ListedSession | DeadSession, now: float) -> str:
    """A fresh agent id, drawn from the time and the session (the core draws no randomness)."""
    digest = hashlib.sha256(f"{session.key}@{now!r}".encode()).digest()
    return new_id(AGENT, int(now * 1000), digest[:10])


def name_matches(agent_name: str, listed: str) -> bool:
    """Whether an agent's name is the listed one, or it made unique (``name-2``)."""
    return agent_name == listed or re.fullmatch(re.escape(listed) + r"-\d+", agent_name) is not None


def watched(agent: Agent) -> bool:
    """Whether volee knows this agent only through discovery (not a host of its own)."""
    return agent.location in (Location.TERMINAL, Location.BACKGROUND)


class _Batch:
    """Events kept so far, on a working copy that validates the next group against them."""

    def __init__(self, registry: Registry) -> None:
        self.work = registry.fork()
        self.events: list[ev.Event] = []

    def emit(self, *group: ev.Event) -> bool:
        trial = self.work.fork()
        for event in group:
            if trial.validate(event) is not None:
                return False
            trial.apply(event)
        self.work = trial
        self.events.extend(group)
        return True

    def owner(self, session: ListedSession | DeadSession) -> Agent | None:
        agent_id = self.work.owner_of(session.harness, session.session)
        return self.work.agents.get(agent_id) if agent_id else None

    def ignored(self, session: ListedSession | DeadSession) -> bool:
        return self.work.is_ignored(session.harness, session.session)

    def unique_name(self, base: str) -> str:
        return unique_name(base, self.work.agents.values())


def reconcile(
    registry: Registry,
    listing: Listing,
    previous: Listing | None,
    processes: Container[int],
    now: float,
    *,
    expire_after: float = EXPIRE_AFTER,
    dead_max_age: float = DEAD_MAX_AGE,
) -> list[ev.Event]:
    """The events that bring the registry in line with ``listing`` (pure)."""
    prev = previous or EMPTY
    batch = _Batch(registry)
    sessions = [s for s in listing.sessions if not s.subagent]
    _continued(batch, sessions, prev, now)
    _moved_to_background(batch, sessions, listing, prev, processes, now)
    for session in sessions:
        _listed(batch, session, sessions, listing, now)
    _disappeared(batch, listing, processes, now)
    _dead_sessions(batch, listing, now, dead_max_age)
    _expired(batch, listing, now, expire_after)
    return batch.events


# --- rule 1: continued --------------------------------------------------------------------


def _continued(batch: _Batch, sessions: list[ListedSession], prev: Listing, now: float) -> None:
    current = {s.key for s in sessions}
    before_by_pid = {
        (s.harness, s.pid): s for s in prev.sessions if s.pid is not None and not s.subagent
    }
    for session in sessions:
        if session.pid is None or batch.owner(session) or batch.ignored(session):
            continue
        agent = _agent_of_pid(batch, session, before_by_pid)
        if agent is None or agent.session is None or session.stand_in:
            continue  # (a stand-in id says nothing new: pi names no session before it replies)
        if session_key(agent.harness, agent.session) in current:
            continue  # its own session is still listed: this is another conversation
        group: list[ev.Event] = [
            ev.SessionLinked(
                at=now, agent=agent.id, session=session.session, how=ev.LinkKind.CONTINUED
            )
        ]
        if watched(agent) and agent.location is not session.location:
            group.append(
                ev.LocationChanged(
                    at=now, agent=agent.id, location=session.location, pid=session.pid
                )
            )
        batch.emit(*group)


def _agent_of_pid(
    batch: _Batch,
    session: ListedSession,
    before_by_pid: dict[tuple[Harness, int], ListedSession],
) -> Agent | None:
    if session.pid is None:
        return None
    before = before_by_pid.get((session.harness, session.pid))
    if before is not None and before.session != session.session:
        owner = batch.owner(before)
        if owner is not None:
            return owner
    for agent in batch.work.agents.values():
        if agent.pid == session.pid and agent.harness is session.harness and agent.live:
            return agent
    return None


# --- rule 2: moved_to_background ----------------------------------------------------------


def _moved_to_background(
    batch: _Batch,
    sessions: list[ListedSession],
    listing: Listing,
    prev: Listing,
    processes: Container[int],
    now: float,
) -> None:
    current = {s.key for s in sessions}
    before = {s.key for s in prev.sessions}
    for old in prev.sessions:
        if old.location is not Location.TERMINAL or old.key in current or old.subagent:
            continue
        if old.pid is None or old.pid not in processes:
            continue  # its process ended: the session ended with it
        agent = batch.owner(old)
        if agent is None or agent.session != old.session:
            continue
        candidates = [
            s
            for s in sessions
            if s.location is Location.BACKGROUND
            and s.harness is old.harness
            and not s.finished
            and _same_dir(s.cwd, old.cwd)
            and (s.key not in before or _waited(s, prev))
            and batch.owner(s) is None
            and not batch.ignored(s)
        ]
        if not candidates:
            continue
        moved = max(candidates, key=lambda s: (s.started_at or 0.0, s.session))
        group: list[ev.Event] = [
            ev.SessionLinked(at=now, agent=agent.id, session=moved.session, how=ev.LinkKind.MOVED),
            ev.LocationChanged(at=now, agent=agent.id, location=Location.BACKGROUND, pid=moved.pid),
        ]
        group += _state_events(agent, moved, listing, now)
        batch.emit(*group)


def _waited(session: ListedSession, prev: Listing) -> bool:
    """Whether ``session`` was in the previous listing only as one that waited beside a
    terminal session (started within ``MOVE_GRACE`` of it): the move it waited for."""
    started = session.started_at
    return started is not None and prev.taken_at - started < MOVE_GRACE


def _same_dir(a: str, b: str) -> bool:
    return bool(a) and bool(b) and PurePosixPath(a) == PurePosixPath(b)


def _waits_beside_terminal(
    session: ListedSession, sessions: list[ListedSession], now: float
) -> bool:
    if session.location is not Location.BACKGROUND or session.started_at is None:
        return False
    if now - session.started_at >= MOVE_GRACE:
        return False
    return any(
        s.location is Location.TERMINAL
        and s.harness is session.harness
        and _same_dir(s.cwd, session.cwd)
        for s in sessions
    )


# --- rule 3: listed sessions --------------------------------------------------------------


def _listed(
    batch: _Batch,
    session: ListedSession,
    sessions: list[ListedSession],
    listing: Listing,
    now: float,
) -> None:
    if batch.ignored(session):
        return  # its agent was forgotten: never comes back
    agent = batch.owner(session)
    if agent is None:
        if session.finished or _waits_beside_terminal(session, sessions, now):
            return
        if _pid_taken(batch, session):
            return  # the program of an agent volee runs (its session id is linked elsewhere)
        batch.emit(*_register(batch, session, now))
        return
    if agent.session == session.session:
        batch.emit(*_follow(batch, agent, session, listing, now))
        return
    # An older session of the agent runs again.
    current = next(
        (s for s in sessions if s.harness is agent.harness and s.session == agent.session), None
    )
    if session.finished:
        return
    if current is not None and not current.finished:
        # Beside the agent's current one: another conversation now, an agent of its own.
        released = ev.SessionReleased(at=now, agent=agent.id, session=session.session)
        batch.emit(released, *_register(batch, session, now))
        return
    group: list[ev.Event] = [
        ev.SessionLinked(at=now, agent=agent.id, session=session.session, how=ev.LinkKind.RESUMED)
    ]
    group += _place(agent, session, now)
    group += _state_events(agent, session, listing, now)
    batch.emit(*group)


def _pid_taken(batch: _Batch, session: ListedSession) -> bool:
    if session.pid is None:
        return False
    return any(a.pid == session.pid and a.live for a in batch.work.agents.values())


def _register(batch: _Batch, session: ListedSession, now: float) -> list[ev.Event]:
    agent_id = agent_id_for(session, now)
    state, detail = listed_state(session.status, session.waiting_for, session.done)
    if session.finished:
        state, detail = (AgentState.FAILED if session.failed else AgentState.STOPPED), ""
    base = session.name.strip() or _default_name(session)
    return [
        ev.AgentRegistered(
            at=now,
            agent=agent_id,
            name=batch.unique_name(base),
            harness=session.harness,
            role=Role.INDEPENDENT,
            launched_by_volee=False,
            cwd=session.cwd,
            location=session.location,
            state=state,
            detail=detail,
        ),
        ev.SessionLinked(
            at=now, agent=agent_id, session=session.session, how=ev.LinkKind.DISCOVERED
        ),
        ev.LocationChanged(at=now, agent=agent_id, location=session.location, pid=session.pid),
    ]


def _default_name(session: ListedSession | DeadSession) -> str:
    folder = PurePosixPath(session.cwd).name if session.cwd else ""
    return f"{folder or session.harness}-{session.session[:4]}"


def _follow(
    batch: _Batch, agent: Agent, session: ListedSession, listing: Listing, now: float
) -> list[ev.Event]:
    out = _place(agent, session, now)
    out += _state_events(agent, session, listing, now)
    if (
        session.name.strip()
        and not agent.launched_by_volee
        and agent.location is not Location.HOST
        and not name_matches(agent.name, session.name.strip())
    ):
        name = batch.unique_name(session.name.strip())
        out.append(ev.AgentRenamed(at=now, agent=agent.id, name=name))
    return out


def _place(agent: Agent, session: ListedSession, now: float) -> list[ev.Event]:
    """Where a listed session runs, for agents not in a live volee host."""
    if session.finished:
        return []
    # A host's program is listed before its first hook makes the agent live (a resume
    # starts from "stopped"): its own pid keeps it in the host.
    own = agent.pid is not None and agent.pid == session.pid
    in_host = agent.location is Location.HOST and (agent.live or own)
    if in_host or (agent.location is session.location and agent.pid == session.pid):
        return []
    return [ev.LocationChanged(at=now, agent=agent.id, location=session.location, pid=session.pid)]


def _state_events(
    agent: Agent, session: ListedSession, listing: Listing, now: float
) -> list[ev.Event]:
    if agent.state_since > listing.taken_at:
        return []  # something newer (a hook) spoke after this listing began
    if agent.location is Location.HOST and (agent.live or agent.pid == session.pid):
        # Its program runs in a volee host with volee's hooks: they say every change, and
        # more finely. The listing's status lags them and counts Claude Code's own work
        # after a turn (a new session's title) as busy, which would turn done into working.
        return []
    if session.finished:
        if not agent.live:
            return []
        state = AgentState.FAILED if session.failed else AgentState.STOPPED
        return [
            ev.StateChanged(at=now, agent=agent.id, state=state, detail="background session ended")
        ]
    if (
        session.done
        and agent.state is AgentState.IDLE
        and session.done_at is not None
        # A turn that ended after the agent last became idle; or any turn, while the agent
        # is still in the idle the listing that found it saw: that listing looked when it
        # began, and a reply written while it ran is older than the registration (ci-6).
        and (session.done_at > agent.state_since or agent.state_since == agent.created_at)
    ):
        return [ev.StateChanged(at=now, agent=agent.id, state=AgentState.DONE)]
    if session.status is None or coarse(agent.state) is session.status:
        return []
    state, detail = listed_state(session.status, session.waiting_for, session.done)
    return [ev.StateChanged(at=now, agent=agent.id, state=state, detail=detail)]


# --- rule 4: disappearance ----------------------------------------------------------------


def _disappeared(batch: _Batch, listing: Listing, processes: Container[int], now: float) -> None:
    listed = listing.keys()
    dead = {d.key: d for d in listing.dead}
    for agent in list(batch.work.agents.values()):
        if agent.harness not in listing.complete or not watched(agent) or not agent.live:
            continue
        if agent.session is None or agent.state_since > listing.taken_at:
            continue
        key = session_key(agent.harness, agent.session)
        if key in listed:
            continue
        if agent.location is Location.TERMINAL and agent.pid is not None and agent.pid in processes:
            continue  # its process still runs: it may be moving to the background
        gone = dead.get(key)
        if gone is not None and gone.busy:
            batch.emit(*_interrupted(agent.id, agent.state, now))
        elif agent.location is Location.BACKGROUND:
            batch.emit(
                ev.StateChanged(
                    at=now,
                    agent=agent.id,
                    state=AgentState.LOST,
                    detail="its background session is no longer listed",
                )
            )
        else:
            batch.emit(
                ev.StateChanged(
                    at=now, agent=agent.id, state=AgentState.STOPPED, detail="session ended"
                )
            )


def _interrupted(agent_id: str, was: AgentState, now: float) -> list[ev.Event]:
    return [
        ev.InterruptionDetected(at=now, agent=agent_id, cause=INTERRUPTED_CAUSE, state=was),
        ev.StateChanged(
            at=now, agent=agent_id, state=AgentState.STOPPED, detail=INTERRUPTED_DETAIL
        ),
        ev.RecoveryDecided(
            at=now,
            agent=agent_id,
            outcome=ev.RecoveryOutcome.STOPPED,
            rule=RULE_NOT_LAUNCHED,
            reason=NOT_RESUMED,
            action="resume",
        ),
    ]


# --- rule 5: dead sessions nobody owns ----------------------------------------------------


def _dead_sessions(batch: _Batch, listing: Listing, now: float, max_age: float) -> None:
    listed = listing.keys()
    for gone in listing.dead:
        if not gone.busy or gone.key in listed or batch.ignored(gone) or batch.owner(gone):
            continue
        if gone.updated_at is not None and now - gone.updated_at > max_age:
            continue
        agent_id = agent_id_for(gone, now)
        registered = ev.AgentRegistered(
            at=now,
            agent=agent_id,
            name=batch.unique_name(gone.name.strip() or _default_name(gone)),
            harness=gone.harness,
            role=Role.INDEPENDENT,
            launched_by_volee=False,
            cwd=gone.cwd,
            location=gone.location,
            state=AgentState.STOPPED,
            detail=INTERRUPTED_DETAIL,
        )
        linked = ev.SessionLinked(
            at=now, agent=agent_id, session=gone.session, how=ev.LinkKind.DISCOVERED
        )
        events = _interrupted(agent_id, AgentState.WORKING, now)
        # Already stopped from registration: keep the interruption and the action only.
        batch.emit(registered, linked, events[0], events[2])


# --- rule 6: expiry -----------------------------------------------------------------------


def _expired(batch: _Batch, listing: Listing, now: float, expire_after: float) -> None:
    listed = listing.keys()
    dead = {d.key for d in listing.dead}
    for agent in list(batch.work.agents.values()):
        if agent.launched_by_volee or agent.location is Location.HOST or agent.live:
            continue
        if agent.harness not in listing.complete or now - agent.state_since < expire_after:
            continue
        keys = {session_key(agent.harness, s) for s in agent.sessions}
        if keys & listed or keys & dead:
            continue  # its session is still there (listed, or a dead file to resume from)
        batch.emit(ev.AgentExpired(at=now, agent=agent.id))

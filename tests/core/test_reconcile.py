"""reconcile: one test per rule, with listings shaped like ``claude agents --json --all``."""

from __future__ import annotations

import json
from typing import Any

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, Location, Role
from volee_desktop.core.reconcile import (
    INTERRUPTED_CAUSE,
    MOVE_GRACE,
    DeadSession,
    ListedSession,
    Listing,
    reconcile,
)
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState
from volee_desktop.harness.listing import parse_claude_agents

from .support import A1, A2, T0, given, linked, registered, state

S1 = "458c6f8c-9494-4e5b-9161-f890013732dc"
S2 = "b329b698-e568-4d2c-90de-a11b075ce0f6"
S3 = "0f3c2a55-1b7e-4f0e-9a51-3f2d5d8f7c10"
NOW = T0 + 100.0
CLAUDE = frozenset({Harness.CLAUDE})


def entry(session: str = S1, pid: int = 25069, **fields: Any) -> dict[str, Any]:
    """One entry as Claude Code 2.1.332 prints it (reference/claude-agents-json.txt)."""
    data: dict[str, Any] = {
        "pid": pid,
        "cwd": "/home/dev/src/proj3",
        "kind": "interactive",
        "startedAt": int((T0 + 10) * 1000),
        "sessionId": session,
        "name": "proj3-75",
        "status": "busy",
    }
    data.update(fields)
    return data


def listing(*entries: dict[str, Any], taken_at: float = NOW, **fields: Any) -> Listing:
    """A complete Claude listing parsed from the JSON text Claude Code would print."""
    fields.setdefault("complete", CLAUDE)
    sessions = tuple(parse_claude_agents(json.dumps(list(entries))))
    return Listing(sessions=sessions, taken_at=taken_at, **fields)


def apply_all(registry: Registry, events: list[ev.Event]) -> Registry:
    """Apply the events as the daemon would (they must validate as one batch)."""
    work = registry.fork()
    for event in events:
        problem = work.validate(event)
        assert problem is None, f"{event.TYPE} refused: {problem}"
        work.apply(event)
    return work


def types(events: list[ev.Event]) -> list[str]:
    return [e.TYPE for e in events]


def watched_agent(
    agent: str = A1,
    session: str = S1,
    *,
    location: Location = Location.TERMINAL,
    pid: int = 25069,
    st: AgentState = AgentState.WORKING,
    name: str = "proj3-75",
) -> list[ev.Event]:
    """Events of an agent volee found through discovery."""
    return [
        registered(
            agent,
            name,
            role=Role.INDEPENDENT,
            launched_by_volee=False,
            location=location,
            state=st,
            cwd="/home/dev/src/proj3",
        ),
        linked(agent, session),
        ev.LocationChanged(at=T0, agent=agent, location=location, pid=pid),
    ]


def host_agent(agent: str = A1, session: str = S1, pid: int = 25069) -> list[ev.Event]:
    """Events of an agent volee launched in a host."""
    return [
        registered(agent, "mine", cwd="/home/dev/src/proj3"),
        linked(agent, session),
        ev.HostStarted(at=T0, agent=agent, host_pid=pid - 1, program_pid=pid),
        state(agent, AgentState.WORKING),
    ]


# --- a live session nobody owns -----------------------------------------------------------


def test_a_live_session_nobody_owns_becomes_an_independent_agent() -> None:
    events = reconcile(Registry(), listing(entry()), None, {25069}, NOW)

    assert types(events) == ["agent-registered", "session-linked", "location-changed"]
    after = apply_all(Registry(), events)
    (agent,) = after.agents.values()
    assert (agent.role, agent.launched_by_volee, agent.location, agent.pid) == (
        Role.INDEPENDENT,
        False,
        Location.TERMINAL,
        25069,
    )
    assert (agent.name, agent.state, agent.cwd, agent.session) == (
        "proj3-75",
        AgentState.WORKING,
        "/home/dev/src/proj3",
        S1,
    )
    linked_event = events[1]
    assert isinstance(linked_event, ev.SessionLinked)
    assert linked_event.how == "discovered"


def test_a_listed_session_is_registered_once() -> None:
    first = apply_all(Registry(), reconcile(Registry(), listing(entry()), None, {25069}, NOW))

    again = reconcile(first, listing(entry(), taken_at=NOW + 2), listing(entry()), {25069}, NOW + 2)

    assert again == []


def test_waiting_and_background_sessions_take_their_state_and_location() -> None:
    events = reconcile(
        Registry(),
        listing(
            entry(status="waiting", waitingFor="permission prompt"),
            entry(S2, pid=4242, kind="background", status="idle", id="bg1", state="running"),
        ),
        None,
        {25069, 4242},
        NOW,
    )

    after = apply_all(Registry(), events)
    by_session = {a.session: a for a in after.agents.values()}
    assert (by_session[S1].state, by_session[S1].detail) == (
        AgentState.NEEDS_INPUT,
        "permission prompt",
    )
    assert (by_session[S2].state, by_session[S2].location) == (AgentState.IDLE, Location.BACKGROUND)
    assert by_session[S2].name == "proj3-75-2"  # names stay unique


def test_the_program_of_an_agent_volee_runs_never_becomes_a_second_agent() -> None:
    # A codex host agent whose session id is not known yet: the process scan lists its pid.
    registry = given(
        registered(A1, "mine", harness=Harness.CODEX, cwd="/p"),
        ev.HostStarted(at=T0, agent=A1, host_pid=400, program_pid=401),
        state(A1, AgentState.WORKING),
    )
    scanned = ListedSession(harness=Harness.CODEX, session="pid-401-1700000000", pid=401)

    events = reconcile(registry, Listing(sessions=(scanned,)), None, {401}, NOW)

    assert events == []


def test_finished_sessions_nobody_owns_are_history() -> None:
    done = entry(S2, kind="background", status="idle", id="bg1", state="completed")

    assert reconcile(Registry(), listing(done), None, set(), NOW) == []


def test_a_harness_subagent_session_never_becomes_an_agent() -> None:
    sub = entry(S2, pid=25070, parentSessionId=S1)

    assert reconcile(Registry(), listing(sub), None, {25070}, NOW) == []


# --- a listed session of a known agent ----------------------------------------------------


def test_state_follows_the_listing_when_the_coarse_category_differs() -> None:
    registry = given(*watched_agent(st=AgentState.WORKING))

    events = reconcile(registry, listing(entry(status="idle")), None, {25069}, NOW)

    assert events == [ev.StateChanged(at=NOW, agent=A1, state=AgentState.IDLE, detail="")]


def test_a_session_file_that_says_done_makes_an_idle_agent_done_unless_seen_since() -> None:
    """codex/pi: the end of their session file says the turn ended (done), at the file's
    time; an agent idle since before then is done, one the person saw done since stays."""
    from volee_desktop.core.reconcile import ListedSession
    from volee_desktop.core.states import Coarse

    def pi_listing(done_at: float) -> Listing:
        pi = ListedSession(
            harness=Harness.PI, session=S1, pid=25069, cwd="/home/dev/src/proj3",
            status=Coarse.IDLE, done=True, done_at=done_at,
        )  # fmt: skip
        return Listing(sessions=(pi,), complete=frozenset({Harness.PI}), taken_at=NOW)

    events = [*watched_agent(st=AgentState.IDLE)]
    events[0] = ev.AgentRegistered(**{**events[0].__dict__, "harness": Harness.PI})
    idle_at_t0 = given(*events)
    assert reconcile(idle_at_t0, pi_listing(T0 + 5), None, {25069}, NOW) == [
        ev.StateChanged(at=NOW, agent=A1, state=AgentState.DONE)
    ]
    seen_after = given(
        *events, state(A1, AgentState.DONE, at=T0 + 8), state(A1, AgentState.IDLE, at=T0 + 9)
    )
    assert reconcile(seen_after, pi_listing(T0 + 5), None, {25069}, NOW) == []


def test_a_turn_that_ends_while_the_listing_that_finds_its_agent_runs_is_done() -> None:
    """ci-6's pi, under load: the listing that found the pi process began before pi wrote its
    session file and ended after its reply was in it (a stand-in, registered idle at the
    listing's end); the next listing found the file, linked the session and said done, at
    the file's time: before the agent's registration, never after it.  The registration's
    idle was what that listing saw when it began, not a state anyone saw since: done."""
    from volee_desktop.core.reconcile import ListedSession
    from volee_desktop.core.states import Coarse

    stand_in = ListedSession(
        harness=Harness.PI, session="pid-401-1700000000", pid=401, cwd="/p", stand_in=True
    )
    first = Listing(sessions=(stand_in,), complete=frozenset({Harness.PI}), taken_at=T0 + 10)
    registry = apply_all(Registry(), reconcile(Registry(), first, None, {401}, T0 + 15))
    (agent,) = registry.agents.values()
    assert (agent.state, agent.state_since) == (AgentState.IDLE, T0 + 15)

    found = ListedSession(
        harness=Harness.PI, session=S2, pid=401, cwd="/p",
        status=Coarse.IDLE, done=True, done_at=T0 + 12,
    )  # fmt: skip
    second = Listing(sessions=(found,), complete=frozenset({Harness.PI}), taken_at=T0 + 16)
    after = apply_all(registry, reconcile(registry, second, first, {401}, T0 + 17))
    assert (after.agents[agent.id].session, after.agents[agent.id].state) == (
        S2,
        AgentState.DONE,
    )
    # Once its state changed (the person saw it done, then idle), an older turn stays seen.
    seen = apply_all(
        registry,
        [
            state(agent.id, AgentState.DONE, at=T0 + 15.5),
            state(agent.id, AgentState.IDLE, at=T0 + 15.6),
        ],
    )
    assert AgentState.DONE not in [
        getattr(e, "state", None) for e in reconcile(seen, second, first, {401}, T0 + 17)
    ]


def test_a_richer_state_from_hooks_is_never_overwritten_by_a_coarser_one() -> None:
    registry = given(
        *host_agent(),
        state(A1, AgentState.NEEDS_INPUT, detail="permission for Bash"),
    )
    waiting = entry(status="waiting", waitingFor="permission prompt")
    done = given(*host_agent(), state(A1, AgentState.DONE))

    assert reconcile(registry, listing(waiting), None, {25069}, NOW) == []
    assert reconcile(done, listing(entry(status="idle")), None, {25069}, NOW) == []


def test_a_listing_older_than_the_last_state_change_does_not_touch_the_state() -> None:
    # The listing began before a hook said Stop: its "busy" is stale.
    registry = given(*host_agent(), state(A1, AgentState.DONE, at=NOW - 1))

    events = reconcile(
        registry, listing(entry(status="busy"), taken_at=NOW - 2), None, {25069}, NOW
    )

    assert events == []


def test_the_state_of_an_agent_in_a_volee_host_is_left_to_its_hooks() -> None:
    # Seen with Claude Code 2.1.332: after the first turn of a new session it names the
    # session in the background and lists itself busy for a moment, after Stop said done.
    done = given(*host_agent(), state(A1, AgentState.DONE, at=NOW - 5))
    working = given(*host_agent(), state(A1, AgentState.WORKING, at=NOW - 5))

    assert reconcile(done, listing(entry(status="busy")), None, {25069}, NOW) == []
    assert reconcile(working, listing(entry(status="idle")), None, {25069}, NOW) == []


def test_a_volee_agent_resumed_in_a_terminal_is_placed_there() -> None:
    registry = given(
        *host_agent(),
        ev.ProgramExited(at=T0, agent=A1, code=0),
        state(A1, AgentState.STOPPED, detail="exited"),
    )

    events = reconcile(registry, listing(entry(pid=777, status="busy")), None, {777}, NOW)

    after = apply_all(registry, events)
    assert (after.agents[A1].location, after.agents[A1].pid, after.agents[A1].state) == (
        Location.TERMINAL,
        777,
        AgentState.WORKING,
    )


def test_a_host_resuming_a_stopped_agent_keeps_it_in_the_host_before_its_first_hook() -> None:
    # `volee resume` of an outside session: the host started, Claude listed its session,
    # no hook yet (the agent is still stopped).
    registry = given(
        *watched_agent(st=AgentState.STOPPED),
        ev.HostStarted(at=T0 + 1, agent=A1, host_pid=776, program_pid=777),
    )

    events = reconcile(registry, listing(entry(pid=777, status="idle")), None, {777}, NOW)

    after = apply_all(registry, events)
    assert (after.agents[A1].location, after.agents[A1].pid) == (Location.HOST, 777)


# --- rule: continued ----------------------------------------------------------------------


def test_continued_a_session_that_changes_id_in_the_same_process_keeps_its_agent() -> None:
    registry = given(*watched_agent())
    before = listing(entry(S1), taken_at=NOW - 2)

    events = reconcile(registry, listing(entry(S2, status="idle")), before, {25069}, NOW)

    assert types(events) == ["session-linked", "state-changed"]
    linked_event = events[0]
    assert isinstance(linked_event, ev.SessionLinked)
    assert (linked_event.agent, linked_event.session, linked_event.how) == (A1, S2, "continued")
    after = apply_all(registry, events)
    assert after.agents[A1].sessions == (S1, S2)
    assert len(after.agents) == 1


def test_continued_works_for_a_volee_host_agent_through_its_program_pid() -> None:
    registry = given(*host_agent())

    events = reconcile(registry, listing(entry(S2)), None, {25069}, NOW)

    assert types(events) == ["session-linked"]
    assert apply_all(registry, events).agents[A1].session == S2


def test_continued_never_takes_a_stand_in_id_over_the_session_of_an_agent_volee_launched() -> None:
    # pi writes no session file before its first reply: the process scan sees the program of a
    # volee host and names it with a stand-in; its real session (from volee's extension) stays.
    registry = given(
        registered(A1, "mine", harness=Harness.PI, cwd="/p"),
        linked(A1, S1),
        ev.HostStarted(at=T0, agent=A1, host_pid=400, program_pid=401),
        state(A1, AgentState.WORKING),
    )
    scanned = ListedSession(
        harness=Harness.PI, session="pid-401-1700000000", pid=401, cwd="/p", stand_in=True
    )

    events = reconcile(registry, Listing(sessions=(scanned,)), None, {401}, NOW)

    assert events == []
    # The same session once its file is found is a new id in the same process: continued.
    found = ListedSession(harness=Harness.PI, session=S2, pid=401, cwd="/p")
    events = reconcile(registry, Listing(sessions=(found,)), None, {401}, NOW)
    assert apply_all(registry, events).agents[A1].session == S2


# --- rule: moved_to_background ------------------------------------------------------------


def test_moved_to_background_the_agent_takes_the_background_session() -> None:
    registry = given(*watched_agent())
    before = listing(entry(S1), taken_at=NOW - 2)
    background = entry(
        S2, pid=9100, kind="background", status="busy", id="bg7", state="running",
        startedAt=int((NOW - 1) * 1000),
    )  # fmt: skip

    # The terminal's process 25069 still runs, but its session is no longer listed.
    events = reconcile(registry, listing(background), before, {25069, 9100}, NOW)

    assert types(events) == ["session-linked", "location-changed"]
    after = apply_all(registry, events)
    agent = after.agents[A1]
    assert (agent.session, agent.location, agent.pid) == (S2, Location.BACKGROUND, 9100)
    assert len(after.agents) == 1


def test_moved_to_background_after_the_wait_the_agent_takes_the_session_that_waited() -> None:
    # Listing N: the terminal session and a background one that started 1 s before, which
    # waits (it may be the terminal moving). Listing N+1: the terminal session is gone while its
    # process runs: the waiting session is where it went, not a second agent.
    registry = given(*watched_agent())
    background = entry(
        S2, pid=9100, kind="background", status="busy", id="bg7", state="running",
        startedAt=int((NOW - 3) * 1000),
    )  # fmt: skip
    first = listing(entry(S1), background, taken_at=NOW - 2)
    assert reconcile(registry, first, None, {25069, 9100}, NOW - 2) == []

    events = reconcile(registry, listing(background), first, {25069, 9100}, NOW)

    assert types(events)[:2] == ["session-linked", "location-changed"]
    after = apply_all(registry, events)
    agent = after.agents[A1]
    assert (agent.session, agent.location, agent.pid) == (S2, Location.BACKGROUND, 9100)
    assert len(after.agents) == 1


def test_a_background_session_that_had_its_own_agent_is_never_taken_by_a_move() -> None:
    # Listed long before the terminal session left: not where the terminal went.
    registry = given(*watched_agent())
    old = entry(
        S2, pid=9100, kind="background", status="busy", id="bg7", state="running",
        startedAt=int((NOW - 600) * 1000),
    )  # fmt: skip
    first = listing(entry(S1), old, taken_at=NOW - 2)
    registry = apply_all(registry, reconcile(registry, first, None, {25069, 9100}, NOW - 2))
    assert len(registry.agents) == 2

    events = reconcile(registry, listing(old), first, {25069, 9100}, NOW)

    assert "session-linked" not in types(events)
    assert apply_all(registry, events).agents[A1].session == S1


def test_a_background_session_beside_a_terminal_waits_before_becoming_an_agent() -> None:
    registry = given(*watched_agent())
    terminal = entry(S1)
    young = entry(
        S2, pid=9100, kind="background", id="bg7", state="running",
        startedAt=int((NOW - 1) * 1000),
    )  # fmt: skip

    waiting = reconcile(registry, listing(terminal, young), None, {25069, 9100}, NOW)
    later = NOW + MOVE_GRACE
    grown = reconcile(
        registry, listing(terminal, young, taken_at=later), None, {25069, 9100}, later
    )

    assert waiting == []
    assert types(grown) == ["agent-registered", "session-linked", "location-changed"]


def test_a_terminal_session_whose_process_still_runs_is_not_stopped_yet() -> None:
    registry = given(*watched_agent())

    events = reconcile(registry, listing(), listing(entry(S1)), {25069}, NOW)

    assert events == []


# --- rule: disappearance ------------------------------------------------------------------


def test_a_terminal_session_gone_from_a_complete_listing_makes_its_agent_stopped() -> None:
    registry = given(*watched_agent())

    events = reconcile(registry, listing(), listing(entry()), set(), NOW)

    assert events == [
        ev.StateChanged(at=NOW, agent=A1, state=AgentState.STOPPED, detail="session ended")
    ]


def test_a_background_session_gone_makes_its_agent_lost_never_done() -> None:
    registry = given(*watched_agent(location=Location.BACKGROUND, pid=9100, st=AgentState.DONE))

    events = reconcile(registry, listing(), None, set(), NOW)

    after = apply_all(registry, events)
    assert after.agents[A1].state is AgentState.LOST


def test_an_incomplete_listing_proves_no_end() -> None:
    registry = given(*watched_agent())

    assert reconcile(registry, listing(complete=frozenset()), None, set(), NOW) == []


def test_agents_volee_launched_in_hosts_are_left_to_hooks_and_host_records() -> None:
    registry = given(*host_agent())

    assert reconcile(registry, listing(), listing(entry()), set(), NOW) == []


def test_a_background_session_that_completed_stops_its_agent() -> None:
    registry = given(*watched_agent(location=Location.BACKGROUND, pid=9100))
    done = entry(kind="background", pid=9100, id="bg1", state="completed", status="idle")

    events = reconcile(registry, listing(done), None, set(), NOW)

    assert apply_all(registry, events).agents[A1].state is AgentState.STOPPED


# --- crashed outside sessions -------------------------------------------------------------


def dead(session: str = S1, *, busy: bool = True, updated: float = NOW - 60) -> DeadSession:
    return DeadSession(
        harness=Harness.CLAUDE,
        session=session,
        pid=23599,
        cwd="/home/dev/src/proj3",
        name="proj3-95",
        busy=busy,
        updated_at=updated,
    )


def test_a_watched_agent_killed_mid_turn_is_interrupted_with_a_resume_action() -> None:
    registry = given(*watched_agent(pid=23599))

    events = reconcile(registry, listing(dead=(dead(),)), listing(entry()), set(), NOW)

    assert types(events) == ["interruption-detected", "state-changed", "recovery-decided"]
    agent = apply_all(registry, events).agents[A1]
    assert (agent.state, agent.interrupted, agent.action) == (
        AgentState.STOPPED,
        INTERRUPTED_CAUSE,
        "resume",
    )


def test_a_dead_busy_session_nobody_owns_is_an_interrupted_independent_agent() -> None:
    events = reconcile(Registry(), listing(dead=(dead(),)), None, set(), NOW)

    after = apply_all(Registry(), events)
    (agent,) = after.agents.values()
    assert (agent.role, agent.state, agent.interrupted, agent.action, agent.session) == (
        Role.INDEPENDENT,
        AgentState.STOPPED,
        INTERRUPTED_CAUSE,
        "resume",
        S1,
    )
    # Never resumed automatically: no host, no restart.
    assert not any(isinstance(e, ev.HostStarted | ev.RestartScheduled) for e in events)
    assert reconcile(after, listing(dead=(dead(),)), None, set(), NOW + 2) == []


def test_dead_idle_or_ancient_sessions_are_history() -> None:
    idle = dead(busy=False)
    ancient = dead(S2, updated=NOW - 30 * 24 * 3600)

    assert reconcile(Registry(), listing(dead=(idle, ancient)), None, set(), NOW) == []


# --- renamed, released, expired, forgotten ------------------------------------------------


def test_a_watched_agent_takes_the_name_the_harness_gave_its_session() -> None:
    registry = given(*watched_agent(name="proj3-75"))

    events = reconcile(registry, listing(entry(name="fix-login")), None, {25069}, NOW)

    assert events == [ev.AgentRenamed(at=NOW, agent=A1, name="fix-login")]


def test_an_agent_volee_launched_keeps_its_name() -> None:
    registry = given(*host_agent())

    assert reconcile(registry, listing(entry(name="fix-login")), None, {25069}, NOW) == []


def test_an_older_session_running_beside_the_current_one_is_released() -> None:
    registry = given(*watched_agent(session=S1), linked(A1, S2))
    # S2 is A1's current session; S1 was resumed in another terminal.
    events = reconcile(
        registry, listing(entry(S2), entry(S1, pid=31000)), None, {25069, 31000}, NOW
    )

    assert types(events)[:2] == ["session-released", "agent-registered"]
    after = apply_all(registry, events)
    assert after.agents[A1].sessions == (S2,)
    other = next(a for a in after.agents.values() if a.id != A1)
    assert (other.session, other.pid, other.role) == (S1, 31000, Role.INDEPENDENT)


def test_a_watched_agent_gone_with_its_session_expires_and_comes_back_when_listed() -> None:
    registry = given(*watched_agent(), state(A1, AgentState.STOPPED, at=T0))
    later = T0 + 25 * 3600

    expired = reconcile(registry, listing(taken_at=later), None, set(), later)
    after = apply_all(registry, expired)
    back = reconcile(after, listing(entry(), taken_at=later + 5), None, {25069}, later + 5)

    assert expired == [ev.AgentExpired(at=later, agent=A1)]
    assert A1 not in after.agents
    assert types(back) == ["agent-registered", "session-linked", "location-changed"]


def test_a_forgotten_agents_sessions_never_come_back() -> None:
    registry = given(*watched_agent(), ev.AgentForgotten(at=T0, agent=A1))

    assert reconcile(registry, listing(entry()), None, {25069}, NOW) == []
    assert reconcile(registry, listing(dead=(dead(),)), None, set(), NOW) == []


def test_two_rules_on_two_agents_validate_as_one_batch() -> None:
    registry = given(*watched_agent(), *watched_agent(A2, S2, pid=31000, name="other"))

    events = reconcile(
        registry, listing(entry(S1, status="idle"), entry(S3, pid=5)), None, {25069, 5}, NOW
    )

    after = apply_all(registry, events)
    assert after.agents[A1].state is AgentState.IDLE
    assert after.agents[A2].state is AgentState.STOPPED
    assert len(after.agents) == 3

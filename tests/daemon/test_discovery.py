"""Discovery's sources (listing, session files, codex/pi processes) and the loop in a daemon."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.polling import until, wait_until
from volee_desktop.core.model import Harness, Location, Role
from volee_desktop.core.reconcile import Listing, reconcile
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState, Coarse
from volee_desktop.daemon.discovery import watches as watch_module
from volee_desktop.daemon.main import Daemon
from volee_desktop.harness.listing import (
    ListingError,
    harness_of,
    parse_claude_agents,
    parse_session_file,
    parse_session_meta,
)
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.paths import dirs

SAMPLES = Path(__file__).resolve().parents[1] / "harness" / "samples"
FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"


# --- the listing and the sessions folder --------------------------------------------------


def test_the_real_listing_sample_parses() -> None:
    (session,) = parse_claude_agents((SAMPLES / "claude-agents-json.txt").read_text())

    assert (session.session, session.pid, session.cwd, session.name) == (
        "458c6f8c-9494-4e5b-9161-f890013732dc",
        25069,
        "/home/dev/src/proj3",
        "proj3-75",
    )
    assert (session.location, session.status, session.started_at) == (
        Location.TERMINAL,
        Coarse.BUSY,
        1796008376.023,
    )
    assert not session.finished


def test_background_entries_waiting_and_finished() -> None:
    text = json.dumps(
        [
            {"pid": 1, "cwd": "/a", "kind": "interactive", "sessionId": "s1", "status": "waiting",
             "waitingFor": "permission prompt"},
            {"pid": 2, "cwd": "/a", "kind": "background", "sessionId": "s2", "status": "idle",
             "id": "b2", "state": "completed"},
            {"pid": 3, "cwd": "/a", "kind": "background", "sessionId": "s3", "id": "b3",
             "state": "failed"},
            {"pid": 4, "cwd": "/a", "kind": "interactive"},
        ]
    )  # fmt: skip

    waiting, completed, failed = parse_claude_agents(text)

    assert (waiting.status, waiting.waiting_for) == (Coarse.WAITING, "permission prompt")
    assert (completed.location, completed.finished, completed.failed) == (
        Location.BACKGROUND,
        True,
        False,
    )
    assert (failed.finished, failed.failed) == (True, True)


@pytest.mark.parametrize("text", ["", "not json", '{"sessions": []}'])
def test_a_listing_that_is_not_a_json_list_is_an_error_naming_it(text: str) -> None:
    with pytest.raises(ListingError, match="claude agents --json"):
        parse_claude_agents(text)


def test_a_stale_session_file_is_a_dead_busy_session() -> None:
    text = (SAMPLES / "claude-sessions-registry-stale-pid.json").read_text()

    parsed = parse_session_file(text, "23599.json")

    assert parsed is not None
    dead = parsed.dead()
    assert (dead.pid, dead.session, dead.busy, dead.name, dead.location) == (
        23599,
        "b329b698-e568-4d2c-90de-a11b075ce0f6",
        True,
        "proj3-95",
        Location.TERMINAL,
    )
    assert parse_session_file("{half", "1.json") is None


@pytest.mark.parametrize(
    ("cmdline", "expected"),
    [
        (["codex"], Harness.CODEX),
        (["/usr/bin/node", "/x/node_modules/.bin/codex", "resume", "--last"], Harness.CODEX),
        (["/x/@openai/codex-linux-x64/vendor/codex/codex", "exec", "hi"], Harness.CODEX),
        (["node", "/x/node_modules/.bin/pi", "--model", "m"], Harness.PI),
        (["pi"], Harness.PI),
        (["codex", "--version"], None),
        (["node", "/x/.bin/codex", "login"], None),
        (["python3", "pi.py"], None),
        (["vim", "codex"], None),
        ([], None),
    ],
)
def test_harness_of_a_command_line(cmdline: list[str], expected: Harness | None) -> None:
    assert harness_of(cmdline) is expected


def test_session_meta_of_codex_and_pi() -> None:
    codex = json.dumps(
        {"type": "session_meta", "payload": {"id": "c1", "cwd": "/p", "source": "cli"}}
    )
    sub = json.dumps(
        {"type": "session_meta", "payload": {"id": "c2", "cwd": "/p", "source": {"subagent": {}}}}
    )
    pi = '{"type":"session","version":3,"id":"01a2","timestamp":"x","cwd":"/home/dev/p"}'

    meta = parse_session_meta(Harness.CODEX, codex)
    assert meta is not None
    assert (meta.session, meta.cwd, meta.subagent) == ("c1", "/p", False)
    sub_meta = parse_session_meta(Harness.CODEX, sub)
    assert sub_meta is not None
    assert sub_meta.subagent
    pi_meta = parse_session_meta(Harness.PI, pi)
    assert pi_meta is not None
    assert (pi_meta.session, pi_meta.cwd) == ("01a2", "/home/dev/p")
    assert parse_session_meta(Harness.PI, codex) is None


# --- codex and pi from the process table --------------------------------------------------


@pytest.fixture
def short_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp")).resolve()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _named_process(name: str, cwd: Path, home: Path) -> subprocess.Popen[bytes]:
    # `exec -a` gives the process a command line whose argv[0] is the harness's name; it runs
    # with the HOME whose session files discovery reads.
    env = {**os.environ, "HOME": str(home)}
    return subprocess.Popen(["bash", "-c", f"exec -a {name} sleep 60"], cwd=cwd, env=env)


def test_live_codex_and_pi_processes_become_independent_agents(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.daemon.discovery.listers import scan_processes

    monkeypatch.delenv("CODEX_HOME", raising=False)
    home, project = short_root / "h", short_root / "p"
    project.mkdir(parents=True)
    day = home / ".codex" / "sessions" / time.strftime("%Y/%m/%d")
    day.mkdir(parents=True)
    meta = {"type": "session_meta", "payload": {"id": "019a-codex", "cwd": str(project)}}
    procs = [_named_process("codex", project, home), _named_process("pi", project, home)]
    try:
        (day / "rollout-2026-11-30T10-00-00-019a-codex.jsonl").write_text(json.dumps(meta) + "\n")
        pi_dir = (
            home / ".pi" / "agent" / "sessions" / ("--" + str(project)[1:].replace("/", "-") + "--")
        )
        pi_dir.mkdir(parents=True)
        (pi_dir / "2026-11-30T10-00-00_019b.jsonl").write_text(
            json.dumps({"type": "session", "id": "019b-pi", "cwd": str(project)}) + "\n"
        )
        deadline = time.monotonic() + 5
        while True:
            found = [s for s in scan_processes(time.time(), home) if s.cwd == str(project)]
            if len(found) == 2 or time.monotonic() > deadline:
                break

        by_harness = {s.harness: s for s in found}
        assert set(by_harness) == {Harness.CODEX, Harness.PI}
        assert by_harness[Harness.CODEX].session == "019a-codex"
        assert by_harness[Harness.PI].session == "019b-pi"
        assert by_harness[Harness.CODEX].pid == procs[0].pid
        assert by_harness[Harness.CODEX].status is Coarse.BUSY  # its file was just written
        # The same programs under another HOME (another sandbox) are not this person's.
        assert not [
            s for s in scan_processes(time.time(), short_root / "other") if s.cwd == str(project)
        ]

        listing = Listing(
            sessions=tuple(found), complete=frozenset({Harness.CODEX, Harness.PI}), taken_at=1.0
        )
        events = reconcile(Registry(), listing, None, {p.pid for p in procs}, 2.0)
        after = Registry()
        for event in events:
            assert after.validate(event) is None
            after.apply(event)
        assert {(a.harness, a.role, a.launched_by_volee) for a in after.agents.values()} == {
            (Harness.CODEX, Role.INDEPENDENT, False),
            (Harness.PI, Role.INDEPENDENT, False),
        }
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


#: A stand-in for the native codex: opens its rollout for appending (codex keeps it open for
#: the whole session), says so, and waits; with ``--child`` it is the node wrapper, whose
#: codex child (named codex too) holds the file.
_HOLDER = """
import os, subprocess, sys, time
path, ready = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:  # (sys.executable is unknown under `exec -a codex`: argv[3] says it)
    child = ["bash", "-c", 'exec -a codex "$0" "$@"', sys.argv[3], __file__, path, ready]
    subprocess.Popen(child).wait()
else:
    f = open(path, "a")
    open(ready, "w").close()
    time.sleep(60)
"""


def _holding(
    home: Path, project: Path, holder: Path, rollout: Path, ready: Path, wrapped: bool = False
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOME": str(home)}
    argv = ["bash", "-c", 'exec -a codex "$0" "$@"', sys.executable, str(holder)]
    argv += [str(rollout), str(ready), *([sys.executable] if wrapped else [])]
    return subprocess.Popen(argv, cwd=project, env=env, start_new_session=True)


def test_two_codex_in_one_folder_each_get_the_rollout_they_hold_open(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 22, item 5: both codex processes were given the newest rollout of the folder, so
    # the first agent took the second one's session and the second agent stayed `launching`.
    from volee_desktop.daemon.discovery.listers import scan_processes

    monkeypatch.delenv("CODEX_HOME", raising=False)
    home, project = short_root / "h", short_root / "p"
    project.mkdir(parents=True)
    day = home / ".codex" / "sessions" / time.strftime("%Y/%m/%d")
    day.mkdir(parents=True)
    holder = short_root / "holder.py"
    holder.write_text(_HOLDER)
    rollouts = []
    for n, session in enumerate(["019a-first", "019b-second"]):
        rollout = day / f"rollout-2026-12-02T00-20-4{n}-{session}.jsonl"
        meta = {"type": "session_meta", "payload": {"id": session, "cwd": str(project)}}
        rollout.write_text(json.dumps(meta) + "\n")
        os.utime(rollout, (time.time() + n, time.time() + n))  # the second is the newest
        rollouts.append(rollout)
    ready = [short_root / "ready-1", short_root / "ready-2"]
    procs = [
        _holding(home, project, holder, rollouts[0], ready[0]),
        # The second as codex really runs: a node wrapper whose native child holds the file.
        _holding(home, project, holder, rollouts[1], ready[1], wrapped=True),
        # A third codex that holds no rollout (yet): neither of theirs.
        _holding(home, project, holder, short_root / "elsewhere.jsonl", short_root / "ready-3"),
    ]
    try:
        wait_until(lambda: all(r.exists() for r in [*ready, short_root / "ready-3"]))
        found = {s.pid: s for s in scan_processes(time.time(), home) if s.cwd == str(project)}

        assert set(found) == {p.pid for p in procs}
        assert found[procs[0].pid].session == "019a-first"
        assert found[procs[1].pid].session == "019b-second"
        assert found[procs[2].pid].stand_in
    finally:
        for proc in procs:
            os.killpg(proc.pid, 9)
            proc.wait()


# --- the loop in a daemon -----------------------------------------------------------------


@pytest.fixture
async def listed_daemon(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Daemon, Path]]:
    """A daemon whose `claude agents --json --all` prints the file ``listing.json``.

    Its listing is a file the watch does not follow: the seed's cadence alone runs here
    (tests/daemon/test_discovery_watch.py and the real Claude Code e2e test the watch).
    """
    monkeypatch.setattr(watch_module, "WATCH", False)
    monkeypatch.setenv("VOLEE_HOME", str(short_root / "v"))
    monkeypatch.setenv("HOME", str(short_root / "h"))
    (short_root / "h" / ".claude" / "sessions").mkdir(parents=True)
    listing = short_root / "listing.json"
    listing.write_text("[]")
    claude = short_root / "claude"
    claude.write_text(
        f'#!/bin/sh\n[ "$1 $2 $3" = "agents --json --all" ] || exit 9\ncat "{listing}"\n'
    )
    claude.chmod(0o755)
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(claude))
    daemon = await Daemon.start(dirs())
    try:
        yield daemon, listing
    finally:
        await daemon.close()


async def _call(daemon: Daemon, method: str) -> object:
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        return await client.call(method)
    finally:
        await client.close()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


async def test_refresh_applies_a_listing_that_started_after_it(
    listed_daemon: tuple[Daemon, Path],
) -> None:
    daemon, listing = listed_daemon
    # A live session (a listed pid that is dead or a zombie is not running: it is left out).
    session_process = subprocess.Popen(["sleep", "60"])
    try:
        pid = session_process.pid
        entry = {
            "pid": pid, "cwd": "/tmp", "kind": "interactive", "startedAt": 1796008376023,
            "sessionId": "458c6f8c-9494-4e5b-9161-f890013732dc", "name": "tmp-1",
            "status": "busy",
        }  # fmt: skip
        listing.write_text(json.dumps([entry]))

        answer = await _call(daemon, "discovery.refresh")

        # The listing the refresh waited for started after it, so the session is in the
        # registry now (the daemon's first listing, still running under load, may have seen
        # the file already and done the work: then this one changed nothing).
        assert isinstance(answer, dict)
        assert answer["listed"] is True
        assert answer["events"] in (0, 3)
        (agent,) = daemon.service.registry.agents.values()
        assert (agent.name, agent.role, agent.state, agent.pid) == (
            "tmp-1",
            Role.INDEPENDENT,
            AgentState.WORKING,
            pid,
        )
    finally:
        session_process.kill()
        session_process.wait()
    listing.write_text("[]")
    await _call(daemon, "discovery.refresh")

    assert daemon.service.registry.agents[agent.id].state is AgentState.STOPPED
    status = await _call(daemon, "daemon.status")
    assert isinstance(status, dict)
    assert status["extra"]["discovery"]["state"] == "on"


async def test_interactive_subscriptions_are_counted_until_they_end(
    listed_daemon: tuple[Daemon, Path],
) -> None:
    daemon, _ = listed_daemon
    clients = daemon.clients
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        await client.call("subscribe", {"since": None})
        await until(lambda: clients.count == 1, what="the client counted", timeout=5)
        assert daemon.discovery.status()["interactive_clients"] == 1
    finally:
        await client.close()
    await until(lambda: clients.count == 0, what="the client's end counted", timeout=5)


async def test_a_claude_without_agents_json_leaves_codex_and_pi_and_says_why(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLEE_HOME", str(short_root / "v"))
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(FAKE_CLAUDE))
    daemon = await Daemon.start(dirs())
    try:
        answer = await _call(daemon, "discovery.refresh")
        status = await _call(daemon, "daemon.status")
    finally:
        await daemon.close()

    assert isinstance(answer, dict)
    assert answer["listed"] is True  # codex and pi are still looked for (issue 16)
    assert isinstance(status, dict)
    part = status["extra"]["discovery"]
    assert part["state"] == "on"
    assert "cannot list its sessions" in part["claude"]
    assert "unknown option" in part["claude"]


async def test_claude_missing_leaves_discovery_on_for_codex_and_pi(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLEE_HOME", str(short_root / "v"))
    monkeypatch.delenv("VOLEE_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(short_root))
    daemon = await Daemon.start(dirs())
    try:
        answer = await _call(daemon, "discovery.refresh")
        status = await _call(daemon, "daemon.status")
    finally:
        await daemon.close()

    assert isinstance(answer, dict)
    assert answer["listed"] is True
    assert isinstance(status, dict)
    part = status["extra"]["discovery"]
    assert part["state"] == "on"
    assert part["claude"] == (
        "off: Claude Code not found: put `claude` on PATH or set VOLEE_CLAUDE_BIN"
    )


async def test_a_listed_session_whose_pid_is_dead_is_not_taken_for_a_live_one(
    listed_daemon: tuple[Daemon, Path],
) -> None:
    # A killed claude not reaped yet (a zombie) can still be listed as busy: it is not running.
    daemon, listing = listed_daemon
    entry = {
        "pid": _dead_pid(), "cwd": "/tmp", "kind": "interactive", "startedAt": 1796008376023,
        "sessionId": "458c6f8c-9494-4e5b-9161-f890013732dc", "name": "tmp-1", "status": "busy",
    }  # fmt: skip
    listing.write_text(json.dumps([entry]))
    answer = await _call(daemon, "discovery.refresh")
    assert answer == {"listed": True, "events": 0}
    assert daemon.service.registry.agents == {}


async def test_a_client_is_interactive_only_while_it_says_someone_looks(
    listed_daemon: tuple[Daemon, Path],
) -> None:
    daemon, _ = listed_daemon
    discovery = daemon.discovery
    client = await AsyncClient.connect(daemon.dirs.socket)

    async def interactive_becomes(n: int) -> None:
        await until(lambda: daemon.clients.count == n, what=f"{n} interactive clients", timeout=5)
        assert discovery.status()["interactive_clients"] == n

    try:
        await client.call("subscribe", {"since": None, "interactive": False})
        await interactive_becomes(0)
        listings = discovery.listings
        await client.call("subscribe.interactive", {"interactive": True})
        await interactive_becomes(1)
        # Someone looks: a listing at once.
        await until(lambda: discovery.listings > listings, what="a listing", timeout=5)
        await client.call("subscribe.interactive", {"interactive": True})  # said twice
        await interactive_becomes(1)
        await client.call("subscribe.interactive", {"interactive": False})
        await interactive_becomes(0)
        await client.call("subscribe.interactive", {"interactive": True})
        await interactive_becomes(1)
    finally:
        await client.close()
    await interactive_becomes(0)  # a closed connection looks at nothing


async def test_a_slow_listing_runs_outside_the_state_lock_and_delays_no_request(
    volee_home: Path,
) -> None:
    # Seed 002: the listing runs outside the state lock. A listing that hangs (a slow
    # `claude agents --json`) must not hold up commits, requests or other clients.
    from tests.fakes.clock import FakeClock
    from volee_desktop.core import events as ev
    from volee_desktop.daemon.discovery.listers import Observation

    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_lister(_now: float) -> Observation:
        started.set()
        await release.wait()
        return Observation(Listing(complete=frozenset({Harness.CLAUDE})), set())

    daemon = await Daemon.start(dirs(), clock=FakeClock(start=time.time()), lister=slow_lister)
    try:
        refresh = asyncio.ensure_future(_call(daemon, "discovery.refresh"))
        await asyncio.wait_for(started.wait(), 10)

        registered = ev.AgentRegistered(
            at=time.time(), agent="ag_01JAAAAAAAAAAAAAAAAAAAAAAA", name="meanwhile",
            harness=Harness.GENERIC, cwd="/tmp",
        )  # fmt: skip
        await asyncio.wait_for(daemon.service.commit([registered]), 5)
        listed = await asyncio.wait_for(_call(daemon, "agents.list"), 5)
        assert isinstance(listed, list)
        assert [a["name"] for a in listed] == ["meanwhile"]
        assert not refresh.done()  # the listing still hangs, and nothing waited for it

        release.set()
        answer = await asyncio.wait_for(refresh, 10)
        assert isinstance(answer, dict)
        assert answer["listed"] is True
    finally:
        release.set()
        await daemon.close()

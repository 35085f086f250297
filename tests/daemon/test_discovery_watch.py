"""Discovery that waits for a reason (issue 13): the session folders' watch, the exit watch,
``volee ls`` answered from the registry, and codex/pi turn states from their session files."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.core.support import T0
from tests.daemon.test_discovery_cadence import CONFIG, FakeClock
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, Location, Role
from volee_desktop.core.reconcile import Listing
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState, Coarse
from volee_desktop.daemon.context import Clients
from volee_desktop.daemon.discovery.listers import Observation
from volee_desktop.daemon.discovery.loop import Discovery
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.service import Service
from volee_desktop.harness.listing import session_turn
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.paths import dirs
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

SAMPLES = Path(__file__).resolve().parents[1] / "harness" / "samples"
T = TypeVar("T")


async def settle() -> None:
    """Let the loop run what is ready (the fake clock stands still)."""
    for _ in range(50):
        await asyncio.sleep(0)


# --- what the session files say ------------------------------------------------------------


def _lines(name: str) -> list[str]:
    return (SAMPLES / name).read_text().splitlines()


def test_a_codex_rollout_says_busy_then_done() -> None:
    lines = _lines("codex-0.171.0-rollout.jsonl")
    end = next(i for i, line in enumerate(lines) if '"task_complete"' in line)
    assert session_turn(Harness.CODEX, lines).done is True
    assert session_turn(Harness.CODEX, lines).status is Coarse.IDLE
    assert session_turn(Harness.CODEX, lines[:end]).status is Coarse.BUSY
    assert session_turn(Harness.CODEX, lines[:1]).status is None  # only its meta: says nothing


def test_a_codex_approval_request_is_waiting_with_the_command() -> None:
    lines = _lines("codex-0.171.0-rollout.jsonl")[:3]
    request = {"type": "event_msg", "payload": {"type": "exec_approval_request",
                                                "command": ["touch", "x"]}}  # fmt: skip
    turn = session_turn(Harness.CODEX, [*lines, json.dumps(request), '{"half a li'])
    assert (turn.status, turn.waiting_for) == (Coarse.WAITING, "permission for touch x")


def test_a_codex_rollout_waiting_for_an_approval_of_the_real_codex_is_waiting() -> None:
    # Captured from the real codex 0.171.0 (-a on-request) while its approval dialog was open:
    # the rollout ends with the escalated call, and nothing says it waits.
    lines = _lines("codex-rollout-waiting-approval.jsonl")
    turn = session_turn(Harness.CODEX, lines)
    assert (turn.status, turn.waiting_for) == (Coarse.WAITING, "permission for touch approved.txt")
    # Answered: its output follows, and the turn works on (then ends).
    output = {"type": "response_item", "payload": {"type": "function_call_output",
                                                   "call_id": "c1", "output": "ok"}}  # fmt: skip
    assert session_turn(Harness.CODEX, [*lines, json.dumps(output)]).status is Coarse.BUSY
    # A call that stays in the sandbox runs at once: busy, not waiting.
    plain = {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                                  "arguments": '{"cmd": "ls"}'}}  # fmt: skip
    assert session_turn(Harness.CODEX, [*lines, json.dumps(plain)]).status is Coarse.BUSY


def test_a_pi_session_says_busy_while_tools_run_then_done() -> None:
    lines = _lines("pi-0.73.1-session.jsonl")
    assert session_turn(Harness.PI, lines).done is True
    working = [line for line in lines if '"toolUse"' in line or '"session"' in line]
    assert session_turn(Harness.PI, working).status is Coarse.BUSY


# --- the loop on a fake clock --------------------------------------------------------------


class PartialLister:
    """Counts full listings and the partial ones (codex and pi only)."""

    def __init__(self) -> None:
        self.full = 0
        self.partial = 0

    async def __call__(self, now: float) -> Observation:
        return await self.observe(now)

    async def observe(self, now: float, *, claude: bool = True) -> Observation:
        if claude:
            self.full += 1
        else:
            self.partial += 1
        return Observation(Listing(taken_at=now), set())


@pytest.fixture
async def watched() -> AsyncIterator[tuple[Discovery, PartialLister, FakeClock, list[int]]]:
    clock = FakeClock()
    lister = PartialLister()
    service = Service(MemoryLog(), Registry(), Record)
    discovery = Discovery(service, CONFIG, lister, clock, Clients())
    said = [0]  # what the fake registry folder says
    discovery.signature = lambda: ((1, "s", "idle", "interactive", "n", said[0] > 0),) * said[0]
    discovery.watching = True
    task = asyncio.ensure_future(discovery.run())
    await settle()
    yield discovery, lister, clock, said
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_with_the_watch_only_a_slow_safety_listing_runs_while_nothing_changes(
    watched: tuple[Discovery, PartialLister, FakeClock, list[int]],
) -> None:
    _discovery, lister, clock, _said = watched
    assert (lister.full, clock.sleeping()) == (1, [300.0])
    for _ in range(9):
        clock.advance(30.0)  # the seed's idle cadence would have listed nine times
        await settle()
    assert lister.full == 1
    clock.advance(30.0)
    await settle()
    assert lister.full == 2  # the safety listing


async def test_a_change_lists_only_when_it_says_something_new(
    watched: tuple[Discovery, PartialLister, FakeClock, list[int]],
) -> None:
    discovery, lister, clock, said = watched
    clock.advance(100.0)
    discovery.on_change(Harness.CLAUDE)  # a hosted agent's file, say: the signature is the same
    await settle()
    assert (lister.full, lister.partial, discovery.skipped) == (1, 0, 1)
    assert clock.sleeping() == [200.0]  # the safety listing keeps its time
    said[0] = 1  # a session started in a terminal
    discovery.on_change(Harness.CLAUDE)
    await settle()
    assert lister.full == 2
    discovery.on_change(Harness.CODEX)  # codex's folder: no Node process for it
    await settle()
    assert (lister.full, lister.partial) == (2, 1)
    discovery.on_exit(Harness.CLAUDE)  # a followed session's process ended
    await settle()
    assert lister.full == 3


async def test_refresh_answers_at_once_when_nothing_is_new_and_lists_when_the_folder_moved(
    watched: tuple[Discovery, PartialLister, FakeClock, list[int]],
) -> None:
    discovery, lister, _clock, said = watched
    assert await discovery.refresh() == {"listed": False, "fresh": True, "events": 0}
    assert lister.full == 1
    said[0] = 2  # written a moment ago: the watch has not told yet, the folder does
    answer = await asyncio.wait_for(discovery.refresh(), 5)
    assert answer["listed"] is True
    assert lister.full == 2


# --- the real watch in a daemon --------------------------------------------------------------


@pytest.fixture
def short_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp")).resolve()
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def test_without_claude_code_a_codex_session_is_found_and_followed_by_its_rollout(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Claude Code installed: codex is still discovered, its turn read from its rollout,
    and an appended line (the watch) moves its state without any refresh."""
    home, project = short_root / "h", short_root / "p"
    project.mkdir(parents=True)
    monkeypatch.setenv("VOLEE_HOME", str(short_root / "v"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("VOLEE_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    day = home / ".codex" / "sessions" / time.strftime("%Y/%m/%d")
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-12-01T09-00-00-019a-codex.jsonl"
    codex = subprocess.Popen(["bash", "-c", "exec -a codex sleep 60"], cwd=project)
    daemon = await Daemon.start(dirs())
    try:
        meta = {"type": "session_meta", "payload": {"id": "019a-codex", "cwd": str(project)}}
        started = {"type": "event_msg", "payload": {"type": "task_started"}}
        complete = {"type": "event_msg", "payload": {"type": "task_complete"}}
        rollout.write_text("\n".join(json.dumps(x) for x in (meta, started, complete)) + "\n")
        registry = daemon.service.registry

        def codex_agent() -> Any:
            return next((a for a in registry.agents.values() if a.harness is Harness.CODEX), None)

        agent = await until(codex_agent, what="the codex session found", timeout=20)
        assert (agent.role, agent.location) == (Role.INDEPENDENT, Location.TERMINAL)
        await until(
            lambda: registry.agents[agent.id].state is AgentState.DONE, what="done from its rollout"
        )
        listings = daemon.discovery.listings  # type: ignore[attr-defined]
        with rollout.open("a") as f:
            f.write(json.dumps(started) + "\n")  # the person typed a new prompt in codex
        await until(
            lambda: registry.agents[agent.id].state is AgentState.WORKING, what="working again"
        )
        assert daemon.discovery.listings > listings  # type: ignore[attr-defined]
        status = daemon.discovery.status()  # type: ignore[attr-defined]
        assert status["watch"] == "on"
        assert status["claude"].startswith("off: Claude Code")
        codex.kill()  # ends without a word: the exit watch tells
        await until(
            lambda: registry.agents[agent.id].state is AgentState.STOPPED, what="stopped at its end"
        )
    finally:
        codex.kill()
        codex.wait()
        await daemon.close()


async def test_volee_ls_with_nothing_new_costs_no_listing(
    short_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLEE_HOME", str(short_root / "v"))
    monkeypatch.setenv("HOME", str(short_root / "h"))
    monkeypatch.delenv("VOLEE_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    daemon = await Daemon.start(dirs())
    try:
        discovery = daemon.discovery  # type: ignore[attr-defined]
        await until(lambda: discovery.last_listed_at, what="the first listing applied")
        listings = discovery.listings
        client = await AsyncClient.connect(daemon.dirs.socket)
        try:
            for _ in range(5):
                answer = await client.call("discovery.refresh")
                assert answer == {"listed": False, "fresh": True, "events": 0}
        finally:
            await client.close()
        assert discovery.listings == listings
    finally:
        await daemon.close()


async def test_an_agent_that_got_its_host_since_the_last_listing_is_no_news() -> None:
    """The registry's file of a session that a volee host now runs changed nothing for
    discovery: both sides of the comparison leave out today's hosted sessions."""
    from tests.core.support import A1, linked, registered

    clock = FakeClock()
    lister = PartialLister()
    service = Service(MemoryLog(), Registry(), Record)
    discovery = Discovery(service, CONFIG, lister, clock, Clients())
    files = [(4242, "s-1", "busy", "interactive", "x", True)]
    discovery.signature = lambda: tuple(files)
    discovery.watching = True
    task = asyncio.ensure_future(discovery.run())
    try:
        await settle()
        assert lister.full == 1  # listed while the session was nobody's
        await service.commit(
            [
                registered(A1, launched_by_volee=True),
                linked(A1, "s-1"),
                ev.HostStarted(at=T0, agent=A1, host_pid=4000, program_pid=4242),
            ]
        )
        assert service.registry.agents[A1].location is Location.HOST
        files[0] = (4242, "s-1", "idle", "interactive", "x", True)  # its turn ended
        discovery.on_change(Harness.CLAUDE)
        await settle()
        assert (lister.full, discovery.skipped) == (1, 1)
        assert discovery.nothing_new()  # volee ls lists nothing either
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

"""No polling while the watch is healthy (issue 27): with the session registry watched
(real inotify on a tmp folder) and the exit watch on, an interactive client costs no
listing; a change in the folder costs one; a broken watch brings the seed's cadence back,
and the status says which cadence is in force."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.daemon.test_discovery_cadence import CONFIG
from tests.fakes.clock import FakeClock
from tests.polling import until
from volee_desktop.cli.daemon import part_text
from volee_desktop.core.model import Harness
from volee_desktop.core.reconcile import Listing
from volee_desktop.core.registry import Registry
from volee_desktop.daemon.context import Clients
from volee_desktop.daemon.discovery import inotify
from volee_desktop.daemon.discovery.listers import Observation, registry_signature
from volee_desktop.daemon.discovery.loop import Discovery
from volee_desktop.daemon.discovery.watches import ExitWatch
from volee_desktop.daemon.service import Service
from volee_desktop.store.memory import MemoryLog
from volee_desktop.store.records import Record

pytestmark = pytest.mark.skipif(not inotify.available(), reason="inotify is Linux's")


@dataclass
class CountingLister:
    """Counts its listings (the simulated time of each); lists nothing."""

    clock: FakeClock
    calls: list[float] = field(default_factory=list)

    async def __call__(self, now: float) -> Observation:
        self.calls.append(now)
        return Observation(Listing(taken_at=now), set())


@dataclass
class ObservingLister(CountingLister):
    """Also lists with ``observe`` as ``SystemLister`` does: ``claude=False`` keeps Claude
    Code's part of the last listing (no Node process). ``parts``: for each listing, whether
    Claude Code's part ran (the loop calls the lister itself for a whole listing)."""

    parts: list[bool] = field(default_factory=list)

    async def __call__(self, now: float) -> Observation:
        return await self.observe(now)

    async def observe(self, now: float, *, claude: bool = True) -> Observation:
        self.parts.append(claude)
        self.calls.append(now)
        return Observation(Listing(taken_at=now), set())


@dataclass
class Rig:
    clock: FakeClock
    lister: CountingLister
    discovery: Discovery
    clients: Clients
    folder: Path
    changes: inotify.InotifyWatch

    async def settle(self) -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    async def advance(self, seconds: float, step: float = 1.0) -> None:
        """Simulated time passes (the loop runs between steps): no real sleeping."""
        for _ in range(round(seconds / step)):
            self.clock.advance(step)
            await self.settle()


@contextlib.asynccontextmanager
async def _rig(folder: Path, observing: bool = False) -> AsyncIterator[Rig]:
    clock = FakeClock()
    lister = ObservingLister(clock) if observing else CountingLister(clock)
    clients = Clients()
    discovery = Discovery(Service(MemoryLog(), Registry(), Record), CONFIG, lister, clock, clients)
    changes = inotify.InotifyWatch({folder: Harness.CLAUDE}, discovery.on_change)
    changes.start()
    discovery.use_watch(changes, ExitWatch(discovery.on_exit), lambda: registry_signature(folder))
    task = asyncio.ensure_future(discovery.run())
    rig = Rig(clock, lister, discovery, clients, folder, changes)
    await until(lambda: clock.sleeping(), what="the listing at start", timeout=5, every=0)
    try:
        yield rig
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await changes.close()


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    folder = tmp_path / "sessions"
    folder.mkdir()
    async with _rig(folder) as each:
        yield each


def write_session(folder: Path, pid: int) -> None:
    """A session file as Claude Code 2.1.332 writes it when a session starts."""
    entry = {"pid": pid, "sessionId": f"b329b698-e568-4d2c-90de-{pid:012d}", "cwd": "/tmp",
             "kind": "interactive", "name": "proj-1", "status": "idle"}  # fmt: skip
    (folder / f"{pid}.json").write_text(json.dumps(entry))


async def test_an_interactive_client_costs_no_listing_while_the_watch_is_healthy(
    rig: Rig,
) -> None:
    assert len(rig.lister.calls) == 1  # at start
    assert rig.discovery.status()["cadence"] == "watch"
    rig.clients.joined()  # the list is shown
    await rig.advance(290.0)  # the seed's cadence would have listed ~30 times
    assert len(rig.lister.calls) == 1
    await rig.advance(10.0)
    assert len(rig.lister.calls) == 2  # the safety net, 5 min after the last listing
    assert rig.lister.calls[1] - rig.lister.calls[0] == pytest.approx(300.0)


async def test_the_safety_listing_spares_claude_codes_part_while_it_has_only_volees_sessions(
    tmp_path: Path,
) -> None:
    # No session outside volee's hosts in Claude Code's registry, and nothing moved there
    # since the last listing: `claude agents --json` (a Node process, 0.2 s) could say
    # nothing, so the 5-minute safety listing reads codex's and pi's part alone.
    folder = tmp_path / "sessions"
    folder.mkdir()
    async with _rig(folder, observing=True) as rig:
        lister = rig.lister
        assert isinstance(lister, ObservingLister)
        assert lister.parts == [True]  # at start: Claude Code's listing too
        await rig.advance(300.0)
        assert lister.parts == [True, False]
        assert rig.discovery.status()["safety_without_claude"] == 1
        await rig.advance(300.0)
        assert lister.parts == [True, False, False]


async def test_the_safety_listing_runs_claude_codes_part_for_a_session_outside_volee(
    tmp_path: Path,
) -> None:
    # A session started in a terminal: its state (a background session completed, failed)
    # can change with its file unchanged, and only the listing says it (D8).
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_session(folder, os.getpid())
    async with _rig(folder, observing=True) as rig:
        lister = rig.lister
        assert isinstance(lister, ObservingLister)
        await rig.advance(300.0)
        assert lister.parts == [True, True]
        assert rig.discovery.status()["safety_without_claude"] == 0


async def test_a_change_in_the_watched_folder_costs_one_listing(rig: Rig) -> None:
    rig.clients.joined()
    await rig.advance(30.0)
    assert len(rig.lister.calls) == 1
    write_session(rig.folder, os.getpid())  # a session started in a terminal
    await until(
        lambda: len(rig.lister.calls) == 2, what="a listing for the new session", timeout=5, every=0
    )
    await rig.advance(200.0)
    assert len(rig.lister.calls) == 2  # one, and quiet again
    assert rig.discovery.status()["changes"] >= 1


async def test_refresh_lists_only_when_the_watch_saw_something(rig: Rig) -> None:
    rig.clients.joined()
    assert await rig.discovery.refresh() == {"listed": False, "fresh": True, "events": 0}
    write_session(rig.folder, os.getpid())
    assert (await asyncio.wait_for(rig.discovery.refresh(), 5))["listed"] is True
    assert len(rig.lister.calls) == 2


async def test_a_watch_at_the_inotify_limit_falls_back_to_the_seed_cadence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def limit(self: inotify.Inotify, path: Path, mask: int) -> int:
        raise OSError(errno.ENOSPC, f"cannot watch {path}: {os.strerror(errno.ENOSPC)}")

    monkeypatch.setattr(inotify.Inotify, "add", limit)
    folder = tmp_path / "sessions"
    folder.mkdir()
    async with _rig(folder) as rig:
        status = rig.discovery.status()
        assert (status["watch"], status["cadence"]) == ("off", "seed")
        assert "fs.inotify.max_user_watches" in status["seed_because"]
        assert "seed's cadence" in part_text("discovery", status)
        before = len(rig.lister.calls)
        rig.clients.joined()
        await until(
            lambda: len(rig.lister.calls) == before + 1,
            what="a listing for the client",
            timeout=5,
            every=0,
        )
        await rig.advance(60.0)
        # 2, 4, 8, 10, 10, 10, 10 s after each listing that changed nothing.
        assert len(rig.lister.calls) - before == 1 + 7


async def test_a_watch_that_breaks_later_falls_back_to_the_seed_cadence(rig: Rig) -> None:
    rig.clients.joined()
    assert rig.discovery.status()["cadence"] == "watch"
    rig.changes._fail("the watch of the session folders broke: queue gone")  # as _on_readable
    await until(
        lambda: len(rig.lister.calls) == 2,
        what="the listing the failure asks for",
        timeout=5,
        every=0,
    )
    assert rig.discovery.status()["cadence"] == "seed"
    await rig.advance(20.0)
    assert len(rig.lister.calls) > 3  # the short cadence while the list is shown


async def test_without_pidfds_a_client_gets_the_seed_cadence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "pidfd_open")  # another platform
    folder = tmp_path / "sessions"
    folder.mkdir()
    async with _rig(folder) as rig:
        status = rig.discovery.status()
        assert (status["watch"], status["cadence"]) == ("on", "seed")
        assert status["seed_because"] == "no pidfd on this platform"
        rig.clients.joined()
        await rig.advance(20.0)
        assert len(rig.lister.calls) > 3


# --- the daemon, as `volee daemon status` and the tray meet it --------------------------------


async def test_the_daemon_with_the_list_shown_lists_nothing_and_says_its_cadence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real daemon (its own watch of $HOME's session folders, the system lister without
    Claude Code) on a fake clock: a subscribed interactive client for ten minutes of
    simulated time costs the safety listings only."""
    import time

    from volee_desktop.daemon.main import Daemon
    from volee_desktop.ipc.aclient import AsyncClient
    from volee_desktop.paths import dirs

    root = Path(os.path.realpath("/tmp")) / f"vq{os.getpid()}"
    (root / "h" / ".claude" / "sessions").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("VOLEE_HOME", str(root / "v"))
    monkeypatch.setenv("HOME", str(root / "h"))
    monkeypatch.delenv("VOLEE_CLAUDE_BIN", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    clock = FakeClock(time.time())
    daemon = await Daemon.start(dirs(), clock=clock)
    try:
        discovery = daemon.discovery  # type: ignore[attr-defined]
        await until(
            lambda: discovery.last_listed_at, what="the listing at start", timeout=5, every=0
        )
        client = await AsyncClient.connect(daemon.dirs.socket)
        try:
            await client.call("subscribe.interactive", {"interactive": True})
            await until(
                lambda: discovery.clients.count == 1, what="the client counted", timeout=5, every=0
            )
            status = await client.call("daemon.status")
            assert status["extra"]["discovery"]["cadence"] == "watch"
            listings = discovery.listings
            for _ in range(290):
                clock.advance(1.0)
                for _ in range(20):
                    await asyncio.sleep(0)
            assert discovery.listings == listings
        finally:
            await client.close()
    finally:
        await daemon.close()
        import shutil

        shutil.rmtree(root, ignore_errors=True)

"""What wakes discovery: the session folders' watch, on real folders (daemon/watch.py,
daemon/inotify.py).  Both backends pass the same tests: inotify on the loop (Linux) and
``watchfiles`` (the other platforms)."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.daemon.test_missions import until
from volee_desktop.core.model import Harness
from volee_desktop.daemon import inotify, watch

BACKENDS: dict[str, Callable[..., watch.Watch]] = {"watchfiles": watch.FolderWatch}
if inotify.available():
    BACKENDS["inotify"] = inotify.InotifyWatch


class Told:
    def __init__(self) -> None:
        self.calls: list[Harness] = []

    def __call__(self, harness: Harness) -> None:
        self.calls.append(harness)

    def count(self, harness: Harness) -> int:
        return self.calls.count(harness)


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Callable[..., watch.Watch]:
    return BACKENDS[request.param]


@pytest.fixture
async def watching(
    tmp_path: Path, backend: Callable[..., watch.Watch]
) -> AsyncIterator[tuple[Path, Path, Told, watch.Watch]]:
    claude = tmp_path / "claude" / "sessions"
    claude.mkdir(parents=True)
    codex = tmp_path / "codex" / "sessions"  # not there yet: waited for
    told = Told()
    w = backend({claude: Harness.CLAUDE, codex: Harness.CODEX}, told)
    w.start()
    await asyncio.sleep(0.4)  # watchfiles' thread arms its watch (inotify: at once)
    yield claude, codex, told, w
    await w.close()


async def test_a_new_session_file_is_told_for_its_harness(
    watching: tuple[Path, Path, Told, watch.Watch],
) -> None:
    claude, _codex, told, w = watching
    assert w.running
    (claude / "1234.json").write_text("{}")
    await until(lambda: told.count(Harness.CLAUDE), "the claude folder's change", 10)
    assert told.count(Harness.CODEX) == 0
    before = told.count(Harness.CLAUDE)
    (claude / "1234.json").unlink()  # a clean exit removes it
    await until(lambda: told.count(Harness.CLAUDE) > before, "the removal", 10)


async def test_a_folder_that_appears_later_is_watched_with_what_grows_under_it(
    watching: tuple[Path, Path, Told, watch.Watch],
) -> None:
    _claude, codex, told, _w = watching
    day = codex / "2026" / "12" / "01"
    day.mkdir(parents=True)
    await until(lambda: told.count(Harness.CODEX), "the codex folder appearing", 10)
    await asyncio.sleep(0.5)
    before = told.count(Harness.CODEX)
    (day / "rollout-1.jsonl").write_text('{"type":"session_meta"}\n')
    await until(lambda: told.count(Harness.CODEX) > before, "a rollout deep inside", 10)
    before = told.count(Harness.CODEX)
    later = codex / "2026" / "12" / "02"
    later.mkdir()
    await until(lambda: told.count(Harness.CODEX) > before, "a new day's folder", 10)
    await asyncio.sleep(0.5)
    before = told.count(Harness.CODEX)
    with (later / "rollout-2.jsonl").open("a") as f:
        f.write("{}\n")
    await until(lambda: told.count(Harness.CODEX) > before, "a rollout in the new folder", 10)


async def test_a_folder_removed_and_made_again_is_still_watched(
    watching: tuple[Path, Path, Told, watch.Watch],
) -> None:
    claude, _codex, told, w = watching
    shutil.rmtree(claude)
    await until(lambda: told.count(Harness.CLAUDE), "its removal", 10)
    await asyncio.sleep(0.5)
    claude.mkdir()
    await asyncio.sleep(0.8)
    before = told.count(Harness.CLAUDE)
    (claude / "99.json").write_text("{}")
    await until(lambda: told.count(Harness.CLAUDE) > before, "a file in the new folder", 10)
    assert w.running


@pytest.mark.skipif(not inotify.available(), reason="inotify is Linux's")
async def test_inotify_tells_a_burst_once_and_closes_its_descriptor(tmp_path: Path) -> None:
    told = Told()
    w = inotify.InotifyWatch({tmp_path: Harness.PI}, told)
    w.start()
    for n in range(20):
        (tmp_path / f"{n}.jsonl").write_text("x")
    await until(lambda: told.calls, "the burst", 10)
    await asyncio.sleep(inotify.DEBOUNCE * 2)
    assert told.calls == [Harness.PI]
    assert w.changes >= 20
    fd = w.descriptor
    assert fd is not None
    os.fstat(fd)
    await w.close()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)
    assert not w.running
    assert w.descriptor is None


@pytest.mark.skipif(not inotify.available(), reason="inotify is Linux's")
async def test_inotify_out_of_watches_falls_back_to_the_clock_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room(self: inotify.Inotify, path: Path, mask: int) -> int:
        raise OSError(errno.ENOSPC, f"cannot watch {path}: No space left on device")

    monkeypatch.setattr(inotify.Inotify, "add", no_room)
    told = Told()
    w = inotify.InotifyWatch({tmp_path: Harness.CLAUDE}, told)
    w.start()
    assert not w.running
    assert w.failed is not None
    assert "No space left on device" in w.failed
    assert told.calls == [Harness.CLAUDE]  # a listing now, then the clock
    await w.close()


def test_parse_reads_events_with_and_without_names() -> None:
    name = b"abc.json\0\0\0\0"
    data = struct.pack("iIII", 1, inotify.IN_CREATE, 0, len(name)) + name
    data += struct.pack("iIII", 2, inotify.IN_Q_OVERFLOW, 0, 0)
    assert inotify.parse(data) == [
        inotify.Event(1, inotify.IN_CREATE, "abc.json"),
        inotify.Event(2, inotify.IN_Q_OVERFLOW, ""),
    ]
    assert inotify.parse(b"") == []
    assert inotify.parse(b"\0" * 8) == []  # a short read: nothing half-parsed


def test_the_platforms_watch_is_inotify_on_linux(tmp_path: Path) -> None:
    chosen = watch.folder_watch({tmp_path: Harness.CLAUDE}, Told())
    expected = inotify.InotifyWatch if inotify.available() else watch.FolderWatch
    assert type(chosen) is expected


async def test_targets_waiting_on_one_folder_are_each_told(
    tmp_path: Path, backend: Callable[..., watch.Watch]
) -> None:
    """A fresh HOME: Claude Code's, codex's and pi's folders all wait on HOME itself."""
    home = tmp_path / "home"
    home.mkdir()
    folders = {
        home / ".claude" / "sessions": Harness.CLAUDE,
        home / ".codex" / "sessions": Harness.CODEX,
        home / ".pi" / "agent" / "sessions": Harness.PI,
    }
    told = Told()
    w = backend(folders, told)
    w.start()
    try:
        await asyncio.sleep(0.4)
        (home / ".claude.json").write_text("{}")  # what Claude Code writes first: no news
        for folder, harness in folders.items():
            folder.mkdir(parents=True)
            await until(lambda h=harness: told.count(h), f"{harness}'s folder", 10)
            await asyncio.sleep(0.5)
            before = told.count(harness)
            (folder / "s.json").write_text("{}")
            await until(lambda h=harness, b=before: told.count(h) > b, f"{harness}'s file", 10)
    finally:
        await w.close()

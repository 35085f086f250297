"""What wakes discovery: the session folders' watch, on real folders (daemon/discovery/watches.py,
daemon/discovery/inotify.py).  Both backends pass the same tests: inotify on the loop (Linux) and
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

from tests.polling import until
from volee_desktop.core.model import Harness
from volee_desktop.daemon.discovery import inotify
from volee_desktop.daemon.discovery import watches as watch

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
    await until(lambda: len(w.armed) == 2, what="both folders armed", timeout=10)
    yield claude, codex, told, w
    await w.close()


async def test_a_new_session_file_is_told_for_its_harness(
    watching: tuple[Path, Path, Told, watch.Watch],
) -> None:
    claude, _codex, told, w = watching
    assert w.running
    (claude / "1234.json").write_text("{}")
    await until(lambda: told.count(Harness.CLAUDE), what="the claude folder's change", timeout=10)
    assert told.count(Harness.CODEX) == 0
    before = told.count(Harness.CLAUDE)
    (claude / "1234.json").unlink()  # a clean exit removes it
    await until(lambda: told.count(Harness.CLAUDE) > before, what="the removal", timeout=10)


async def test_a_folder_that_appears_later_is_watched_with_what_grows_under_it(
    watching: tuple[Path, Path, Told, watch.Watch],
) -> None:
    _claude, codex, told, w = watching
    day = codex / "2026" / "12" / "01"
    day.mkdir(parents=True)
    await until(lambda: told.count(Harness.CODEX), what="the codex folder appearing", timeout=10)
    await until(lambda: w.armed.get(codex) == codex, what="the codex folder watched", timeout=10)
    before = told.count(Harness.CODEX)
    (day / "rollout-1.jsonl").write_text('{"type":"session_meta"}\n')
    await until(
        lambda: told.count(Harness.CODEX) > before, what="a rollout deep inside", timeout=10
    )
    before = told.count(Harness.CODEX)
    later = codex / "2026" / "12" / "02"
    later.mkdir()
    # Told once the new folder is watched too (inotify adds it first; watchfiles' notify adds
    # it as it reads the event, long before its debounce lets the event out).
    await until(lambda: told.count(Harness.CODEX) > before, what="a new day's folder", timeout=10)
    before = told.count(Harness.CODEX)
    with (later / "rollout-2.jsonl").open("a") as f:
        f.write("{}\n")
    await until(
        lambda: told.count(Harness.CODEX) > before, what="a rollout in the new folder", timeout=10
    )


async def test_a_folder_removed_and_made_again_is_still_watched(
    watching: tuple[Path, Path, Told, watch.Watch],
) -> None:
    claude, _codex, told, w = watching
    shutil.rmtree(claude)
    await until(lambda: told.count(Harness.CLAUDE), what="its removal", timeout=10)
    await until(lambda: w.armed.get(claude) == claude.parent, what="its parent watched", timeout=10)
    before = told.count(Harness.CLAUDE)
    claude.mkdir()
    await until(
        lambda: told.count(Harness.CLAUDE) > before and w.armed.get(claude) == claude,
        what="the new folder told and watched",
        timeout=10,
    )
    before = told.count(Harness.CLAUDE)
    (claude / "99.json").write_text("{}")
    await until(
        lambda: told.count(Harness.CLAUDE) > before, what="a file in the new folder", timeout=10
    )
    assert w.running


@pytest.mark.skipif(not inotify.available(), reason="inotify is Linux's")
async def test_inotify_tells_a_burst_once_and_closes_its_descriptor(tmp_path: Path) -> None:
    told = Told()
    w = inotify.InotifyWatch({tmp_path: Harness.PI}, told)
    w.start()
    for n in range(20):
        (tmp_path / f"{n}.jsonl").write_text("x")
    await until(lambda: told.calls, what="the burst", timeout=10)
    await asyncio.sleep(inotify.DEBOUNCE * 2)  # time for a second call: it must not come
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
        await until(lambda: len(w.armed) == 3, what="the three armed on HOME", timeout=10)
        (home / ".claude.json").write_text("{}")  # what Claude Code writes first: no news
        for folder, harness in folders.items():
            folder.mkdir(parents=True)
            await until(lambda h=harness: told.count(h), what=f"{harness}'s folder", timeout=10)
            await until(
                lambda f=folder: w.armed.get(f) == f, what=f"{harness}'s folder watched", timeout=10
            )
            before = told.count(harness)
            (folder / "s.json").write_text("{}")
            await until(
                lambda h=harness, b=before: told.count(h) > b, what=f"{harness}'s file", timeout=10
            )
    finally:
        await w.close()

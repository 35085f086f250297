"""Faults of the disk: the -wal deleted under the daemon, a full disk, an unwritable spool,
a byte flipped in a TEXT column."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import registered
from tests.fakes.clock import FakeClock
from tests.polling import until
from volee_desktop.cli import hookshim
from volee_desktop.daemon import main as daemon_main
from volee_desktop.daemon.errors import Broken, NotWritten
from volee_desktop.daemon.main import Daemon
from volee_desktop.paths import dirs
from volee_desktop.store import REPAIR_COMMAND, CorruptLog, EventLog, repair

ROOT = Path(__file__).resolve().parents[2]

# --- the -wal deleted while the log is open ----------------------------------------------

_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from volee_desktop.store import EventLog, Record, StoreError
    log = EventLog.open(sys.argv[1])
    for n in range(5):
        print("acked", log.append_sync([Record("t", 1, b"before %d" % n)])[0], flush=True)
    os.unlink(sys.argv[1] + "-wal")
    for n in range(5):
        try:
            print("acked", log.append_sync([Record("t", 1, b"after %d" % n)])[0], flush=True)
        except StoreError as exc:
            print("refused", exc, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_deleted_wal_is_seen_and_nothing_acknowledged_is_lost(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == -9, done.stderr
    lines = done.stdout.splitlines()
    acked = [int(line.split()[1]) for line in lines if line.startswith("acked")]
    refused = [line for line in lines if line.startswith("refused")]
    # Writes stop with a clear error...
    assert refused, lines
    assert "-wal file was deleted" in refused[0]
    assert "Restart the daemon" in refused[0]
    # ...and every write acknowledged before the SIGKILL is in the file.
    log = EventLog.open(db)
    try:
        assert [r.seq for r in log.read()] == acked
        assert len(acked) >= 5
    finally:
        log.close()


async def test_a_wal_deleted_while_the_daemon_is_idle_is_seen_and_nothing_acknowledged_is_lost(
    tmp_path: Path,
) -> None:
    # Issue 22, item 6: before, only the next commit looked; an idle daemon kept every event
    # since the last checkpoint in a -wal no one could open again after a crash.
    clock = FakeClock(start=time.time())
    d = await Daemon.start(dirs(), clock=clock)
    try:
        acked = [registered(f"a{n}", at=float(n)) for n in range(5)]
        for event in acked:
            await d.service.commit([event])
        os.unlink(f"{d.dirs.events_db}-wal")
        await _tick_spool_loop(clock)
        await until(lambda: d.service.broken is not None, what="the daemon stopped writing")
        broken = d.service.broken or ""
        assert "-wal file was deleted" in broken
        assert "Restart the daemon" in broken
        with pytest.raises(Broken, match="-wal file was deleted"):
            await d.service.commit([registered("after")])
        # What a crash now would leave: the main file alone holds every acknowledged event.
        alone = tmp_path / "copy.db"
        shutil.copyfile(d.dirs.events_db, alone)
        copy = EventLog.open(alone)
        try:
            assert sum(1 for _ in copy.read()) == len(acked)
        finally:
            copy.close()
    finally:
        await d.close()


async def _tick_spool_loop(clock: FakeClock) -> None:
    """Move the fake clock past the spool loop's wait (the loop the -wal look rides on)."""
    await until(lambda: bool(clock.sleeping()), what="the spool loop waits on the clock")
    clock.advance(daemon_main.SPOOL_EVERY)


# --- a full disk ---------------------------------------------------------------------------


def _fill(daemon: Daemon, pages: int | None) -> None:
    """The fake layer: SQLite answers SQLITE_FULL past ``pages`` pages (None: no limit)."""
    conn = daemon.log._writer
    limit = pages if pages is not None else 1 << 30
    conn.execute(f"PRAGMA max_page_count = {limit}")


async def test_a_full_disk_refuses_saying_retry_and_the_retry_works() -> None:
    d = await Daemon.start(dirs())
    try:
        page_count = d.log._writer.execute("PRAGMA page_count").fetchone()[0]
        _fill(d, page_count)
        many = [registered(f"a{n}", at=float(n)) for n in range(200)]
        with pytest.raises(NotWritten) as caught:
            await d.service.commit(many)
        assert "full" in str(caught.value)
        assert "retry" in str(caught.value)
        assert "restart" not in str(caught.value)
        _fill(d, None)  # space is back
        await d.service.commit(many)
        assert len(d.service.registry.agents) == 200
    finally:
        await d.close()
    again = await Daemon.start(dirs())
    try:
        assert len(again.service.registry.agents) == 200
    finally:
        await again.close()


def _fill_the_disk(filler: Path) -> None:
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs, where this machine allows mounting one (root in CI)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    tried = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        check=False,
    )
    if tried.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {tried.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


async def test_a_really_full_disk_refuses_then_takes_writes_once_space_is_back(
    small_tmpfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLEE_HOME", str(small_tmpfs / "h"))
    d = await Daemon.start(dirs())
    filler = small_tmpfs / "filler"
    try:
        _fill_the_disk(filler)
        many = [registered(f"b{n}", at=float(n)) for n in range(300)]
        with pytest.raises(NotWritten, match="retry"):
            await d.service.commit(many)
        filler.unlink()
        await d.service.commit(many)
        assert len(d.service.registry.agents) == 300
    finally:
        filler.unlink(missing_ok=True)
        await d.close()


# --- a spool that cannot be written ------------------------------------------------------


def test_a_hook_that_can_keep_its_payload_nowhere_fails_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")  # spool/ under a file: unwritable even for root
    monkeypatch.setenv("VOLEE_SOCKET", str(tmp_path / "nobody.sock"))
    monkeypatch.setenv("VOLEE_SPOOL", str(blocker / "spool"))
    payload = json.dumps({"session_id": "s", "prompt": "keep me"}).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))
    assert hookshim.main(["UserPromptSubmit"]) == 1
    err = capsys.readouterr().err
    assert "payload NOT kept" in err
    assert str(blocker / "spool") in err


# --- a byte flipped in the type column -----------------------------------------------------


async def test_bad_utf8_in_the_type_column_takes_the_corruption_path() -> None:
    folders = dirs()
    d = await Daemon.start(folders)
    await d.service.commit([registered("a", at=1.0)])
    await d.service.commit([registered("b", at=2.0)])
    await d.close()
    with sqlite3.connect(folders.events_db) as conn:
        conn.execute("UPDATE events SET type = CAST(X'ff6167' AS TEXT) WHERE seq = 2")
        conn.execute("DELETE FROM snapshots")  # so that the start replays record 2
    with pytest.raises(CorruptLog) as caught:
        await Daemon.start(folders)
    message = str(caught.value)
    assert "at record seq 2" in message
    assert "not UTF-8" in message
    assert REPAIR_COMMAND in message
    assert caught.value.backup is not None
    assert caught.value.backup.exists()
    report = repair(folders.events_db)
    assert report.kept == 1
    assert report.set_aside == 1
    assert report.unreadable == 0
    d = await Daemon.start(folders)
    try:
        assert len(d.service.registry.agents) == 1
    finally:
        await d.close()


def test_a_hook_on_a_really_read_only_state_folder_fails_loudly(
    small_tmpfs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = small_tmpfs / "state"
    state.mkdir(mode=0o700)
    remounted = subprocess.run(
        ["mount", "-o", "remount,ro", str(small_tmpfs)], capture_output=True, check=False
    )
    if remounted.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {remounted.stderr.decode().strip()}")
    monkeypatch.setenv("VOLEE_SOCKET", str(small_tmpfs / "nobody.sock"))
    monkeypatch.setenv("VOLEE_SPOOL", str(state / "spool"))
    payload = json.dumps({"session_id": "s", "prompt": "keep me"}).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))
    assert hookshim.main(["UserPromptSubmit"]) == 1
    assert "Read-only file system" in capsys.readouterr().err

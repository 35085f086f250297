"""Host records that lie: a record pointing at a process that is not the agent's host is never
adopted, signalled or talked to; it is set aside and said in the timeline and the status."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import registered
from tests.leftovers import end_host
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.agents.timeline import describe
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.params import NoParameters
from volee_desktop.hosts import recordio
from volee_desktop.hosts.launcher import launch_host
from volee_desktop.hosts.records import HostRecord, write_record_atomic
from volee_desktop.paths import dirs
from volee_desktop.store.codec import decode_event


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process of this user (what a stale or forged record points at)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc
    proc.kill()
    proc.wait()


def _record_for(agent: str, pid: int, socket_path: str = "") -> HostRecord:
    return HostRecord(
        agent=agent,
        host_pid=pid,
        host_create_time=recordio.start_time(pid),
        host_start_ticks=recordio.start_ticks(pid),
        program_pid=pid,
        program_create_time=recordio.start_time(pid),
        program_start_ticks=recordio.start_ticks(pid),
        boot_time=recordio.boot_time(),
        boot_id=recordio.boot_id(),
        started_at=1.0,
        argv=("claude",),
        cwd="/tmp",
        socket=socket_path,
    )


async def _working_agent(name: str, pid: int) -> str:
    """An agent the log says runs in host ``pid`` (written while no daemon runs)."""
    d = await Daemon.start(dirs())
    try:
        a = registered(name)
        await d.service.commit(
            [
                a,
                ev.HostStarted(at=2.0, agent=a.agent, host_pid=pid, program_pid=pid),
                ev.StateChanged(at=3.0, agent=a.agent, state=AgentState.WORKING),
            ]
        )
        return a.agent
    finally:
        await d.close()


def _events(d: Daemon, agent: str) -> list[ev.Event]:
    decoded = (decode_event(r.type, r.version, r.payload) for r in d.log.read(0))
    return [e for e in decoded if getattr(e, "agent", None) == agent]


async def test_a_record_pointing_at_an_unrelated_process_is_not_adopted(
    bystander: subprocess.Popen[bytes],
) -> None:
    agent = await _working_agent("liar", bystander.pid)
    path = dirs().hosts / f"{agent}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_record_atomic(path, _record_for(agent, bystander.pid))

    d = await Daemon.start(dirs())
    try:
        events = _events(d, agent)
        assert not any(isinstance(e, ev.HostAdopted) for e in events)
        (suspect,) = [e for e in events if isinstance(e, ev.HostSuspect)]
        assert suspect.host_pid == bystander.pid
        assert "not volee's host" in suspect.reason
        assert "neither signalled nor talked to" in describe(suspect)
        view = d.service.registry.agents[agent]
        assert view.state is AgentState.STOPPED
        assert view.pid is None
        assert "host record was suspect" in view.detail
        assert agent in (await d.own.api_status(None, NoParameters()))["suspect_hosts"]  # type: ignore[arg-type]
        assert not path.exists()  # set aside, so a new start is not blocked by it
        assert Path(suspect.set_aside).exists()
        # `volee stop` is plain: nothing to talk to, nothing internal.
        await d.agents.stop(view, reason="test")
        assert bystander.poll() is None  # never signalled
    finally:
        await d.close()


class Planted:
    """A socket someone else listens on, counting who connects."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.sock.settimeout(0.1)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(5)


def _launch_real_host(agent: str) -> HostRecord:
    folders = dirs()
    return launch_host(
        agent,
        [sys.executable, "-c", "import time; time.sleep(300)"],
        "/tmp",
        dict(os.environ),
        folders.hosts / f"{agent}.json",
        folders.runtime / "hosts" / f"{agent[-10:]}.sock",
    )


async def test_a_tampered_socket_field_is_never_talked_to(tmp_path: Path) -> None:
    agent = await _working_agent("tampered", 1)
    record = _launch_real_host(agent)
    planted = Planted(tmp_path / "foreign.sock")
    try:
        path = dirs().hosts / f"{agent}.json"
        data = json.loads(path.read_text())
        data["socket"] = str(tmp_path / "foreign.sock")
        path.write_text(json.dumps(data))
        d = await Daemon.start(dirs())
        try:
            (suspect,) = [e for e in _events(d, agent) if isinstance(e, ev.HostSuspect)]
            assert "socket field points at" in suspect.reason
            await d.agents.stop(d.service.registry.agents[agent], reason="test")
            await asyncio.sleep(0)
            assert planted.connections == 0
        finally:
            await d.close()
    finally:
        planted.close()
        end_host(record.agent, record.program_pid, record.host_pid)


async def test_the_host_of_another_agent_is_not_adopted_for_this_one() -> None:
    mine = await _working_agent("mine", 1)
    other = await _working_agent("other", 1)
    record = _launch_real_host(other)
    try:
        # A record for `mine` copied from `other`'s (and its agent field changed).
        data = json.loads((dirs().hosts / f"{other}.json").read_text())
        data["agent"] = mine
        data["socket"] = ""  # and no socket field to give it away
        (dirs().hosts / f"{mine}.json").write_text(json.dumps(data))
        d = await Daemon.start(dirs())
        try:
            (suspect,) = [e for e in _events(d, mine) if isinstance(e, ev.HostSuspect)]
            assert "not volee's host for this agent" in suspect.reason
            # The genuine one is adopted as before.
            assert any(isinstance(e, ev.HostAdopted) for e in _events(d, other))
        finally:
            await d.close()
    finally:
        end_host(record.agent, record.program_pid, record.host_pid)


async def test_a_genuine_host_is_adopted(tmp_path: Path) -> None:
    agent = await _working_agent("genuine", 1)
    record = _launch_real_host(agent)
    try:
        d = await Daemon.start(dirs())
        try:
            events = _events(d, agent)
            assert any(isinstance(e, ev.HostAdopted) for e in events)
            assert not any(isinstance(e, ev.HostSuspect) for e in events)
        finally:
            await d.close()
    finally:
        end_host(record.agent, record.program_pid, record.host_pid)

"""A wall clock that jumps (NTP after a resume from sleep) never makes a live host look dead.

The kernel's ``btime`` is derived from the wall clock, so a step moves it and every start time
computed from it.  The fake clock here moves ``recordio.boot_time`` (what /proc/stat says after a
step) and ``time.time``; the boot id and the start ticks must not care.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.faults.conftest import Rig
from tests.polling import wait_until
from volee_desktop.core import recovery as rules
from volee_desktop.hosts import recordio
from volee_desktop.hosts.records import host_alive, program_alive, read_record, same_boot

STEPS = (24.0, -24.0, 3600.0, -3600.0, 8 * 3600.0)


def _step_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    real_boot, real_time = recordio.boot_time, time.time
    monkeypatch.setattr(recordio, "boot_time", lambda: (real_boot() or 0.0) + seconds)
    monkeypatch.setattr(time, "time", lambda: real_time() + seconds)


@pytest.mark.parametrize("seconds", STEPS)
def test_a_live_host_stays_alive_when_the_clock_jumps(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> None:
    record = rig.launch_fake()
    assert record.boot_id == recordio.boot_id() is not None
    assert record.host_start_ticks is not None
    assert record.program_start_ticks is not None
    _step_clock(monkeypatch, seconds)

    assert host_alive(record)
    assert program_alive(record)
    assert same_boot(record) is True
    # So the daemon says "host stopped" (not "the machine restarted") if it is gone later.
    assert rules.cause_of_boot(same_boot(record)) == rules.HOST_STOPPED


def test_another_boot_is_still_told_apart(rig: Rig) -> None:
    rig.launch_fake()
    path = rig.record_path("ag_1")
    data = json.loads(path.read_text())
    data["boot_id"] = "00000000-0000-4000-8000-000000000000"
    path.write_text(json.dumps(data))
    earlier = read_record(path)
    assert earlier is not None

    assert not host_alive(earlier)
    assert same_boot(earlier) is False
    assert rules.cause_of_boot(same_boot(earlier)) == rules.MACHINE_RESTARTED


def test_a_reused_pid_is_still_told_apart(rig: Rig) -> None:
    from dataclasses import replace

    record = rig.launch_fake()
    assert record.host_start_ticks is not None
    other = replace(record, host_start_ticks=record.host_start_ticks - 1)
    assert not host_alive(other)


def test_a_record_from_before_the_boot_id_falls_back_to_the_wall_clock(rig: Rig) -> None:
    from dataclasses import replace

    record = replace(rig.launch_fake(), boot_id=None, host_start_ticks=None)
    assert host_alive(record)
    assert same_boot(replace(record, boot_time=(record.boot_time or 0) - 3600)) is False


def test_a_stand_in_session_keeps_its_id_when_the_clock_jumps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A codex process without a session file is named by its start in ticks, not by the
    wall-clock start psutil derives (which a clock step moves: it would look new)."""
    import subprocess

    import psutil

    from volee_desktop.daemon.discovery import listers

    project = tmp_path / "p"
    project.mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "h")}
    proc = subprocess.Popen(["bash", "-c", "exec -a codex sleep 60"], cwd=project, env=env)
    real_iter = psutil.process_iter

    def stepped(seconds: float) -> Any:
        def process_iter(attrs: Any) -> Any:
            for p in real_iter(attrs):
                if p.info.get("create_time") is not None:
                    p.info["create_time"] += seconds
                yield p

        return process_iter

    def session() -> str | None:
        for s in listers.scan_processes(time.time(), tmp_path / "h"):
            if s.pid == proc.pid:
                return s.session
        return None

    try:
        before = wait_until(session, 10, "the codex process listed")
        monkeypatch.setattr(psutil, "process_iter", stepped(24.0))
        assert session() == before
        monkeypatch.setattr(psutil, "process_iter", stepped(-3600.0))
        assert session() == before
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("seconds", [24.0, -24.0, 8 * 3600.0])
async def test_the_daemon_adopts_its_live_hosts_after_a_clock_step(
    monkeypatch: pytest.MonkeyPatch, seconds: float
) -> None:
    from tests.faults.test_host_records import _events, _launch_real_host, _working_agent
    from tests.leftovers import end_host
    from volee_desktop.core import events as ev
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.paths import dirs

    agent = await _working_agent("sleeper", 1)
    record = _launch_real_host(agent)
    try:
        _step_clock(monkeypatch, seconds)  # the laptop resumed, NTP stepped the clock
        d = await Daemon.start(dirs())
        try:
            events = _events(d, agent)
            assert any(isinstance(e, ev.HostAdopted) for e in events)
            assert not any(isinstance(e, ev.InterruptionDetected) for e in events)
            assert d.service.registry.agents[agent].state.live
        finally:
            await d.close()
    finally:
        end_host(record.agent, record.program_pid, record.host_pid)

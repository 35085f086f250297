"""``run_app`` as a process: embeds or joins the daemon, one per user, quits leaving agents be."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs
from volee_desktop.store.codec import event_to_dict

from . import procs

pytestmark = pytest.mark.slow


def offscreen_env(home: Path) -> dict[str, str]:
    env = procs.child_env(home, QT_QPA_PLATFORM="offscreen")
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def push_agents(socket: Path, *names: str) -> list[str]:
    scratch = FakeDaemonLink()
    world = World(scratch)
    ids = [world.agent(name) for name in names]
    with Client.connect(socket) as client:
        client.call("test.push", events=[event_to_dict(e) for _, e in scratch.log])
    return ids


def test_embeds_the_daemon_when_none_runs_and_quits_cleanly(volee_home: Path) -> None:
    env = offscreen_env(volee_home)
    app = procs.app("embed", env)
    try:
        app.wait_line(r"connected to the volee daemon \(inside the app; 0 agents\)")
        socket = dirs(env).socket
        push_agents(socket, "one", "two")
        assert app.stop(signal.SIGTERM) == 0
        app.wait_line(r"quitting; agents keep running")
        assert not socket.exists()  # the embedded daemon stopped with the app
    finally:
        app.kill()


def test_one_app_per_user_a_second_start_shows_the_first_ones_list(volee_home: Path) -> None:
    env = offscreen_env(volee_home)
    first = procs.app("embed", env)
    try:
        first.wait_line(r"connected to the volee daemon")
        second = procs.app("embed", env)
        second.wait_line(r"volee is already running")
        assert second.wait() == 0
        first.wait_line(r"another `volee` asked for the agent list")
        first.wait_line(r"agent list shown")
    finally:
        first.kill()


def test_a_client_app_quits_and_the_daemon_keeps_running(volee_home: Path) -> None:
    env = offscreen_env(volee_home)
    daemon = procs.daemon(env)
    try:
        daemon.wait_line(r"fake daemon serving")
        socket = dirs(env).socket
        push_agents(socket, "long-runner")
        app = procs.app("client", env)
        try:
            app.wait_line(r"connected to the volee daemon \(a separate process; 1 agents\)")
            assert app.stop(signal.SIGTERM) == 0
        finally:
            app.kill()
        with Client.connect(socket) as client:  # still there, with its agent
            assert client.call("agents.stop", agent="x") == {}
    finally:
        daemon.kill()


def test_the_app_runs_the_daemon_itself_when_the_one_it_used_goes_away(
    volee_home: Path,
) -> None:
    env = offscreen_env(volee_home)
    daemon = procs.daemon(env)
    app = None
    try:
        daemon.wait_line(r"fake daemon serving")
        app = procs.app("embed", env)
        app.wait_line(r"connected to the volee daemon \(a separate process")
        daemon.stop(signal.SIGTERM)
        app.wait_line(r"the daemon is still away: running it inside the app")
        app.wait_line(r"reconnected to the daemon")
        push_agents(dirs(env).socket, "after")
    finally:
        daemon.kill()
        if app is not None:
            app.kill()


def test_the_real_daemon_embedded_feeds_the_app_and_stops_on_request(volee_home: Path) -> None:
    env = offscreen_env(volee_home)
    env["VOLEE_LOG"] = "DEBUG"
    app = procs.app("real", env)
    try:
        app.wait_line(r"connected to the volee daemon \(inside the app; 0 agents\)", timeout=30)
        socket = dirs(env).socket
        with Client.connect(socket) as client:
            status = client.call("daemon.status")
            assert status["pid"] == app.popen.pid  # the daemon runs in the app's process
            client.call(
                "agents.spawn",
                harness="generic",
                name="quick-exit",
                argv=["sh", "-c", "exit 0"],
                cwd=str(volee_home),
            )
        app.wait_line(r"agent quick-exit: new -> launching", timeout=30)
        app.wait_line(r"agent quick-exit: \S+ -> (failed|stopped)", timeout=30)
        with Client.connect(socket) as client:
            client.call("daemon.stop")
        app.wait_line(r"asked to stop; the app stays a client", timeout=30)
        assert app.popen.poll() is None  # the app itself keeps running
        assert app.stop(signal.SIGTERM) == 0
    finally:
        app.kill()


def test_quitting_the_app_leaves_agents_running(volee_home: Path) -> None:
    import json
    import os

    from .desktop import poll

    env = offscreen_env(volee_home)
    app = procs.app("real", env)
    pids: list[int] = []
    try:
        app.wait_line(r"connected to the volee daemon \(inside the app", timeout=30)
        socket = dirs(env).socket
        with Client.connect(socket) as client:
            view = client.call(
                "agents.spawn",
                harness="generic",
                name="sleeper",
                argv=["sleep", "120"],
                cwd=str(volee_home),
            )
        record = dirs(env).hosts / f"{view['id']}.json"

        def started() -> bool:
            return record.exists() and bool(json.loads(record.read_text()).get("program_pid"))

        poll("the host record", started, timeout=20)
        data = json.loads(record.read_text())
        pids = [int(data["host_pid"]), int(data["program_pid"])]
        assert app.stop(signal.SIGTERM) == 0
        for pid in pids:
            os.kill(pid, 0)  # raises if the host or its program went with the app
    finally:
        app.kill()
        for pid in reversed(pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

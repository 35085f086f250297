"""The launchd agent: the plist round-trips through plistlib; launchctl is a typed fake here."""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest

from tests.fakes.loginitem import OK, FakeRunner
from volee_desktop.loginitem import LaunchdAgent, LoginItemError
from volee_desktop.loginitem.launchd import parse_print_state
from volee_desktop.loginitem.system import RunResult

from .support import snapshot

UID = 501
TARGET = f"gui/{UID}/com.volee.desktop"
NOT_LOADED = RunResult(113, "", f'Could not find service "com.volee.desktop" in domain for user gui: {UID}\n')  # fmt: skip  # noqa: E501
LOADED_RUNNING = RunResult(0, f"{TARGET} = {{\n\tactive count = 1\n\tstate = running\n\tpid = 4242\n}}\n", "")  # fmt: skip  # noqa: E501
LOADED_IDLE = RunResult(0, f"{TARGET} = {{\n\tstate = not running\n}}\n", "")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


def agent(runner: FakeRunner, environ: dict[str, str], logs: Path) -> LaunchdAgent:
    return LaunchdAgent(["/Applications/volee app/bin/volee"], environ, runner, UID, logs)


def test_the_plist_round_trips_with_every_key(environ: dict[str, str], logs: Path) -> None:
    plist = plistlib.loads(agent(FakeRunner(), environ, logs).render())
    assert plist == {
        "Label": "com.volee.desktop",
        "ProgramArguments": ["/Applications/volee app/bin/volee", "app"],
        "EnvironmentVariables": {"PATH": environ["PATH"], "VOLEE_HOME": environ["VOLEE_HOME"]},
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ProcessType": "Interactive",
        "LimitLoadToSessionType": "Aqua",
        "StandardOutPath": f"{logs}/login-item.out.log",
        "StandardErrorPath": f"{logs}/login-item.err.log",
    }


def test_xml_special_characters_survive(environ: dict[str, str], logs: Path) -> None:
    environ["PATH"] = "/opt/a&b/<c>:/usr/bin"
    item = LaunchdAgent(["/opt/a&b/volee"], environ, FakeRunner(), UID, logs)
    plist = plistlib.loads(item.render())
    assert plist["ProgramArguments"] == ["/opt/a&b/volee", "app"]
    assert plist["EnvironmentVariables"]["PATH"] == "/opt/a&b/<c>:/usr/bin"


def test_install_bootstraps_into_the_gui_domain_and_uninstall_removes_exactly_that(
    home: Path, environ: dict[str, str], logs: Path
) -> None:
    before = snapshot(home)
    runner = FakeRunner().on("launchctl", "print", answer=NOT_LOADED)
    item = agent(runner, environ, logs)

    item.install()

    plist_path = home / "Library" / "LaunchAgents" / "com.volee.desktop.plist"
    assert plist_path.read_bytes() == item.render()
    assert logs.is_dir()  # launchd would not create it for the log files
    assert runner.calls == [
        ("launchctl", "print", TARGET),
        ("launchctl", "enable", TARGET),
        ("launchctl", "bootstrap", f"gui/{UID}", str(plist_path)),
    ]
    after = snapshot(home)
    assert sorted(after.keys() - before.keys()) == ["Library/LaunchAgents/com.volee.desktop.plist"]

    # Loaded, not running (the person quit volee): unloaded and removed.
    runner.on("launchctl", "print", answer=LOADED_IDLE)
    runner.calls.clear()
    item.uninstall()
    assert ("launchctl", "bootout", TARGET) in runner.calls
    assert snapshot(home) == before


def test_uninstall_does_not_kill_a_running_tray(
    home: Path, environ: dict[str, str], logs: Path
) -> None:
    runner = FakeRunner().on("launchctl", "print", answer=NOT_LOADED)
    item = agent(runner, environ, logs)
    before = snapshot(home)
    item.install()
    runner.on("launchctl", "print", answer=LOADED_RUNNING)
    runner.calls.clear()
    item.uninstall()
    assert runner.calls == [("launchctl", "print", TARGET)]  # no bootout
    assert snapshot(home) == before


def test_reinstall_while_loaded_rewrites_without_bootstrapping_again(
    home: Path, environ: dict[str, str], logs: Path
) -> None:
    runner = FakeRunner().on("launchctl", "print", answer=LOADED_RUNNING)
    agent(runner, environ, logs).install()
    assert not any(call[1] == "bootstrap" for call in runner.calls)
    assert (home / "Library" / "LaunchAgents" / "com.volee.desktop.plist").is_file()


@pytest.mark.parametrize(
    ("answer", "title", "words"),
    [
        (
            RunResult(125, "", "Bootstrap failed: 125: Domain does not support specified action\n"),
            "Your login session is not reachable",
            "from Terminal on this Mac's desktop",
        ),
        (
            RunResult(127, "", "launchctl: command not found"),
            "launchctl was not found",
            "Nothing was installed",
        ),
        (
            RunResult(119, "", "Bootstrap failed: 119: Service is disabled\n"),
            "volee is not allowed to start at login",
            "System Settings",
        ),
        (
            RunResult(5, "", "Bootstrap failed: 5: Input/output error\n"),
            "Could not make volee start at login",
            "Input/output error",
        ),
    ],
)
def test_a_failed_bootstrap_is_a_clear_error_and_nothing_is_left(
    home: Path, environ: dict[str, str], logs: Path, answer: RunResult, title: str, words: str
) -> None:
    before = snapshot(home)
    runner = (
        FakeRunner()
        .on("launchctl", "print", answer=NOT_LOADED)
        .on("launchctl", "bootstrap", answer=answer)
    )
    with pytest.raises(LoginItemError) as info:
        agent(runner, environ, logs).install()
    assert info.value.title == title
    assert words in info.value.message
    assert snapshot(home) == before
    assert not logs.exists()  # the folder made for the logs went too


def test_status(home: Path, environ: dict[str, str], logs: Path) -> None:
    runner = FakeRunner().on("launchctl", "print", answer=NOT_LOADED)
    item = agent(runner, environ, logs)
    assert item.status().installed is False
    item.install()

    runner.on("launchctl", "print", answer=LOADED_RUNNING)
    status = item.status()
    assert (status.installed, status.enabled) == (True, True)
    assert status.detail == "loaded, running"
    assert status.path.endswith("LaunchAgents/com.volee.desktop.plist")

    runner.on("launchctl", "print", answer=NOT_LOADED)
    assert item.status().enabled is False

    runner.on("launchctl", "print", answer=RunResult(125, "", "Could not find domain"))
    status = item.status()
    assert status.enabled is None
    assert "not reachable" in status.detail

    other = LaunchdAgent(["/elsewhere/volee"], environ, runner, UID, logs)
    assert "volee daemon install" in other.status().detail


def test_parse_print_state() -> None:
    assert parse_print_state(LOADED_RUNNING.stdout) == "running"
    assert parse_print_state(LOADED_IDLE.stdout) == "not running"
    assert parse_print_state("") is None


def test_no_home_is_a_clear_error(logs: Path) -> None:
    with pytest.raises(LoginItemError, match="HOME"):
        LaunchdAgent(["/v"], {}, FakeRunner(OK), UID, logs)

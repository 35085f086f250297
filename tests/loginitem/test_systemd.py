"""The systemd user unit: verified by the real systemd-analyze, enabled by the real systemctl."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.fakes.loginitem import OK, FakeRunner
from volee_desktop.loginitem import LoginItemError, SubprocessRunner, SystemdUserUnit
from volee_desktop.loginitem.system import RunResult

from .support import snapshot

SYSTEMCTL = shutil.which("systemctl")
needs_systemctl = pytest.mark.skipif(SYSTEMCTL is None, reason="systemctl is not installed")


class ReachableManager:
    """The real systemctl on files (enable/disable/is-enabled work without a bus), plus a
    user manager that answers: ``daemon-reload`` and ``is-active`` are what need the bus."""

    def __init__(self) -> None:
        self.real = SubprocessRunner()
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], env: Mapping[str, str], timeout: float = 20.0) -> RunResult:
        self.calls.append(tuple(argv))
        if tuple(argv[:3]) == ("systemctl", "--user", "daemon-reload"):
            return OK
        if tuple(argv[:3]) == ("systemctl", "--user", "is-active"):
            return RunResult(3, "inactive\n", "")
        return self.real.run(argv, env, timeout)


def verify(unit: Path, environ: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt install systemd)")
    return subprocess.run(
        [analyze, "--user", "verify", str(unit)],
        env={**environ, "SYSTEMD_LOG_COLOR": "0"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# --- rendering ------------------------------------------------------------------


@pytest.mark.parametrize("exe_name", ["volee", "a dir/vo%lee$x"])
def test_the_rendered_unit_passes_systemd_analyze_verify(
    tmp_path: Path, environ: dict[str, str], exe_name: str
) -> None:
    exe = tmp_path / "install" / exe_name
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    environ["PATH"] += ":/opt/with space/%n"
    item = SystemdUserUnit([str(exe)], environ, FakeRunner())
    item.unit_path.parent.mkdir(parents=True, exist_ok=True)
    item.unit_path.write_text(item.render())

    done = verify(item.unit_path, environ)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_verify_would_catch_a_missing_program(tmp_path: Path, environ: dict[str, str]) -> None:
    # The check above can fail: a unit whose program does not exist is refused.
    item = SystemdUserUnit([str(tmp_path / "nowhere" / "volee")], environ, FakeRunner())
    item.unit_path.write_text(item.render())
    done = verify(item.unit_path, environ)
    assert done.returncode != 0
    assert "is not executable" in done.stderr


def test_the_unit_runs_the_headless_daemon_with_the_installers_path(
    volee_exe: Path, environ: dict[str, str]
) -> None:
    text = SystemdUserUnit([str(volee_exe)], environ, FakeRunner()).render()
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(text)
    assert unit["Service"]["ExecStart"] == f"{volee_exe} daemon run"
    assert unit["Service"]["Type"] == "simple"
    assert unit["Service"]["Restart"] == "on-failure"
    assert unit["Service"]["KillMode"] == "process"  # hosts outlive the daemon
    assert unit["Install"]["WantedBy"] == "default.target"
    assert "PartOf" not in unit["Unit"]  # not tied to a graphical session
    environment = [line for line in text.splitlines() if line.startswith("Environment=")]
    assert environment == [
        f"Environment=PATH={environ['PATH']}",
        f"Environment=VOLEE_HOME={environ['VOLEE_HOME']}",
    ]
    assert "@" not in text  # every placeholder filled


def test_no_environment_lines_when_nothing_to_carry(volee_exe: Path, home: Path) -> None:
    text = SystemdUserUnit([str(volee_exe)], {"HOME": str(home)}, FakeRunner()).render()
    assert "Environment=" not in text
    assert "@" not in text


def test_a_line_break_in_the_path_is_refused(home: Path) -> None:
    item = SystemdUserUnit(["/opt/vo\nlee"], {"HOME": str(home)}, FakeRunner())
    with pytest.raises(LoginItemError, match="line break"):
        item.render()


def exec_argv(desktop_exec: str) -> list[str]:
    """Split a .desktop Exec= value the way a session does, using a real shell for the quoting."""
    value = desktop_exec.replace("\\\\", "\\").replace("%%", "%")  # string level, field codes
    done = subprocess.run(
        ["sh", "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "sh", value],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split("\0")[:-1]


@pytest.mark.parametrize("exe_name", ["volee", 'a dir/vo%lee$x"q'])
def test_the_autostart_entry_starts_the_tray_with_the_same_environment(
    tmp_path: Path, environ: dict[str, str], exe_name: str
) -> None:
    exe = str(tmp_path / exe_name)
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]
    entry.read_string(SystemdUserUnit([exe], environ, FakeRunner()).render_autostart())
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application"
    assert exec_argv(section["Exec"]) == [
        "/usr/bin/env",
        f"PATH={environ['PATH']}",
        f"VOLEE_HOME={environ['VOLEE_HOME']}",
        exe,
        "app",
    ]


def test_xdg_config_home_is_honoured_and_a_relative_one_ignored(home: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    item = SystemdUserUnit(["/v"], {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}, FakeRunner())
    assert item.unit_path == xdg / "systemd" / "user" / "volee.service"
    item = SystemdUserUnit(["/v"], {"HOME": str(home), "XDG_CONFIG_HOME": "rel"}, FakeRunner())
    assert item.unit_path == home / ".config" / "systemd" / "user" / "volee.service"
    with pytest.raises(LoginItemError, match="HOME"):
        SystemdUserUnit(["/v"], {}, FakeRunner())


# --- install / uninstall with the real systemctl -----------------------------------


@needs_systemctl
def test_install_writes_enables_and_uninstall_removes_exactly_that(
    home: Path, volee_exe: Path, environ: dict[str, str]
) -> None:
    before = snapshot(home)
    runner = ReachableManager()
    item = SystemdUserUnit([str(volee_exe)], environ, runner)

    item.install()

    after = snapshot(home)
    added = {path: after[path] for path in after.keys() - before.keys()}
    assert sorted(added) == [
        ".config/autostart/volee.desktop",
        ".config/systemd/user/default.target.wants",
        ".config/systemd/user/default.target.wants/volee.service",
        ".config/systemd/user/volee.service",
    ]
    assert added[".config/systemd/user/volee.service"] == item.render()
    assert added[".config/autostart/volee.desktop"] == item.render_autostart()
    assert {k: v for k, v in after.items() if k in before} == before  # theirs untouched
    assert ("systemctl", "--user", "daemon-reload") in runner.calls
    status = item.status()
    assert (status.installed, status.enabled) == (True, True)
    assert status.path == str(item.unit_path)
    assert "enabled" in status.detail
    assert "now inactive" in status.detail

    item.install()  # again: idempotent
    assert snapshot(home) == after

    item.uninstall()
    assert snapshot(home) == before
    assert item.status().installed is False


@needs_systemctl
def test_uninstall_into_a_pristine_home_leaves_it_pristine(
    tmp_path: Path, volee_exe: Path, environ: dict[str, str]
) -> None:
    bare = tmp_path / "bare"
    (bare / ".config").mkdir(parents=True)
    environ["HOME"] = str(bare)
    item = SystemdUserUnit([str(volee_exe)], environ, ReachableManager())
    item.install()
    item.uninstall()
    assert snapshot(bare) == {".config": "dir"}


@needs_systemctl
def test_unreachable_user_manager_is_a_clear_error_and_nothing_is_left(
    home: Path, volee_exe: Path, environ: dict[str, str]
) -> None:
    # The real systemctl, with no user bus in XDG_RUNTIME_DIR: what a container or ssh gives.
    before = snapshot(home)
    item = SystemdUserUnit([str(volee_exe)], environ, SubprocessRunner())
    with pytest.raises(LoginItemError) as info:
        item.install()
    assert info.value.title == "Your systemd user session is not reachable"
    assert "Failed to connect to bus" in info.value.message
    assert "Nothing was installed" in info.value.message
    assert "desktop session" in info.value.message
    assert snapshot(home) == before

    status = item.status()
    assert (status.installed, status.enabled) == (False, False)


def test_unreachable_reported_by_the_fake_too(home: Path, environ: dict[str, str]) -> None:
    before = snapshot(home)
    runner = FakeRunner().on(
        "systemctl",
        "--user",
        "daemon-reload",
        answer=RunResult(1, "", "Failed to connect to bus: No medium found\n"),
    )
    item = SystemdUserUnit(["/opt/volee"], environ, runner)
    with pytest.raises(LoginItemError, match="not reachable"):
        item.install()
    assert snapshot(home) == before
    assert ("systemctl", "--user", "enable", "volee.service") not in runner.calls


def test_missing_systemctl_says_so(home: Path, environ: dict[str, str], tmp_path: Path) -> None:
    before = snapshot(home)
    environ["PATH"] = str(tmp_path / "empty")  # the real runner finds no systemctl
    item = SystemdUserUnit(["/opt/volee"], environ, SubprocessRunner())
    with pytest.raises(LoginItemError) as info:
        item.install()
    assert info.value.title == "systemd was not found"
    assert "volee daemon run" in info.value.message
    assert snapshot(home) == before


@needs_systemctl
def test_enable_failing_restores_an_earlier_install(
    home: Path, volee_exe: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    old = SystemdUserUnit([str(volee_exe)], environ, ReachableManager())
    old.install()
    before = snapshot(home)

    class EnableFails(ReachableManager):
        def run(
            self, argv: Sequence[str], env: Mapping[str, str], timeout: float = 20.0
        ) -> RunResult:
            if tuple(argv[:3]) == ("systemctl", "--user", "enable"):
                return RunResult(1, "", "Failed to enable unit: Access denied\n")
            return super().run(argv, env, timeout)

    new = SystemdUserUnit([str(tmp_path / "other" / "volee")], environ, EnableFails())
    with pytest.raises(LoginItemError) as info:
        new.install()
    assert info.value.title == "Could not make volee start at login"
    assert "Access denied" in info.value.message
    assert snapshot(home) == before  # the earlier, enabled install is as it was
    assert old.status().enabled is True


def test_enable_failing_on_a_first_install_leaves_nothing(
    home: Path, environ: dict[str, str]
) -> None:
    before = snapshot(home)
    runner = FakeRunner().on(
        "systemctl", "--user", "enable", answer=RunResult(1, "", "Failed to enable unit\n")
    )
    with pytest.raises(LoginItemError, match="Failed to enable unit"):
        SystemdUserUnit(["/opt/volee"], environ, runner).install()
    assert snapshot(home) == before


def test_a_folder_that_cannot_be_written_is_a_clear_error(
    home: Path, environ: dict[str, str]
) -> None:
    if os.geteuid() == 0:
        # root ignores folder permissions: block the folder with a file instead.
        shutil.rmtree(home / ".config" / "autostart")
        (home / ".config" / "autostart").write_text("not a folder")
    else:
        (home / ".config" / "autostart").chmod(0o500)
    before = snapshot(home)
    with pytest.raises(LoginItemError) as info:
        SystemdUserUnit(["/opt/volee"], environ, FakeRunner()).install()
    assert info.value.title == "Could not write the login item"
    assert snapshot(home) == before


@needs_systemctl
def test_uninstall_removes_our_link_even_when_disable_fails(
    home: Path, volee_exe: Path, environ: dict[str, str]
) -> None:
    before = snapshot(home)
    SystemdUserUnit([str(volee_exe)], environ, ReachableManager()).install()
    broken = FakeRunner().on("systemctl", "--user", "disable", answer=RunResult(1, "", "boom"))
    SystemdUserUnit([str(volee_exe)], environ, broken).uninstall()
    assert snapshot(home) == before


def test_uninstall_with_nothing_installed_is_fine(home: Path, environ: dict[str, str]) -> None:
    before = snapshot(home)
    runner = FakeRunner().on(
        "systemctl", "--user", "disable", answer=RunResult(1, "", "Unit not found")
    )
    SystemdUserUnit(["/opt/volee"], environ, runner).uninstall()
    assert snapshot(home) == before
    # Nothing was removed, so the manager was not asked to reload.
    assert ("systemctl", "--user", "daemon-reload") not in runner.calls


def test_status_of_an_unreachable_manager_and_an_outdated_unit(
    home: Path, environ: dict[str, str]
) -> None:
    SystemdUserUnit(["/old/volee"], environ, FakeRunner()).install()
    runner = (
        FakeRunner()
        .on("systemctl", "--user", "is-enabled", answer=RunResult(1, "", "Failed to connect"))
        .on("systemctl", "--user", "is-active", answer=RunResult(1, "", "Failed to connect to bus"))
    )
    status = SystemdUserUnit(["/new/volee"], environ, runner).status()
    assert status.installed is True
    assert status.enabled is None
    assert "user session not reachable" in status.detail
    assert "volee daemon install" in status.detail  # points to a different volee

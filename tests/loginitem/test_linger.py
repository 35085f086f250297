"""``volee daemon install --linger`` (a server keeps its agents without a desktop): loginctl
asked only then, the unit verified by the real systemd-analyze, started in the user manager
(loginitem/linger.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from volee_desktop.loginitem.linger import session_scope

from .test_systemd import verify

#: A loginctl and a systemctl that log their arguments; linger is "yes" once enabled.
FAKE_LOGINCTL = """#!/bin/sh
echo "loginctl $*" >> "$FAKE_LOG"
case "$1" in
  enable-linger) [ -n "$FAKE_LINGER_REFUSED" ] && { echo "$FAKE_LINGER_REFUSED" >&2; exit 1; }
                 touch "$FAKE_LOG.linger" ;;
  show-user) [ -e "$FAKE_LOG.linger" ] && echo yes || echo no ;;
esac
"""
FAKE_SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "$FAKE_LOG"
case "$2" in
  is-enabled) echo enabled ;;
  is-active) echo active ;;
esac
"""


@pytest.fixture
def env(tmp_path: Path, environ: dict[str, str]) -> dict[str, str]:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    for name, text in (("loginctl", FAKE_LOGINCTL), ("systemctl", FAKE_SYSTEMCTL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {
        **environ,
        "PATH": f"{bin_dir}:{environ['PATH']}",
        "USER": "devboxer",
        "FAKE_LOG": str(tmp_path / "calls.log"),
    }


def volee(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def calls(env: dict[str, str]) -> list[str]:
    path = Path(env["FAKE_LOG"])
    return path.read_text().splitlines() if path.exists() else []


def test_linger_is_turned_on_the_unit_installed_and_started(
    env: dict[str, str], home: Path
) -> None:
    done = volee(env, "daemon", "install", "--linger", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["linger"] == "devboxer"
    assert calls(env) == [
        "loginctl enable-linger devboxer",
        "loginctl show-user devboxer --property=Linger --value",
        "systemctl --user is-enabled volee.service",
        "systemctl --user daemon-reload",
        "systemctl --user enable volee.service",
        # No daemon runs: the unit's, so its agents live in its cgroup, not the session's.
        "systemctl --user start volee.service",
        "systemctl --user is-enabled volee.service",
        "systemctl --user is-active volee.service",
    ]
    unit = home / ".config" / "systemd" / "user" / "volee.service"
    text = unit.read_text()
    assert "KillMode=process" in text  # stopping the daemon leaves its agents' hosts
    assert "WantedBy=default.target" in text  # with linger: at boot, nobody logged in
    checked = verify(unit, env)
    assert checked.returncode == 0, checked.stderr


def test_never_by_default(env: dict[str, str]) -> None:
    done = volee(env, "daemon", "install")
    assert done.returncode == 0, done.stderr
    assert not [c for c in calls(env) if c.startswith("loginctl")]
    assert "systemctl --user start volee.service" not in calls(env)


def test_a_refused_linger_says_the_command_and_installs_nothing(
    env: dict[str, str], home: Path
) -> None:
    env["FAKE_LINGER_REFUSED"] = "Could not enable linger: Interactive authentication required."
    done = volee(env, "daemon", "install", "--linger")
    assert done.returncode != 0
    assert "Interactive authentication required" in done.stderr
    assert "sudo loginctl enable-linger devboxer" in done.stderr
    assert not (home / ".config" / "systemd" / "user" / "volee.service").exists()
    assert not [c for c in calls(env) if c.startswith("systemctl")]


def test_a_login_sessions_scope_is_told_from_a_services_cgroup(tmp_path: Path) -> None:
    def cgroup(pid: int, text: str) -> None:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cgroup").write_text(text)

    cgroup(10, "0::/user.slice/user-1000.slice/session-3.scope\n")
    cgroup(11, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/volee.service\n")
    cgroup(12, "12:pids:/\n1:name=systemd:/user.slice/user-1000.slice/session-c2.scope\n")
    assert session_scope(10, tmp_path) == "/user.slice/user-1000.slice/session-3.scope"
    assert session_scope(11, tmp_path) is None
    assert session_scope(12, tmp_path) == "/user.slice/user-1000.slice/session-c2.scope"
    assert session_scope(99, tmp_path) is None

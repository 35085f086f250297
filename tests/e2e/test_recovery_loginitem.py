"""`volee daemon install|uninstall` and the login item's start, through the real CLI.

The unit itself is rendered and checked by `systemd-analyze --user verify` in
tests/loginitem; here: the CLI in a temporary HOME with no user bus says the service
manager is unreachable and leaves nothing behind; uninstall removes exactly what install
wrote; `daemon status` shows the login item; a daemon started by the login item steps
aside with exit 0 when another one holds the lock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.loginitem import FakeRunner
from volee_desktop.loginitem import SystemdUserUnit
from volee_desktop.loginitem.origin import login_item_start

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd is Linux")


@pytest.fixture
def home() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="vl", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def volee(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "VOLEE_HOME": str(home / "v"),
        "LANG": "C.UTF-8",
    }
    base.update(env)
    return subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        env=base,
        capture_output=True,
        text=True,
        timeout=30,
    )


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="needs systemctl")
def test_install_without_a_user_bus_says_so_and_leaves_nothing(home: Path) -> None:
    before = tree(home)
    done = volee(home, "daemon", "install")
    assert done.returncode == 1
    assert "Your systemd user session is not reachable" in done.stderr
    assert "Nothing was installed" in done.stderr
    assert tree(home) - {"v", *(p for p in tree(home) if p.startswith("v/"))} == before


def test_uninstall_removes_exactly_what_install_wrote(home: Path) -> None:
    environ = {"HOME": str(home), "PATH": os.environ["PATH"], "VOLEE_HOME": str(home / "v")}
    (home / ".config" / "systemd" / "user").mkdir(parents=True)
    (home / ".config" / "systemd" / "user" / "other.service").write_text("[Unit]\n")
    before = tree(home)
    item = SystemdUserUnit(["/usr/bin/volee"], environ, FakeRunner())
    item.install()
    written = tree(home) - before
    assert {".config/systemd/user/volee.service", ".config/autostart/volee.desktop"} <= written
    item.uninstall()
    assert tree(home) == before


def test_daemon_status_shows_the_login_item(home: Path) -> None:
    done = volee(home, "daemon", "status")
    assert done.returncode == 3  # not running
    assert "login item: not installed (`volee daemon install`)" in done.stdout


def test_a_login_item_start_steps_aside_when_volee_already_runs(home: Path) -> None:
    first = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
        env={**os.environ, "VOLEE_HOME": str(home / "v")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        socket = home / "v" / "run" / "volee.sock"
        deadline = time.monotonic() + 15
        while not socket.exists():
            if first.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the first daemon did not start")
            time.sleep(0.05)
        assert socket.exists()
        by_hand = volee(home, "daemon", "run")
        assert by_hand.returncode == 2
        assert "already running" in by_hand.stderr
        at_login = volee(home, "daemon", "run", INVOCATION_ID="0123456789abcdef")
        assert at_login.returncode == 0
        assert "steps aside" in at_login.stderr
    finally:
        first.terminate()
        first.wait(timeout=15)


def test_login_item_start_is_told_by_the_service_manager() -> None:
    assert login_item_start({"INVOCATION_ID": "abc"})
    assert login_item_start({"XPC_SERVICE_NAME": "com.volee.desktop"})
    assert login_item_start({"VOLEE_LOGIN_ITEM": "1"})
    assert not login_item_start({"XPC_SERVICE_NAME": "com.apple.Terminal"})
    assert not login_item_start({})


def test_the_unit_never_restarts_a_daemon_that_found_the_lock_held() -> None:
    text = (Path(__file__).resolve().parents[2] / "systemd" / "volee.service.in").read_text()
    assert "RestartPreventExitStatus=2" in text

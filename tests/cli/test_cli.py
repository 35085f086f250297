"""The `volee` command as a person or a script uses it: real processes, real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "harness" / "samples"


def volee(
    *args: str, stdin: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )


@pytest.fixture
def stop_daemon() -> Iterator[None]:
    yield
    volee("daemon", "stop")


def test_ls_starts_the_daemon_and_prints_json(stop_daemon: None) -> None:
    result = volee("ls", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    status = volee("daemon", "status", "--json")
    assert status.returncode == 0
    data = json.loads(status.stdout)
    assert data["running"] is True
    assert data["seq"] == 0


def test_plain_ls_says_how_to_start_an_agent(stop_daemon: None) -> None:
    result = volee("ls")
    assert result.returncode == 0
    assert "volee spawn" in result.stdout


def test_status_without_a_daemon_says_so_with_a_non_zero_status() -> None:
    result = volee("daemon", "status")
    assert result.returncode == 3
    assert "not running" in result.stdout


def test_a_second_daemon_run_names_the_pid_that_holds_the_lock(stop_daemon: None) -> None:
    volee("ls")
    pid = json.loads(volee("daemon", "status", "--json").stdout)["pid"]
    second = volee("daemon", "run")
    assert second.returncode == 2
    assert f"pid {pid}" in second.stderr
    assert "already running" in second.stderr


def test_an_unknown_agent_is_a_clear_error_on_stderr(stop_daemon: None) -> None:
    result = volee("timeline", "nobody")
    assert result.returncode != 0
    assert result.stdout == ""
    assert "no agent 'nobody'" in result.stderr
    assert "volee ls --all" in result.stderr


def test_hook_without_a_daemon_spools_and_exits_0_then_the_daemon_ingests_it(
    volee_home: Path, stop_daemon: None
) -> None:
    payload = (SAMPLES / "claude-hook-Stop.json").read_text()
    result = volee("hook", "Stop", stdin=payload)
    assert result.returncode == 0
    spooled = list((volee_home / "state" / "spool").glob("*.json"))
    assert len(spooled) == 1
    assert json.loads(spooled[0].read_text())["payload"] == payload
    volee("ls")  # starts the daemon, which ingests the spool
    assert list((volee_home / "state" / "spool").glob("*.json")) == []
    # No agent owns that session: kept aside with the reason, not lost.
    kept = list((volee_home / "state" / "spool" / "rejected").glob("*.json"))
    assert len(kept) == 1
    assert "no agent owns" in json.loads(kept[0].read_text())["reason"]


def test_hook_imports_little() -> None:
    code = (
        "import sys; from volee_desktop.cli import entry; "
        "import io; sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}')); "
        "entry.main(['hook', 'Stop']); "
        "heavy = [m for m in ('asyncio', 'argparse', 'msgspec', 'sqlite3', 'psutil', "
        "'volee_desktop.core', 'volee_desktop.daemon', 'platformdirs') if m in sys.modules]; "
        "print(heavy)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_daemon_stop_leaves_nothing_listening(volee_home: Path) -> None:
    volee("ls")
    result = volee("daemon", "stop")
    assert result.returncode == 0
    assert "stopped" in result.stdout
    assert volee("daemon", "status").returncode == 3


def test_the_lean_hook_path_runs_without_site_and_spools(volee_home: Path) -> None:
    """Agents run the shim file with -I -S (docs/decisions.md D5): stdlib only, env paths."""
    from volee_desktop.daemon.agents.runner import HOOKSHIM

    spool = volee_home / "spool-here"
    payload = (SAMPLES / "claude-hook-Stop.json").read_text()
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(HOOKSHIM), "Stop"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=30,
        env={
            "VOLEE_SOCKET": str(volee_home / "nobody.sock"),
            "VOLEE_SPOOL": str(spool),
            "VOLEE_AGENT": "ag_x",
        },
    )
    assert result.returncode == 0, result.stderr
    (spooled,) = spool.glob("*.json")
    data = json.loads(spooled.read_text())
    assert data["payload"] == payload
    assert data["agent"] == "ag_x"
    assert data["event"] == "Stop"


def test_the_app_without_a_desktop_says_what_to_run_instead() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    result = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", "app"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert result.returncode == 2
    assert "needs a desktop session" in result.stderr
    assert "volee daemon run" in result.stderr


def test_daemon_status_says_how_agents_reach_the_mcp_tools_in_words() -> None:
    from volee_desktop.cli.daemon import part_text

    http = {"url": "http://127.0.0.1:4/mcp/", "moved_from": None, "connections": 2}
    http |= {"requests": 9, "refused": 1}
    assert part_text("mcp_http", http) == (
        "over HTTP at http://127.0.0.1:4/mcp/: 2 connections open, 9 requests, 1 refused"
    )
    moved = part_text("mcp_http", {**http, "moved_from": 3})
    assert moved.endswith(
        "; port 3 was taken: agents started before lost volee's tools until they are resumed"
    )
    assert part_text("mcp", {"sessions": 1, "opened": 4}) == "relays: 1 sessions open (4 opened)"
    assert part_text("discovery", {"state": "on"}) == '{"state": "on"}'
    assert part_text("missions", "0 open") == "0 open"

"""The status-line wrapper (cli/statusline.py) as Claude Code runs it: lean, throttled, and
the person's own status line still shown.

It runs with ``-I -S`` like the hook shim; here the daemon is absent (the socket does not
exist), so what it hands over lands in the spool, where the test reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from volee_desktop.daemon.agents.hosts import STATUSLINE


def claude_input(used: int | None, cost: float = 0.0123) -> bytes:
    """Claude Code 2.1.332's status-line input (the fields volee reads; docs/context.md)."""
    usage = (
        None
        if used is None
        else {
            "input_tokens": used * 2000,
            "output_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
    )
    return json.dumps(
        {
            "session_id": "6a1c0c1e-0000-4000-8000-000000000001",
            "transcript_path": "/home/me/.claude/projects/x/6a1c.jsonl",
            "cwd": "/home/me/project",
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": "/home/me/project", "project_dir": "/home/me/project"},
            "version": "2.1.332",
            "output_style": {"name": "default"},
            "cost": {"total_cost_usd": cost, "total_duration_ms": 1000},
            "context_window": {
                "total_input_tokens": 0 if used is None else used * 2000,
                "total_output_tokens": 12,
                "context_window_size": 200000,
                "current_usage": usage,
                "used_percentage": used,
                "remaining_percentage": None if used is None else 100 - used,
            },
            "exceeds_200k_tokens": False,
        },
        indent=2,
    ).encode()


def run(tmp: Path, data: bytes, own: str | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-I", "-S", str(STATUSLINE), str(tmp / "statusline.last")]
    if own is not None:
        argv.append(own)
    env = {
        "PATH": os.environ["PATH"],
        "VOLEE_AGENT": "ag_test",
        "VOLEE_HARNESS": "claude",
        "VOLEE_SOCKET": str(tmp / "no-daemon.sock"),
        "VOLEE_SPOOL": str(tmp / "spool"),
    }
    return subprocess.run(argv, input=data, capture_output=True, env=env, cwd=tmp, timeout=30)


def spooled(tmp: Path) -> list[dict[str, Any]]:
    spool = tmp / "spool"
    if not spool.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(spool.glob("*.json"))]


def test_the_share_is_handed_over_only_when_it_changes(tmp_path: Path) -> None:
    done = run(tmp_path, claude_input(42))
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""  # no status line of the person's: nothing shown, as before
    [first] = spooled(tmp_path)
    assert first["event"] == "StatusLine"
    assert first["agent"] == "ag_test"
    assert json.loads(first["payload"]) == {
        "session_id": "6a1c0c1e-0000-4000-8000-000000000001",
        "context": 0.42,
        "cost_usd": 0.0123,
    }
    # The same share again (the status line runs on every change of the conversation).
    run(tmp_path, claude_input(42, cost=0.02))
    assert len(spooled(tmp_path)) == 1
    run(tmp_path, claude_input(57, cost=0.03))
    payloads = [json.loads(p["payload"]) for p in spooled(tmp_path)]
    assert [p["context"] for p in payloads] == [0.42, 0.57]
    assert payloads[-1]["cost_usd"] == 0.03


def test_no_call_yet_reads_as_nothing_used(tmp_path: Path) -> None:
    run(tmp_path, claude_input(None))
    [first] = spooled(tmp_path)
    assert json.loads(first["payload"])["context"] == 0.0


def test_the_persons_own_status_line_still_shows(tmp_path: Path) -> None:
    data = claude_input(42)
    own = "cat > seen.json; printf 'main ✓ my line'; exit 3"
    done = run(tmp_path, data, own)
    assert done.stdout.decode() == "main ✓ my line"
    assert done.returncode == 3  # its exit code, as Claude Code would have seen it
    assert (tmp_path / "seen.json").read_bytes() == data  # the same input, untouched
    assert len(spooled(tmp_path)) == 1  # and volee still heard of the share


def test_a_payload_volee_cannot_read_is_handed_over_once_and_changes_nothing_shown(
    tmp_path: Path,
) -> None:
    for data in (b"not json", b'{"context_window": {"used_percentage": "lots"}}', b""):
        done = run(tmp_path, data, "printf mine")
        assert done.stdout == b"mine"
        assert done.returncode == 0
    [bad] = spooled(tmp_path)  # once: the daemon logs it once
    assert bad["payload"] == "not json"
    # A readable one after it is handed over again.
    run(tmp_path, claude_input(10))
    assert len(spooled(tmp_path)) == 2


def test_the_wrapper_imports_no_volee_and_no_site(tmp_path: Path) -> None:
    """It runs on every change of every Claude Code agent's conversation: as lean as the shim."""
    argv = [sys.executable, "-I", "-S", "-X", "importtime", str(STATUSLINE), str(tmp_path / "s")]
    env = {"VOLEE_SOCKET": str(tmp_path / "none.sock"), "VOLEE_SPOOL": str(tmp_path / "spool")}
    done = subprocess.run(
        argv, input=claude_input(30).decode(), capture_output=True, text=True, env=env, timeout=30
    )
    assert done.returncode == 0, done.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "hookshim" in imported
    heavy = {"site", "typing", "re", "json", "subprocess", "enum", "asyncio"}
    assert not {m for m in imported if m.split(".")[0] in heavy or m.startswith("volee")}


def with_plan(data: bytes, five: float, seven: float | None = None) -> bytes:
    """The status-line input of a claude.ai login: ``rate_limits`` (2.1.332's fields)."""
    payload = json.loads(data)
    limits: dict[str, Any] = {"five_hour": {"used_percentage": five, "resets_at": 1796018400}}
    if seven is not None:
        limits["seven_day"] = {"used_percentage": seven, "resets_at": 1796400000}
    payload["rate_limits"] = limits
    return json.dumps(payload).encode()


def test_the_plans_use_is_handed_over_when_it_changes(tmp_path: Path) -> None:
    run(tmp_path, with_plan(claude_input(42), 72, 31))
    [first] = spooled(tmp_path)
    assert json.loads(first["payload"])["plan"] == {
        "five_hour": {"used": 0.72, "resets_at": 1796018400.0},
        "seven_day": {"used": 0.31, "resets_at": 1796400000.0},
    }
    run(tmp_path, with_plan(claude_input(42), 72, 31))  # the same: nothing new
    assert len(spooled(tmp_path)) == 1
    run(tmp_path, with_plan(claude_input(42), 80, 31))  # the share stands still, the plan moves
    payloads = [json.loads(p["payload"]) for p in spooled(tmp_path)]
    assert [p["plan"]["five_hour"]["used"] for p in payloads] == [0.72, 0.8]


def test_an_api_key_reports_no_plan_and_none_is_invented(tmp_path: Path) -> None:
    run(tmp_path, claude_input(42))
    [first] = spooled(tmp_path)
    assert "plan" not in json.loads(first["payload"])

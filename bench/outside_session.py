"""How long a Claude Code session started in a terminal outside volee takes to appear (issue 13:
within 2 s), with no refresh and no interactive client: the session registry's watch alone.

    .venv/bin/python bench/outside_session.py [--runs 3]

The real daemon and the real Claude Code (pinned, against the fake Anthropic server) share a
throwaway HOME; Claude runs in its own PTY.  Printed per run: from its session file appearing
to the agent in the daemon's registry (``agents.list`` polled every 20 ms), and to its end
(``/exit``) being seen; and the daemon's listings meanwhile.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.test_discovery_claude import start_claude  # noqa: E402
from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.harness_env import Sandbox, claude_env, find_harness  # noqa: E402
from volee_desktop.ipc.client import Client  # noqa: E402
from volee_desktop.paths import dirs  # noqa: E402


def poll(check: Any, timeout: float, step: float = 0.02) -> float:
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise SystemExit("timed out")
        time.sleep(step)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    claude = find_harness("claude")
    if claude is None:
        raise SystemExit("the pinned Claude Code is not installed (scripts/install-harnesses)")
    root = Path(tempfile.mkdtemp(prefix="vo", dir="/tmp"))
    sandbox = Sandbox.create(root)
    fake = FakeAnthropic().start()
    env = claude_env(sandbox.home, fake.port, sandbox.project)
    env["VOLEE_HOME"] = str(root / "volee")
    env["VOLEE_CLAUDE_BIN"] = str(claude)
    folders = dirs(env)
    log = (root / "daemon.log").open("w")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def call(method: str, **params: Any) -> Any:
        with Client.connect(folders.socket, timeout=10) as client:
            return client.call(method, **params)

    try:
        poll(lambda: folders.socket.exists(), 20, 0.1)
        time.sleep(2)
        for run in range(args.runs):
            before = call("daemon.status")["extra"]["discovery"]
            program, session = start_claude(sandbox, env, claude)
            # start_claude returns once the session file exists: the clock starts at its
            # first write (its mtime then; Claude rewrites it on status changes).
            written = (sandbox.home / ".claude" / "sessions" / f"{program.proc.pid}.json").stat()
            lag = time.time() - written.st_mtime
            try:

                def listed(session: str = session) -> bool:
                    return any(a["session_id"] == session for a in call("agents.list", all=True))

                found = poll(listed, 20) + lag
                program.type("/exit\r")
                program.proc.wait(timeout=15)
                ended = time.monotonic()

                def stopped(session: str = session) -> bool:
                    return any(
                        a["session_id"] == session and a["state"] == "stopped"
                        for a in call("agents.list", all=True)
                    )

                poll(stopped, 20)
                end_seen = time.monotonic() - ended
            finally:
                program.close()
            after = call("daemon.status")["extra"]["discovery"]
            print(
                f"run {run + 1}: found {found:.2f} s after its session file (target <= 2), "
                f"its end seen {end_seen:.2f} s after it exited; "
                f"{after['listings'] - before['listings']} listings, "
                f"{after['skipped'] - before['skipped']} changes skipped"
            )
        status = call("daemon.status")["extra"]["discovery"]
        print(json.dumps({k: status[k] for k in ("watch", "listings", "changes", "skipped")}))
    finally:
        daemon.terminate()
        daemon.wait(timeout=20)
        fake.close()
        log.close()


if __name__ == "__main__":
    main()

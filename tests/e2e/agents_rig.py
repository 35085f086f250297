"""A real volee daemon as a subprocess, driven through the real ``volee`` CLI.

Used by the end-to-end agent tests (fake and real harnesses): the daemon gets the
environment a person's login would give it (the harness binary, a throwaway HOME), every
command is ``python -m volee_desktop.cli …`` as a separate process, and waiting is on
``volee ls --json`` states with a deadline.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.hosts.launcher import HostClient
from volee_desktop.hosts.records import host_alive, program_alive, read_record
from volee_desktop.ipc.client import Client
from volee_desktop.paths import Dirs, dirs

Agent = dict[str, Any]


class Volee:
    """One VOLEE_HOME with a daemon started on demand, and the CLI to talk to it."""

    def __init__(self, home: Path, env: Mapping[str, str]) -> None:
        self.home = home
        self.env = {**env, "VOLEE_HOME": str(home)}
        self.daemon: subprocess.Popen[bytes] | None = None

    # -- the daemon ------------------------------------------------------------------------

    def start(self, timeout: float = 20) -> None:
        """Run ``volee daemon run`` in the background and wait until it answers."""
        self.home.mkdir(parents=True, exist_ok=True)
        log = open(self.home / "daemon-test.log", "ab")  # noqa: SIM115 - held by the child
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while self.cli("daemon", "status", check=False).returncode != 0:
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the daemon did not start:\n{self.daemon_log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the daemon (hosts live on)."""
        if self.daemon is None:
            return
        self.daemon.send_signal(signal.SIGTERM)
        try:
            self.daemon.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            self.daemon.wait()
        self.daemon = None

    def daemon_log(self) -> str:
        path = self.home / "daemon-test.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else "(no log)"

    def close(self) -> None:
        """Stop the daemon and kill every host and program left behind."""
        self.stop()
        for path in self.dirs.hosts.glob("ag_*.json"):
            record = read_record(path)
            if record is None:
                continue
            try:
                if record.program_pid is not None and program_alive(record):
                    os.killpg(record.program_pid, signal.SIGKILL)
                if host_alive(record):
                    os.kill(record.host_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    # -- the CLI ---------------------------------------------------------------------------

    def cli(
        self, *args: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """Run ``volee ARGS``; fail the test on a non-zero status when ``check``."""
        done = subprocess.run(
            [sys.executable, "-m", "volee_desktop.cli", *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            pytest.fail(
                f"volee {' '.join(args)} exited {done.returncode}: {done.stderr}\n"
                f"daemon log:\n{self.daemon_log()}"
            )
        return done

    def log_to_reply(self, ref: str, timeout: float = 10) -> list[dict[str, Any]]:
        """``volee log REF --json`` once it ends with the agent's reply (or as it is after
        ``timeout``).  A harness may tell its turn's end before the reply is in its
        transcript, which is what ``volee log`` reads: Claude Code 2.1.332 runs Stop first at
        times (CI saw a log end at the tool call once); the next read has the reply."""
        deadline = time.monotonic() + timeout
        while True:
            out = self.cli("log", ref, "--json").stdout
            entries = [json.loads(line) for line in out.splitlines()]
            if (entries and entries[-1]["kind"] == "assistant") or time.monotonic() > deadline:
                return entries
            time.sleep(0.2)

    def agents(self) -> list[Agent]:
        out: list[Agent] = json.loads(self.cli("ls", "--json", "--no-refresh").stdout)
        return out

    def agent(self, ref: str) -> Agent:
        for agent in self.agents():
            if ref in (agent["id"], agent["name"]):
                return agent
        pytest.fail(f"no agent {ref} in volee ls")

    def wait(
        self, ref: str, check: Callable[[Agent], bool], what: str, timeout: float = 20
    ) -> Agent:
        """Poll ``volee ls --json`` until the agent passes ``check``."""
        deadline = time.monotonic() + timeout
        agent: Agent | None = None
        while True:
            agent = next((a for a in self.agents() if ref in (a["id"], a["name"])), None)
            if agent is not None and check(agent):
                return agent
            if time.monotonic() > deadline:
                pytest.fail(
                    f"timed out after {timeout} s waiting for {what}; agent: {agent}\n"
                    f"screen:\n{self._screen_quietly(agent)}\ndaemon log:\n{self.daemon_log()}"
                )
            time.sleep(0.1)

    def _screen_quietly(self, agent: Agent | None) -> str:
        try:
            return self.screen(agent["id"]) if agent else "(no agent)"
        except Exception as exc:  # only for a failure message
            return f"(no screen: {exc})"

    def wait_state(
        self, ref: str, state: str, timeout: float = 20, detail: str | None = None
    ) -> Agent:
        return self.wait(
            ref,
            lambda a: a["state"] == state and (detail is None or a["detail"] == detail),
            f"state {state} {detail or ''}",
            timeout,
        )

    def record(self, agent_id: str) -> dict[str, Any]:
        """The host record of an agent, as written by its host."""
        data: dict[str, Any] = json.loads((self.dirs.hosts / f"{agent_id}.json").read_text())
        return data

    def screen(self, agent_id: str, lines: int = 80) -> str:
        """The agent's recent screen, through the daemon (IPC ``agents.screen``)."""
        with Client.connect(self.dirs.socket, timeout=10) as client:
            reply = client.request("agents.screen", {"agent": agent_id, "lines": lines})
        text: str = reply["text"]
        return text

    def wait_output(self, agent_id: str, needle: str, timeout: float = 15) -> None:
        """Wait until the program has drawn ``needle`` (read from an attached stream, escape
        sequences taken out: a TUI draws words apart with cursor moves)."""
        socket = self.record(agent_id)["socket"]
        seen = b""
        deadline = time.monotonic() + timeout
        with HostClient(socket).open_stream() as stream:
            while True:
                seen += stream.read(0.2)
                text = re.sub(rb"\x1b\[[0-9;?]*[ -/]*[@-~]", b" ", seen).decode(errors="replace")
                if needle in re.sub(r"\s+", " ", text):
                    return
                if time.monotonic() > deadline or stream.closed:
                    pytest.fail(f"{needle!r} was not drawn; output: {text[-2000:]}")

    @property
    def dirs(self) -> Dirs:
        return dirs(self.env)

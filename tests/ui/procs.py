"""Child processes for the app's process-level tests: start, wait for a log line, stop."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


class Proc:
    """A child whose stdout+stderr lines are collected by a thread (never blocks the test)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.argv = argv
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.popen = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._seen = 0

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_line(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        """The first line (not matched before) that matches ``pattern``."""
        rx = re.compile(pattern)
        for line in self.lines[self._seen :]:
            self._seen += 1
            if m := rx.search(line):
                return m
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no line matching {pattern!r} within {timeout}s; output:\n" + self.output()
                )
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(
                    f"{self.argv[1:]} ended ({self.popen.wait()}) before {pattern!r}; output:\n"
                    + self.output()
                )
            self.lines.append(line)
            self._seen = len(self.lines)
            if m := rx.search(line):
                return m

    def output(self) -> str:
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return "\n".join(self.lines[-80:])

    def wait(self, timeout: float = 15.0) -> int:
        """Wait for the child to end by itself; its exit status."""
        code = self.popen.wait(timeout)
        self._close()
        return code

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            code = self.popen.wait(timeout)
            self._close()
            return code
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
            raise AssertionError(
                f"{self.argv[1:]} did not stop on {sig}:\n{self.output()}"
            ) from None

    def kill(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self._close()

    def _close(self) -> None:
        self._reader.join(5)
        if self.popen.stdout is not None and not self.popen.stdout.closed:
            self.popen.stdout.close()


def app(mode: str, env: dict[str, str]) -> Proc:
    return Proc([sys.executable, str(HERE / "app_for_test.py"), mode], env)


def daemon(env: dict[str, str]) -> Proc:
    return Proc([sys.executable, str(HERE.parent / "fakes" / "fake_daemon.py")], env)


def child_env(home: Path, **extra: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.update({"VOLEE_HOME": str(home), "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"})
    env.update(extra)
    return env

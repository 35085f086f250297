"""What every command group of ``volee`` shares: errors, the daemon connection, JSON output.

The groups (``agents``, ``daemon``, ``missions``) import this module and nothing of each
other; ``main`` assembles them into one parser.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TextIO

from ..core.model import DEFAULT_HARNESS, Harness
from ..ipc.client import Client
from ..ipc.protocol import DaemonUnavailable
from ..paths import Dirs, dirs, ensure_private_dir

START_TIMEOUT = 20.0
#: ``--harness``: the profiles volee knows, and the one it uses when none is named.
HARNESS_CHOICES = [str(h) for h in Harness]
HARNESS_DEFAULT = str(DEFAULT_HARNESS)
#: What a command that had to start the daemon says on stderr (`volee app` joins that daemon).
STARTED_HEADLESS = "volee: started the daemon (no tray): `volee app` for the tray"
ALREADY_RUNNING = 2  # `volee daemon run`'s status when another daemon holds the lock


class Commands(Protocol):
    """Where a command group adds its commands: what ``add_subparsers()`` returns."""

    def add_parser(self, name: str, *, help: str | None = ...) -> argparse.ArgumentParser: ...


class CliError(Exception):
    """A failure to report on stderr with a non-zero exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# --- talking to the daemon --------------------------------------------------------------------


def connect(folders: Dirs, *, start: bool = True, timeout: float = 30.0) -> Client:
    """A client of this user's daemon, starting the daemon first if none runs."""
    try:
        return Client.connect(folders.socket, timeout=timeout)
    except DaemonUnavailable:
        if not start:
            raise
    start_daemon(folders)
    # Said once, by the command that started it: a daemon with no tray icon is otherwise
    # a process nobody sees (after Quit, the next `volee ls` started one quietly).
    print(STARTED_HEADLESS, file=sys.stderr)
    return Client.connect(folders.socket, timeout=timeout)


def _spawn_daemon(log_path: Path) -> subprocess.Popen[bytes]:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )


def start_daemon(folders: Dirs) -> None:
    """Start the headless daemon detached from this terminal and wait until it serves."""
    from ..pidlock import is_held

    ensure_private_dir(folders.logs)
    log_path = folders.logs / "daemon.log"
    proc = _spawn_daemon(log_path)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            Client.connect(folders.socket, timeout=2.0).close()
            return
        except DaemonUnavailable:
            pass
        code = proc.poll()
        if code is not None and code != ALREADY_RUNNING:
            tail = _tail(log_path)
            raise CliError(f"the volee daemon could not start (exit {code}):\n{tail}", 3)
        # exit ALREADY_RUNNING: another daemon won the race; wait for it to serve. If that one
        # was stopping and let go of the lock without serving, nobody else starts one: we do.
        if code == ALREADY_RUNNING and not is_held(folders.daemon_lock):
            proc = _spawn_daemon(log_path)
        time.sleep(0.05)
    raise CliError(f"the volee daemon did not answer within {START_TIMEOUT:.0f} s; see {log_path}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def call(args: argparse.Namespace, method: str, **params: Any) -> Any:
    """Call a daemon method, starting the daemon if needed."""
    with connect(dirs()) as client:
        return client.request(method, params)


def emit_json(value: Any) -> None:
    """Print JSON for scripts."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def created(args: argparse.Namespace, method: str, params: dict[str, Any]) -> int:
    """Call a method that creates something (unset parameters left out); print its id.

    With ``--json``, the whole view of what was created instead.
    """
    made = call(args, method, **{k: v for k, v in params.items() if v is not None})
    if args.json:
        emit_json(made)
    else:
        print(made["id"])
    return 0


PROGRESS_AFTER = 2.0  # seconds: what takes longer says so on stderr


@contextlib.contextmanager
def progress(
    what: str, after: float = PROGRESS_AFTER, stream: TextIO | None = None
) -> Iterator[None]:
    """Say on stderr that ``what`` is still going once it takes longer than ``after`` s."""
    out = stream if stream is not None else sys.stderr
    done = threading.Event()

    def tell() -> None:
        waited = after
        if done.wait(after):
            return
        print(f"volee: {what}…", file=out, flush=True)
        while not done.wait(10.0):
            waited += 10.0
            print(f"volee: still {what} ({waited:.0f} s)", file=out, flush=True)

    teller = threading.Thread(target=tell, name="volee-progress", daemon=True)
    teller.start()
    try:
        yield
    finally:
        done.set()
        teller.join(1.0)

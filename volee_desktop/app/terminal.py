"""Opening an agent in the person's terminal emulator: pure argv builders and a launcher.

``volee attach AGENT`` is what runs inside the terminal.  Which terminal:
``$TERMINAL``, then ``x-terminal-emulator`` (Debian's alternative), then
``gnome-terminal``, ``konsole``, ``xterm``; on macOS Terminal.app through
``open -a Terminal`` on a small ``.command`` script (``open`` passes no
arguments to a shell).  ``None`` means no terminal was found: the app then shows
the agent's recent output instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

Which = Callable[[str], str | None]

# How each known emulator is told to run a command (the rest of argv).
_RUN_FLAGS: dict[str, tuple[str, ...]] = {
    "gnome-terminal": ("--",),
    "kgx": ("--",),
    "konsole": ("-e",),
    "xterm": ("-e",),
    "x-terminal-emulator": ("-e",),
    "alacritty": ("-e",),
    "kitty": (),
    "wezterm": ("start", "--"),
    "foot": (),
    "xfce4-terminal": ("-x",),
}
_FALLBACKS = ("x-terminal-emulator", "gnome-terminal", "konsole", "xterm")


def volee_command(which: Which = shutil.which) -> list[str]:
    """The argv prefix that runs ``volee`` (the script beside this Python, or on PATH)."""
    beside = Path(sys.executable).parent / "volee"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = which("volee")
    if found:
        return [found]
    return [sys.executable, "-m", "volee_desktop.cli.entry"]


def attach_command(agent_id: str, volee: Sequence[str]) -> list[str]:
    """What runs inside the terminal to attach to the agent's PTY."""
    return [*volee, "attach", agent_id]


def terminal_argv(
    command: Sequence[str],
    environ: Mapping[str, str],
    which: Which = shutil.which,
    platform: str = sys.platform,
) -> list[str] | None:
    """The argv that opens a terminal running ``command``; None when there is none (or macOS)."""
    if platform == "darwin":
        return None  # see mac_script: Terminal.app takes a script, not an argv
    configured = environ.get("TERMINAL", "").strip()
    if configured:
        words = shlex.split(configured)
        if words and which(words[0]):
            base = Path(words[0]).name
            flags = _RUN_FLAGS.get(base, ("-e",)) if len(words) == 1 else ()
            return [*words, *flags, *command]
    for name in _FALLBACKS:
        path = which(name)
        if path:
            return [path, *_RUN_FLAGS[name], *command]
    return None


def mac_script(command: Sequence[str], folder: Path) -> tuple[Path, list[str]]:
    """A ``.command`` script running ``command`` and the argv that opens it in Terminal.app."""
    fd, name = tempfile.mkstemp(prefix="volee-attach-", suffix=".command", dir=folder)
    with os.fdopen(fd, "w") as fh:
        fh.write("#!/bin/sh\nexec " + shlex.join(command) + "\n")
    os.chmod(name, 0o700)
    return Path(name), ["open", "-a", "Terminal", name]


def open_in_terminal(agent_id: str, environ: Mapping[str, str] | None = None) -> list[str] | None:
    """Start a terminal attached to the agent; the argv started, or None (no terminal)."""
    env = dict(os.environ if environ is None else environ)
    command = attach_command(agent_id, volee_command())
    if sys.platform == "darwin":
        from volee_desktop.paths import dirs

        folder = dirs(env).runtime
        folder.mkdir(parents=True, exist_ok=True)
        _, argv = mac_script(command, folder)
    else:
        found = terminal_argv(command, env)
        if found is None:
            return None
        argv = found
    # Its own session: closing the app must not close the person's terminal.
    subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return argv

"""``for_this_platform``: the login item that fits the running OS, wired to the real OS calls."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .base import LoginItem, find_volee_command
from .launchd import LaunchdAgent
from .null import NullLoginItem
from .system import RunKeyStore, Runner, SubprocessRunner, WinRegRunKeyStore, current_uid
from .systemd import SystemdUserUnit
from .windows import WindowsRunKey

__all__ = ["for_this_platform"]


def for_this_platform(
    *,
    command: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
    run_keys: RunKeyStore | None = None,
    platform: str | None = None,
    uid: int | None = None,
    logs_dir: Path | None = None,
) -> LoginItem:
    """The login item for ``platform`` (default: this one); every argument has a real default.

    ``command`` is the absolute argv prefix that runs volee (found next to this
    Python or on PATH when not given); ``environ`` supplies HOME,
    XDG_CONFIG_HOME, PATH and VOLEE_HOME.
    """
    env = dict(os.environ if environ is None else environ)
    name = sys.platform if platform is None else platform
    if not (name.startswith("linux") or name in ("darwin", "win32")):
        return NullLoginItem(name)
    argv = tuple(command) if command is not None else find_volee_command(env)
    run = runner if runner is not None else SubprocessRunner()
    if name.startswith("linux"):
        return SystemdUserUnit(argv, env, run)
    if name == "darwin":
        if logs_dir is None:
            from volee_desktop.paths import dirs

            logs_dir = dirs(env).logs
        return LaunchdAgent(argv, env, run, current_uid() if uid is None else uid, logs_dir)
    return WindowsRunKey(argv, run_keys if run_keys is not None else WinRegRunKeyStore())

"""The one seam between login items and the operating system: commands and the registry.

Each service-manager call is a pure argv, run by a Runner, read by a pure
parser (the vorta/maestral split), so tests swap in a typed fake Runner (see
``tests/fakes/loginitem.py``) and production runs real processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "RUN_KEY",
    "RunKeyStore",
    "RunResult",
    "Runner",
    "SubprocessRunner",
    "WinRegRunKeyStore",
]

# HKEY_CURRENT_USER\<RUN_KEY>: programs Windows starts when this user logs on.
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
# Task Manager's "Startup apps" switch for the same entries (a REG_BINARY per name).
STARTUP_APPROVED_KEY = r"Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run"

# A service manager that does not answer within this is treated as unreachable.
DEFAULT_TIMEOUT = 20.0


@dataclass(frozen=True)
class RunResult:
    """How a command ended: its status and what it printed."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def output(self) -> str:
        """stderr and stdout joined, stripped: what to quote in a message."""
        return "\n".join(part.strip() for part in (self.stderr, self.stdout) if part.strip())


class Runner(Protocol):
    """Runs a command and reports how it ended; never raises for a failing command."""

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], timeout: float = DEFAULT_TIMEOUT
    ) -> RunResult: ...


class SubprocessRunner:
    """The real Runner: a child process, its output captured as text."""

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], timeout: float = DEFAULT_TIMEOUT
    ) -> RunResult:
        try:
            done = subprocess.run(
                list(argv),
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            # 127 is what a shell says for "command not found".
            return RunResult(127, "", f"{argv[0]}: command not found")
        except subprocess.TimeoutExpired:
            return RunResult(124, "", f"{argv[0]} did not answer within {timeout:g} s")
        except OSError as exc:
            return RunResult(126, "", f"{argv[0]}: {exc}")
        return RunResult(done.returncode, done.stdout, done.stderr)


class RunKeyStore(Protocol):
    """String values under one HKEY_CURRENT_USER key (the Run key)."""

    def get(self, key: str, name: str) -> str | bytes | None:
        """The value ``name`` under ``key``, or None when either is missing."""
        ...

    def set(self, key: str, name: str, value: str) -> None:
        """Create or replace ``name`` as a REG_SZ; OSError on failure."""
        ...

    def delete(self, key: str, name: str) -> bool:
        """Remove ``name``; False when it was not there; OSError on failure."""
        ...


class WinRegRunKeyStore:
    """The real registry of the current user, through winreg (Windows only)."""

    def get(self, key: str, name: str) -> str | bytes | None:
        if sys.platform != "win32":
            return None
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, key) as handle:
                value, _kind = winreg.QueryValueEx(handle, name)
        except FileNotFoundError:
            return None
        return value if isinstance(value, str | bytes) else str(value)

    def set(self, key: str, name: str, value: str) -> None:
        if sys.platform != "win32":
            raise OSError("the Windows registry exists only on Windows")
        import winreg

        with winreg.CreateKeyEx(winreg.HKEY_CURRENT_USER, key, 0, winreg.KEY_SET_VALUE) as handle:
            winreg.SetValueEx(handle, name, 0, winreg.REG_SZ, value)

    def delete(self, key: str, name: str) -> bool:
        if sys.platform != "win32":
            return False
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, key, 0, winreg.KEY_SET_VALUE) as handle:
                winreg.DeleteValue(handle, name)
        except FileNotFoundError:
            return False
        return True


def current_uid() -> int:
    """This user's id (for ``gui/<uid>``); 0 where the OS has none."""
    getuid = getattr(os, "getuid", None)
    return int(getuid()) if getuid is not None else 0

"""Windows: a value under the current user's Run key, which Windows runs at logon.

The Run key runs in the person's desktop session only, so it starts the tray,
which embeds the daemon.  It cannot set environment variables: the tray sees
the user's own PATH (from the registry, as a new terminal would); a VOLEE_HOME
set while installing is not carried over.  Task Manager's "Startup apps"
switch lives in a separate StartupApproved value that Windows owns: status
reads it, install and uninstall leave it alone.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from .base import LoginItemError, LoginItemStatus
from .system import RUN_KEY, STARTUP_APPROVED_KEY, RunKeyStore

__all__ = ["WindowsRunKey"]

VALUE_NAME = "volee"


class WindowsRunKey:
    """``HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\volee`` = ``"<volee>" app``."""

    def __init__(self, command: Sequence[str], store: RunKeyStore, name: str = VALUE_NAME) -> None:
        self._command = tuple(command)
        self._store = store
        self._name = name
        self.location = f"HKEY_CURRENT_USER\\{RUN_KEY}\\{name}"

    def render(self) -> str:
        """The command line Windows runs at logon (quoted the way Windows splits it)."""
        return subprocess.list2cmdline([*self._command, "app"])

    def install(self) -> None:
        """Set the Run value (one registry write: there is nothing half-written to undo)."""
        try:
            self._store.set(RUN_KEY, self._name, self.render())
        except OSError as exc:
            raise LoginItemError(
                "Could not make volee start at login",
                f"Writing {self.location} failed: {exc}. Nothing was installed.",
            ) from exc

    def uninstall(self) -> None:
        """Delete the Run value; a missing one is fine."""
        try:
            self._store.delete(RUN_KEY, self._name)
        except OSError as exc:
            raise LoginItemError(
                "Could not remove the login item",
                f"Deleting {self.location} failed: {exc}. Remove it with regedit.",
            ) from exc

    def status(self) -> LoginItemStatus:
        """Installed (the value), enabled (not switched off in Task Manager)."""
        stored = self._store.get(RUN_KEY, self._name)
        if stored is None:
            return LoginItemStatus(False, False, self.location, "not installed")
        approved = self._store.get(STARTUP_APPROVED_KEY, self._name)
        # Windows writes 02 00.. when allowed and 03 00.. when switched off; absent means allowed.
        enabled = not (isinstance(approved, bytes) and approved[:1] and approved[0] & 1)
        value = stored if isinstance(stored, str) else stored.decode("utf-16-le", "replace")
        parts = [f"runs {value}" if enabled else "switched off in Task Manager → Startup apps"]
        if value != self.render():
            parts.append("written by another volee: run `volee daemon install` to update it")
        return LoginItemStatus(True, enabled, self.location, "; ".join(parts))

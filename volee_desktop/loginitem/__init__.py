"""Login items: systemd user unit, launchd agent, Windows Run key; installed only when asked.

ADR 0024: ``volee daemon install`` (and the tray's "Start at login") registers
volee to start at login; nothing else writes these files and volee never does
it unasked.  ``for_this_platform()`` picks the item; each has ``render``,
``install``, ``uninstall`` and ``status``.  See docs/login-item.md.
"""

from __future__ import annotations

from .base import LoginItem, LoginItemError, LoginItemStatus, find_volee_command
from .launchd import LaunchdAgent
from .null import NullLoginItem
from .platforms import for_this_platform
from .system import RunKeyStore, Runner, RunResult, SubprocessRunner, WinRegRunKeyStore
from .systemd import SystemdUserUnit
from .windows import WindowsRunKey

__all__ = [
    "LaunchdAgent",
    "LoginItem",
    "LoginItemError",
    "LoginItemStatus",
    "NullLoginItem",
    "RunKeyStore",
    "RunResult",
    "Runner",
    "SubprocessRunner",
    "SystemdUserUnit",
    "WinRegRunKeyStore",
    "WindowsRunKey",
    "find_volee_command",
    "for_this_platform",
]

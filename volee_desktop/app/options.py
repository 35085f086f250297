"""The seams of the app (``AppOptions``): what tests replace, the real things by default (a
terminal to attach in, the login item, the notification sinks, the dialogs' questions and
errors, the clock, the tray, the list's remembered settings)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from .focus import Focused, bring_forward
from .notifier import NotificationSink
from .traywatch import TrayWatcher

if TYPE_CHECKING:
    from volee_desktop.loginitem.base import LoginItem

log = logging.getLogger(__name__)


TerminalOpener = Callable[[str], "list[str] | None"]
Confirm = Callable[[str, str], bool]
ShowError = Callable[[str, str], None]


def _default_terminal(agent_id: str) -> list[str] | None:
    from .terminal import open_in_terminal

    return open_in_terminal(agent_id)


def _default_login_item() -> LoginItem:
    from volee_desktop.loginitem import for_this_platform

    return for_this_platform()


def default_list_prefs() -> Path | None:
    from volee_desktop import paths

    try:
        return paths.state_dir() / "list.json"
    except Exception as exc:  # the list works without its remembered settings
        log.warning("the list's settings will not be kept: %s", exc)
        return None


@dataclass
class AppOptions:
    """The seams of the app (tests replace them; the defaults are the real things)."""

    config_path: Path
    terminal: TerminalOpener = _default_terminal
    login_item: Callable[[], LoginItem] | None = _default_login_item
    sinks: list[NotificationSink] | None = None  # None: desktop-notifier, then the balloon
    confirm: Confirm | None = None
    show_error: ShowError | None = None
    clock: Callable[[], float] = time.time
    use_tray: bool | None = None  # None: when the system has a tray (and watch for one)
    tray_watcher: Callable[[QObject], TrayWatcher] | None = None  # None: the real one
    screen_lines: int = 200
    focus: Callable[[int | None], Focused] = bring_forward  # Open on an agent in its own terminal
    list_prefs: Path | None = None  # the list's size, position and modes (None: state/list.json)

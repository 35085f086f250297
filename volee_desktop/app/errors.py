"""The tray app's exceptions.

Exceptions::

    Error                 root of every error the app raises on purpose
    ├── AlreadyRunning    another tray app of this user holds the lock
    ├── LinkError         the daemon could not be reached or answered with an error
    └── DesktopEntryError the menu entry or icon could not be installed (desktopentry)
"""

from __future__ import annotations

from volee_desktop.pidlock import Held


class Error(Exception):
    """Root of the app's errors; ``title`` is a short headline for dialogs."""

    title = "volee"


class AlreadyRunning(Error, Held):
    """Another tray app of this user holds the app lock."""

    title = "volee is already running"

    def explain(self, who: str, lock: str) -> str:
        return (
            f"the volee tray app already runs for this user ({who}, lock {lock}); "
            "use its icon in the tray, or quit it first"
        )


class LinkError(Error):
    """A call to the daemon failed; the message says which call and why."""

    title = "The volee daemon did not do it"

"""Can this process show desktop notifications? desktop-notifier's answer, without Qt.

On macOS, outside an app bundle, desktop-notifier picks its ``DummyNotificationCenter``: every
notification is dropped while ``send`` reports success, so volee would never fall back to the
tray's balloon. ``problem()`` says so beforehand; the app then uses the tray's own message
(``QSystemTrayIcon.showMessage``) and shows the reason in its settings, and
``volee daemon status`` prints it (both run as the same user on the same machine).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

DUMMY = "DummyNotificationCenter"


def _backend_name() -> str:
    from desktop_notifier.main import get_backend_class

    return str(get_backend_class().__name__)


def problem(backend: Callable[[], str] = _backend_name, platform: str = sys.platform) -> str | None:
    """Why desktop notifications cannot be shown here, or None when they can."""
    try:
        name = backend()
    except Exception as exc:  # an import or platform failure inside desktop-notifier
        return f"desktop-notifier cannot start here ({exc})"
    if name != DUMMY:
        return None
    if platform == "darwin":
        return (
            "macOS shows notifications only for an app with a bundle id, and this volee runs "
            "outside one: install volee.app (installers/macos) to get them; meanwhile volee "
            "uses the tray's own messages"
        )
    return f"desktop-notifier has no notification backend on {platform}"

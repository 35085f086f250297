"""Platforms volee cannot register with: installing says so, status says "not installed"."""

from __future__ import annotations

from .base import LoginItemError, LoginItemStatus

__all__ = ["NullLoginItem"]


class NullLoginItem:
    """The login item of a platform without one (a BSD, an unknown OS)."""

    def __init__(self, platform: str) -> None:
        self._platform = platform

    def render(self) -> str:
        return ""

    def install(self) -> None:
        raise LoginItemError(
            "Start at login is not available here",
            f"volee can start at login on Linux (systemd), macOS and Windows, not on "
            f"{self._platform}. Start volee yourself, for example from your session's "
            "startup programs (`volee`, or `volee daemon run` without a desktop).",
        )

    def uninstall(self) -> None:
        return None  # nothing was ever installed

    def status(self) -> LoginItemStatus:
        return LoginItemStatus(False, None, "", f"not available on {self._platform}")

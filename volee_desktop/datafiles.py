"""The files volee ships beside its code: tray icons, the pi extension, login item templates.

Their source of truth is the checkout's top-level ``resources/``, ``systemd/`` and
``launchd/`` folders; ``setup.py`` copies them into the wheel as
``volee_desktop/_data/<folder>/`` (an editable install uses the checkout's folders directly),
so every lookup tries the packaged copy first and then the checkout.
"""

from __future__ import annotations

from pathlib import Path

# The top-level folders that a built wheel carries (setup.py keeps the same list).
FOLDERS = ("resources", "systemd", "launchd")
PACKAGE = Path(__file__).resolve().parent
PACKAGED = PACKAGE / "_data"
CHECKOUT = PACKAGE.parent


def candidates(folder: str, *parts: str) -> tuple[Path, Path]:
    """Where ``folder/parts…`` may be: inside the installed package, then in a source checkout."""
    if folder not in FOLDERS:
        raise ValueError(f"unknown data folder {folder!r}: expected one of {', '.join(FOLDERS)}")
    return (PACKAGED.joinpath(folder, *parts), CHECKOUT.joinpath(folder, *parts))


def find(folder: str, *parts: str) -> Path | None:
    """The shipped file ``folder/parts…``, or None when this installation lacks it."""
    for candidate in candidates(folder, *parts):
        if candidate.is_file():
            return candidate
    return None

"""What every login item shares: the protocol, its status, its error, and careful file writes.

Exceptions::

    LoginItemError     root: install/uninstall failed; carries a title and a message
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import datafiles
from ..atomicfile import write_atomic

__all__ = [
    "ENVIRONMENT_KEYS",
    "LoginItem",
    "LoginItemError",
    "LoginItemStatus",
    "captured_environment",
    "find_volee_command",
    "template_path",
]

# What the login item must see as the person saw it when they asked for it:
# the harnesses (claude, codex, pi) are found on PATH, which a service manager
# does not share with the login shell; VOLEE_HOME moves every folder.
ENVIRONMENT_KEYS = ("PATH", "VOLEE_HOME")


class LoginItemError(Exception):
    """Installing or removing the login item failed; ``title`` and ``message`` are for people."""

    def __init__(self, title: str, message: str) -> None:
        super().__init__(f"{title}: {message}")
        self.title = title
        self.message = message


@dataclass(frozen=True)
class LoginItemStatus:
    """Whether volee starts at login: the file is there, and the service manager has it enabled.

    ``enabled`` is None when the service manager could not be asked.
    """

    installed: bool
    enabled: bool | None
    path: str
    detail: str


class LoginItem(Protocol):
    """One platform's way to start volee at login."""

    def render(self) -> str | bytes:
        """The file (or registry value) that install writes, without writing it."""
        ...

    def install(self) -> None:
        """Write the item and enable it; on failure leave nothing behind, raise LoginItemError."""
        ...

    def uninstall(self) -> None:
        """Disable and remove exactly what install wrote; nothing to remove is not an error."""
        ...

    def status(self) -> LoginItemStatus:
        """Whether the item is installed and enabled, for ``volee daemon status`` and the tray."""
        ...


def captured_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ENVIRONMENT_KEYS that are set, to be written into the login item."""
    return {key: environ[key] for key in ENVIRONMENT_KEYS if environ.get(key)}


def find_volee_command(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The absolute argv prefix that runs ``volee``: the script next to this Python, or on PATH."""
    env = os.environ if environ is None else environ
    name = "volee.exe" if sys.platform == "win32" else "volee"
    # The script installed with this interpreter is the one matching this code.
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return (str(beside.absolute()),)
    found = shutil.which("volee", path=env.get("PATH"))
    if found:
        return (str(Path(found).absolute()),)
    raise LoginItemError(
        "volee was not found",
        f"No volee command next to {sys.executable} nor on PATH, so a login item would "
        "start nothing. Install volee (pip install volee-desktop) and try again.",
    )


def template_path(folder: str, name: str) -> Path:
    """A template from the top-level ``systemd/`` or ``launchd/`` folder (or its packaged copy)."""
    found = datafiles.find(folder, name)
    if found is not None:
        return found
    raise LoginItemError(
        "volee is incomplete",
        f"The login item template {folder}/{name} is missing from this installation; "
        "reinstall volee.",
    )


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data``: a crash leaves the old file or the new one, never half."""
    write_atomic(path, data, mode)


class FileSet:
    """The files one install writes, remembered so that a failed install can put them back.

    It also removes the folders it had to create, so that an install that fails
    (or an uninstall) leaves the person's tree as it found it.
    """

    def __init__(self) -> None:
        self._previous: dict[Path, bytes | None] = {}
        self._created_dirs: list[Path] = []

    def write(self, path: Path, data: bytes, mode: int = 0o644) -> None:
        """Write ``path`` atomically, remembering what was there before."""
        if path not in self._previous:
            try:
                self._previous[path] = path.read_bytes()
            except FileNotFoundError:
                self._previous[path] = None
        missing: list[Path] = []
        parent = path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        atomic_write(path, data, mode)
        self._created_dirs.extend(missing)

    def make_dir(self, folder: Path) -> None:
        """Create ``folder`` (and parents), remembering the ones that were missing."""
        missing: list[Path] = []
        current = folder
        while not current.exists():
            missing.append(current)
            current = current.parent
        folder.mkdir(parents=True, exist_ok=True)
        self._created_dirs.extend(missing)

    def roll_back(self) -> None:
        """Put every written file back as it was, and remove the folders this set created."""
        for path, old in self._previous.items():
            try:
                if old is None:
                    path.unlink(missing_ok=True)
                else:
                    atomic_write(path, old)
            except OSError:
                continue  # best effort: the error being reported matters more
        # Deepest first: a folder made by a later write may sit inside one made earlier.
        for folder in sorted(self._created_dirs, key=lambda p: len(p.parts), reverse=True):
            try:
                folder.rmdir()
            except OSError:
                continue
        self._previous.clear()
        self._created_dirs.clear()


def remove_file(path: Path, stop_at: Path) -> bool:
    """Remove ``path`` and then its parent folders that became empty, up to ``stop_at``."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    prune_empty_parents(path.parent, stop_at)
    return True


def prune_empty_parents(folder: Path, stop_at: Path) -> None:
    """Remove ``folder`` and its parents while empty, never ``stop_at`` or anything above it."""
    stop = stop_at.absolute()
    current = folder.absolute()
    while current != stop and stop in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent


def describe_command(argv: Sequence[str]) -> str:
    """``systemctl --user enable volee.service`` for messages."""
    return " ".join(argv)

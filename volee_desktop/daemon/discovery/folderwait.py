"""How a folder watch waits for a folder that is not there yet (both watches: watches.py
and daemon/discovery/inotify.py): through its nearest existing ancestor, one level at a time."""

from __future__ import annotations

from pathlib import Path


def nearest_existing(path: Path) -> Path | None:
    """``path`` or its nearest ancestor that is a folder (None: nothing exists, not even /)."""
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return None


def on_the_way(changed: Path, target: Path) -> bool:
    """Whether ``changed`` is ``target`` or one of the folders it is in."""
    return changed == target or changed in target.parents


__all__ = ["nearest_existing", "on_the_way"]

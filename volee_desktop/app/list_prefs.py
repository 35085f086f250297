"""What the person chose for the list, kept across starts: size, position, modes, the pin.

A small JSON file in volee's state folder (``list.json``).  A file that is missing,
unreadable or not what volee wrote gives the defaults; saving never raises (the list
works the same, it only forgets).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from volee_desktop.atomicfile import write_atomic

log = logging.getLogger(__name__)

DEFAULT_SIZE = (600, 720)  # compact mode shows 25+ agents in it


@dataclass
class ListPrefs:
    size: tuple[int, int] = DEFAULT_SIZE
    pos: tuple[int, int] | None = None  # None: next to the tray icon
    compact: bool = False
    grouping: str = "none"
    folded: list[str] = field(default_factory=list)
    pinned: bool = False  # "keep open": a plain window that stays until it is closed

    @classmethod
    def load(cls, path: Path | None) -> ListPrefs:
        if path is None:
            return cls()
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            log.warning("the list's settings in %s are unreadable (%s): defaults", path, exc)
            return cls()
        prefs = cls()
        if not isinstance(data, dict):
            return prefs
        size, pos = _pair(data.get("size")), _pair(data.get("pos"))
        if size is not None and min(size) >= 200:
            prefs.size = size
        if pos is not None:
            prefs.pos = pos
        if isinstance(data.get("compact"), bool):
            prefs.compact = data["compact"]
        if isinstance(data.get("pinned"), bool):
            prefs.pinned = data["pinned"]
        if data.get("grouping") in ("none", "state", "project"):
            prefs.grouping = data["grouping"]
        folded = data.get("folded")
        if isinstance(folded, list):
            prefs.folded = [f for f in folded if isinstance(f, str)][:500]
        return prefs

    def save(self, path: Path | None) -> None:
        if path is None:
            return
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(data, indent=1).encode())
        except OSError as exc:
            log.warning("could not keep the list's settings in %s: %s", path, exc)


def _pair(value: object) -> tuple[int, int] | None:
    """Two whole numbers as JSON wrote them (a size, a position), else None."""
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 100_000 for v in value)
    ):
        return (value[0], value[1])
    return None

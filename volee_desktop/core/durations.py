"""Durations as people read them: one formatter for the CLI, the tray and recovery reasons."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """A short human duration: "12 s", "3 min", "2 h 5 min", "3 d" (negative reads as 0 s)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    return f"{s // 86400} d"

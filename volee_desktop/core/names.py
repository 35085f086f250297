"""Agent names: unique among the agents volee knows, by a ``-2``, ``-3``… suffix."""

from __future__ import annotations

from collections.abc import Iterable

from .model import Agent


def unique_name(base: str, agents: Iterable[Agent]) -> str:
    """``base``, or ``base-2``, ``base-3``… if taken."""
    names = {a.name for a in agents}
    if base not in names:
        return base
    n = 2
    while f"{base}-{n}" in names:
        n += 1
    return f"{base}-{n}"

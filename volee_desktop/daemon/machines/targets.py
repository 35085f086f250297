"""Which machine an agent's or a mission's reference names: ``NAME:REF``, or a reference that
only one machine's copy resolves (one rule for agents and missions; docs/machines.md)."""

from __future__ import annotations

from collections.abc import Callable

from ...core.registry import Registry
from ..errors import Ambiguous, NotFound
from .link import MachineLink

#: Resolves a reference in a registry to its id (raises NotFound or Ambiguous).
Resolve = Callable[[Registry, str], str]


def find_target(
    links: dict[str, MachineLink],
    here: Registry,
    ref: str,
    resolve: Resolve,
    *,
    things: str,
    hint: str,
) -> tuple[MachineLink, str] | None:
    """The other machine ``ref`` is on and its id there; None: this machine's (or nowhere
    known, which this machine's handler then says). ``things`` ("agents", "missions") and
    ``hint`` word the refusal of a reference that several machines resolve."""
    name, sep, rest = ref.partition(":")
    if sep and name in links:
        link = links[name]
        try:
            if link.registry is not None:
                return link, resolve(link.registry, rest)
        except NotFound:
            pass
        # Not in our copy (never reached yet, or just made there): its daemon resolves it.
        return link, rest
    found: list[tuple[MachineLink | None, str]] = []
    try:
        found.append((None, resolve(here, ref)))
    except NotFound:
        pass
    for link in links.values():
        if link.registry is None:
            continue
        try:
            found.append((link, resolve(link.registry, ref)))
        except (NotFound, Ambiguous):
            continue
    if len(found) > 1:
        where = ", ".join(f"{link.name}:{ref}" if link else f"{ref} here" for link, _ in found)
        raise Ambiguous(f"{ref!r} names {things} on {len(found)} machines ({where}); {hint}")
    if found:
        there, thing = found[0]
        if there is not None:
            return there, thing
    return None

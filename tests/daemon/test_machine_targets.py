"""Which machine a reference names (daemon/machines/targets.py): the rule agents and missions
share."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from volee_desktop.daemon.errors import Ambiguous, NotFound
from volee_desktop.daemon.machines.targets import find_target


def resolve(registry: Any, ref: str) -> str:
    """A registry here is a set of names; the id is the name with its registry's mark."""
    if ref not in registry:
        raise NotFound(f"no {ref}")
    return f"{ref}@{registry.mark}"


class Names(set[str]):
    def __init__(self, mark: str, *names: str) -> None:
        super().__init__(names)
        self.mark = mark


def hit(there: dict[str, Any], here: Names, ref: str) -> tuple[str, str]:
    found = find_target(there, here, ref, resolve, things="agents", hint="h")
    assert found is not None
    return found[0].name, found[1]


def links(**machines: Names | None) -> dict[str, Any]:
    return {name: SimpleNamespace(name=name, registry=reg) for name, reg in machines.items()}


def test_a_prefixed_reference_goes_to_that_machine_even_before_its_copy_knows_it() -> None:
    there = links(devbox=Names("d", "a"), gpu=None)
    here = Names("h", "a")
    assert hit(there, here, "devbox:a") == ("devbox", "a@d")
    assert hit(there, here, "devbox:new") == ("devbox", "new")
    assert hit(there, here, "gpu:x") == ("gpu", "x")


def test_a_plain_reference_unique_across_machines_needs_no_prefix() -> None:
    there = links(devbox=Names("d", "b"), gpu=None)
    here = Names("h", "a")
    assert find_target(there, here, "a", resolve, things="agents", hint="h") is None
    assert hit(there, here, "b") == ("devbox", "b@d")
    assert find_target(there, here, "zz", resolve, things="agents", hint="h") is None


def test_a_reference_two_machines_resolve_is_refused_naming_both() -> None:
    there = links(devbox=Names("d", "a"))
    with pytest.raises(Ambiguous) as refused:
        find_target(there, Names("h", "a"), "a", resolve, things="missions", hint="say which")
    assert str(refused.value) == ("'a' names missions on 2 machines (a here, devbox:a); say which")

"""Agent names stay unique: the spawn, missions and discovery all name through one function."""

from __future__ import annotations

from volee_desktop.core import reconcile
from volee_desktop.core.names import unique_name

from .support import A1, A2, given, registered


def test_a_free_name_is_kept_and_a_taken_one_gets_the_next_suffix() -> None:
    registry = given(registered(A1, name="fix"), registered(A2, name="fix-2"))
    agents = list(registry.agents.values())
    assert unique_name("docs", agents) == "docs"
    assert unique_name("fix", agents) == "fix-3"
    assert unique_name("fix-2", agents) == "fix-2-2"


def test_discovery_names_through_the_same_function() -> None:
    assert reconcile.unique_name is unique_name

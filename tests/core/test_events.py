"""Events: each has a stable type name and a schema version, and the registry handles each."""

from __future__ import annotations

import dataclasses

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core import fold, validation
from volee_desktop.core.registry import Registry

from .support import T0


def test_every_event_has_a_unique_type_and_a_version() -> None:
    types = [cls.TYPE for cls in ev.EVENT_CLASSES]
    assert all(types), "an event without a TYPE"
    assert len(set(types)) == len(types)
    assert all(t == t.lower() and " " not in t for t in types)
    assert all(isinstance(cls.VERSION, int) and cls.VERSION >= 1 for cls in ev.EVENT_CLASSES)
    assert {cls.TYPE: cls for cls in ev.EVENT_CLASSES} == ev.EVENT_TYPES


def test_every_event_class_is_listed() -> None:
    defined = {
        obj
        for obj in vars(ev).values()
        if isinstance(obj, type)
        and issubclass(obj, ev.Event)
        and obj not in (ev.Event, ev.AgentEvent)
    }
    assert defined == set(ev.EVENT_CLASSES)


def test_the_registry_validates_and_applies_every_event() -> None:
    assert set(validation.VALIDATORS) == set(ev.EVENT_CLASSES)
    assert set(fold.APPLIERS) == set(ev.EVENT_CLASSES)


def test_events_are_frozen() -> None:
    event = ev.AgentForgotten(at=T0, agent="ag_x")
    assert dataclasses.is_dataclass(event)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.at = 0.0  # type: ignore[misc]


def test_an_unknown_event_type_is_refused() -> None:
    class Stray(ev.Event):
        TYPE = "stray"

    reason = Registry().validate(Stray(at=T0))
    assert reason is not None
    assert "Stray" in reason

"""Domain events and registry snapshots <-> bytes (msgspec JSON), with upcasters on read.

Stored events are never rewritten: a record keeps the schema version it was
written with, and ``decode_event`` upcasts older versions step by step to the
current class before building it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..core.events import EVENT_TYPES, Event
from ..core.registry import Registry
from .errors import StoreError

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

#: (event type, version it reads) -> function returning the fields at version + 1.
UPCASTERS: dict[tuple[str, int], Upcaster] = {}

SNAPSHOT_VERSION = 1

_encoder = msgspec.json.Encoder()
_decoders: dict[str, msgspec.json.Decoder[Any]] = {
    name: msgspec.json.Decoder(cls) for name, cls in EVENT_TYPES.items()
}
_registry_decoder = msgspec.json.Decoder(Registry)


class CodecError(StoreError, ValueError):
    """A record that cannot be turned back into an event."""


def encode_event(event: Event) -> tuple[str, int, bytes]:
    """The (type, version, payload) to store for an event."""
    return event.TYPE, event.VERSION, _encoder.encode(event)


def decode_event(type_name: str, version: int, payload: bytes) -> Event:
    """The event of a stored record, upcast to the current schema."""
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise CodecError(f"unknown event type {type_name!r}")
    try:
        if version == cls.VERSION:
            event: Event = _decoders[type_name].decode(payload)
            return event
        if version > cls.VERSION:
            raise CodecError(
                f"{type_name} version {version} is newer than this volee knows "
                f"({cls.VERSION}); upgrade volee"
            )
        fields: dict[str, Any] = msgspec.json.decode(payload)
        for step in range(version, cls.VERSION):
            upcast = UPCASTERS.get((type_name, step))
            if upcast is None:
                raise CodecError(f"no upcaster for {type_name} version {step}")
            fields = upcast(fields)
        upcasted: Event = msgspec.convert(fields, cls)
        return upcasted
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CodecError(f"{type_name} v{version}: {exc}") from exc


def event_to_dict(event: Event) -> dict[str, Any]:
    """An event as JSON-ready data with its ``type`` (for IPC and ``--json`` output)."""
    data: dict[str, Any] = msgspec.to_builtins(event)
    data["type"] = event.TYPE
    return data


def event_from_dict(data: dict[str, Any]) -> Event:
    """The inverse of ``event_to_dict`` (current schema only)."""
    fields = dict(data)
    name = fields.pop("type", None)
    cls = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise CodecError(f"unknown event type {name!r}")
    try:
        event: Event = msgspec.convert(fields, cls)
    except msgspec.ValidationError as exc:
        raise CodecError(f"{name}: {exc}") from exc
    return event


def encode_registry(registry: Registry) -> bytes:
    """A snapshot of the registry."""
    return _encoder.encode(registry)


def decode_registry(blob: bytes) -> Registry:
    """The registry of a snapshot."""
    try:
        registry: Registry = _registry_decoder.decode(blob)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CodecError(f"snapshot: {exc}") from exc
    return registry


def to_builtins(value: Any) -> Any:
    """Any domain value (entity, enum, tuple) as plain JSON-ready data."""
    return msgspec.to_builtins(value)

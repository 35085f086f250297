"""The host socket's framing: one kind byte, a 4-byte big-endian length, then the payload.

Kinds: ``J`` a JSON object (requests, replies, events), ``O`` program output (host to
client), ``I`` keyboard input (client to host).  Stdlib only and tiny: the host imports it.
"""

from __future__ import annotations

import struct

from volee_desktop import lean

from .errors import Error

JSON = b"J"
OUTPUT = b"O"
INPUT = b"I"
KINDS = (JSON, OUTPUT, INPUT)

_HEADER = struct.Struct(">cI")
HEADER_SIZE = _HEADER.size
# A request or an output chunk is small; anything bigger is a confused or hostile peer.
MAX_FRAME = 16 * 1024 * 1024


class FrameError(Error, ValueError):
    """A peer sent bytes that are not a valid frame."""


def frame(kind: bytes, payload: bytes) -> bytes:
    """Encode one frame."""
    return _HEADER.pack(kind, len(payload)) + payload


def json_frame(obj: dict[str, object]) -> bytes:
    """Encode one JSON frame."""
    return frame(JSON, lean.dumps(obj, separators=(",", ":")).encode())


class FrameReader:
    """Turns a byte stream into frames; feed it what recv() returned."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        """Add bytes; return the (kind, payload) frames now complete."""
        self._buf += data
        frames: list[tuple[bytes, bytes]] = []
        while len(self._buf) >= HEADER_SIZE:
            kind, size = _HEADER.unpack_from(self._buf)
            if kind not in KINDS:
                raise FrameError(f"unknown frame kind {kind!r}")
            if size > MAX_FRAME:
                raise FrameError(f"frame of {size} bytes is over the {MAX_FRAME} limit")
            end = HEADER_SIZE + size
            if len(self._buf) < end:
                break
            frames.append((kind, bytes(self._buf[HEADER_SIZE:end])))
            del self._buf[:end]
        return frames


def decode_json(payload: bytes) -> dict[str, object]:
    """Decode a JSON frame's payload, which must be an object."""
    try:
        obj = lean.loads(payload)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the limit
        raise FrameError(f"bad JSON frame: {exc}") from exc
    if not isinstance(obj, dict):
        raise FrameError(f"a JSON frame must hold an object, not {type(obj).__name__}")
    return obj

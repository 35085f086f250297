"""A fixed-size ring of the host's recent output (the scrollback).  Stdlib only."""

from __future__ import annotations


class Ring:
    """The last ``size`` bytes of output, in one buffer that never moves or grows.

    A fixed buffer (pages touched only as output arrives) instead of a growing bytearray:
    reallocations left the host's heap fragmented, a few hundred KiB per host.
    """

    __slots__ = ("buf", "filled", "pos")

    def __init__(self, size: int) -> None:
        self.buf = bytearray(size)
        self.pos = 0
        self.filled = 0

    def __len__(self) -> int:
        return self.filled

    def write(self, data: bytes) -> None:
        """Append ``data``, forgetting the oldest bytes past the size."""
        cap = len(self.buf)
        view = memoryview(data)[-cap:]
        first = min(len(view), cap - self.pos)
        self.buf[self.pos : self.pos + first] = view[:first]
        rest = len(view) - first
        if rest:
            self.buf[:rest] = view[first:]
        self.pos = (self.pos + len(view)) % cap
        self.filled = min(self.filled + len(view), cap)

    def tail(self, count: int) -> bytes:
        """The last ``count`` bytes (fewer if less was written)."""
        count = min(count, self.filled)
        start = self.pos - count
        if start >= 0:
            return bytes(self.buf[start : self.pos])
        return bytes(self.buf[start:]) + bytes(self.buf[: self.pos])

"""A fake connected socket that reports a peer's credentials (``SO_PEERCRED``)."""

from __future__ import annotations

import struct


class FakeSock:
    """Says the peer at the other end runs as ``uid``."""

    def __init__(self, uid: int) -> None:
        self.uid = uid

    def getsockopt(self, level: int, optname: int, buflen: int, /) -> bytes:
        return struct.pack("3i", 4242, self.uid, self.uid)

    def fileno(self) -> int:
        return -1

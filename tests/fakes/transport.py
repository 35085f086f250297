"""An asyncio transport that records what a protocol writes and whether it closed it
(``tests/daemon/test_watch_protocol.py``)."""

from __future__ import annotations

import asyncio
from typing import Any


class FakeTransport(asyncio.Transport):
    def __init__(self, seen: list[Any]) -> None:
        super().__init__()
        self.seen = seen
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.seen.append(("wrote", bytes(data)))

    def close(self) -> None:
        self.closed = True
        self.seen.append("close")

    def is_closing(self) -> bool:
        return self.closed

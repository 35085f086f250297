"""Fresh ids for the daemon: the clock and randomness the pure core is not allowed to read."""

from __future__ import annotations

import os
import time
import uuid

from ..core.ids import new_id


def fresh(prefix: str) -> str:
    """A new prefixed ULID (``ag_``, ``ms_``, ``th_``, ``msg_``)."""
    return new_id(prefix, int(time.time() * 1000), os.urandom(10))


def session_uuid() -> str:
    """A new session id for harnesses that let volee choose it (Claude Code)."""
    return str(uuid.uuid4())

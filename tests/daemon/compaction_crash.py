"""Child process of test_compaction_live: a daemon that compacts its log by itself and is
killed (``os._exit``, no cleanup) between two of the compaction's chunks.

Usage: python -m tests.daemon.compaction_crash EXPECTED   (under the test's VOLEE_HOME)

Commits ``EVENTS`` events (an agent and its old activity), writes the registry they made to
EXPECTED (the state every acknowledged event made), then waits: the periodic snapshot at the
last event starts a compaction, and its second chunk kills the process before it is written.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.daemon.test_compaction_live import EVENTS, old_activity, small_rule
from tests.fakes.clock import FakeClock
from volee_desktop.daemon.main import Daemon
from volee_desktop.paths import dirs
from volee_desktop.store import compaction as store
from volee_desktop.store.codec import encode_registry


async def main(expected: Path) -> None:
    small_rule(lambda target, name, value: setattr(target, name, value))
    real_drop = store.drop
    chunks = 0

    def drop(conn: Any, seqs: Any) -> int:
        nonlocal chunks
        chunks += 1
        if chunks == 2:
            os._exit(9)  # killed between the first chunk (committed) and the second
        return real_drop(conn, seqs)

    store.drop = drop
    clock = FakeClock(start=time.time())
    d = await Daemon.start(dirs(), serve=False, clock=clock)
    for event in old_activity(clock.now(), EVENTS):
        await d.service.commit([event])
    expected.write_bytes(encode_registry(d.service.registry))
    await asyncio.sleep(60)  # the compaction kills us long before
    sys.exit("the compaction never reached its second chunk")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))

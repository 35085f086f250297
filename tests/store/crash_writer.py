"""Child process of test_crash: appends with several writers and prints what was acknowledged.

Usage: python crash_writer.py DB RUN WRITERS

Prints ``ready`` once the log is open, then one line per acknowledged append,
``<writer> <n> <seq> <seq>...``, written and flushed only after ``append``
returned (the records are durable).  Record i of append n of writer w of run
RUN has the payload ``RUN:w:n:i``.  Runs until killed.
"""

from __future__ import annotations

import asyncio
import sys

from volee_desktop.store import EventLog, Record


async def main(path: str, run: str, writers: int) -> None:
    log = EventLog.open(path)
    out = sys.stdout
    out.write("ready\n")
    out.flush()

    async def writer(w: int) -> None:
        n = 0
        while True:
            records = [
                Record("crash-test", 1, f"{run}:{w}:{n}:{i}".encode()) for i in range(1 + n % 3)
            ]
            key = f"{run}:{w}:{n}" if n % 4 == 0 else None
            seqs = await log.append(records, key)
            out.write(f"{w} {n} {' '.join(map(str, seqs))}\n")
            out.flush()
            if w == 0 and n % 25 == 24:
                await log.save_snapshot(seqs[-1], 1, f"{run}:snapshot:{seqs[-1]}".encode())
            n += 1

    await asyncio.gather(*(writer(w) for w in range(writers)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))

"""What grew between two tracemalloc snapshots of the soak (bench/soak.py --tracemalloc DIR).

    .venv/bin/python bench/memtrace/compare.py DIR [--role daemon|app] [--first N] [--top 25]

For each process of the role (the daemon has one per run between kills): the traced total,
RSS and glibc's heap (arena + mmap, in use) at each snapshot, then the allocations that grew
most, by traceback, from snapshot ``--first`` (after the warm-up) to the last one.  A leak
grows the traced total with RSS; RSS growing alone is the allocator keeping freed memory.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from collections import defaultdict
from pathlib import Path

MIB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--role", default="daemon")
    parser.add_argument("--first", type=int, default=2)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--frames", type=int, default=6)
    args = parser.parse_args()
    by_pid: dict[str, list[Path]] = defaultdict(list)
    for meta in sorted(args.folder.glob(f"{args.role}-*.json")):
        by_pid[meta.stem.split("-")[1]].append(meta)
    for pid, metas in by_pid.items():
        print(f"== {args.role} {pid}: {len(metas)} snapshots")
        for meta in metas:
            m = json.loads(meta.read_text())
            info = m.get("mallinfo", {})
            heap = (info.get("arena", 0) + info.get("hblkhd", 0)) / MIB
            used = (info.get("uordblks", 0) + info.get("hblkhd", 0)) / MIB
            print(
                f"  {meta.stem}: rss {m['rss'] / MIB:6.1f}  traced {m['traced'] / MIB:6.1f}  "
                f"main-arena heap {heap:6.1f} (in use {used:6.1f})"
                + (
                    f"  rss after malloc_trim {m['rss_trimmed'] / MIB:6.1f}"
                    if "rss_trimmed" in m
                    else ""
                )
            )
        if len(metas) <= args.first or not metas[-1].with_suffix(".snap").exists():
            continue
        old = tracemalloc.Snapshot.load(str(metas[args.first].with_suffix(".snap")))
        new = tracemalloc.Snapshot.load(str(metas[-1].with_suffix(".snap")))
        print(f"  grew from {metas[args.first].stem} to {metas[-1].stem}:")
        for stat in new.compare_to(old, "traceback")[: args.top]:
            if stat.size_diff <= 0:
                continue
            print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
            for line in stat.traceback.format(limit=args.frames, most_recent_first=True):
                print(
                    f"      {line.strip()}"
                    if not line.startswith("    ")
                    else f"        {line.strip()}"
                )


if __name__ == "__main__":
    main()

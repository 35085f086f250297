"""Parsing a long transcript: 5,000 entries of a real Claude Code 2.1.332 session, and 10 MB.

    .venv/bin/python bench/transcript.py [--entries 5000] [--rounds 5]

The conversation lines of tests/harness/transcripts/claude-2.1.332.jsonl (prompts, tool calls
and their results, replies, with Claude Code's metadata lines between them) are repeated with
fresh ids until the parser sees ``--entries`` entries, written to a file, then read the way the
daemon reads it (daemon/missions/transcripts.py: in 1 MiB chunks, in a thread off the loop).
Printed,
median of ``--rounds``: the file's size, the whole read and parse, the largest single chunk's
parse (what a reader thread holds the GIL for at most, in one go), and the catch-up after 100
lines were appended (what each later ``volee log`` or turn end costs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from volee_desktop.core.model import Harness  # noqa: E402
from volee_desktop.daemon.missions.transcripts import CHUNK, Followed  # noqa: E402
from volee_desktop.harness.transcript import Splitter  # noqa: E402
from volee_desktop.harness.transcripts import parse, parser_for  # noqa: E402

SAMPLE = ROOT / "tests" / "harness" / "transcripts" / "claude-2.1.332.jsonl"


def _lines(entries: int) -> list[str]:
    sample = SAMPLE.read_text(encoding="utf-8").splitlines()
    per_round = len(parse(Harness.CLAUDE, "\n".join(sample) + "\n").entries)
    out: list[str] = []
    for _ in range(entries // per_round + 1):
        ids = {}
        for line in sample:
            data = json.loads(line)
            for key in ("uuid", "parentUuid"):
                if isinstance(data.get(key), str):
                    data[key] = ids.setdefault(data[key], str(uuid.uuid4()))
            out.append(json.dumps(data, separators=(",", ":")))  # as Claude Code writes
    return out


def _parse_chunks(path: Path) -> tuple[float, float, int]:
    parser = parser_for(Harness.CLAUDE)
    assert parser is not None
    splitter = Splitter()
    longest = 0.0
    began = time.perf_counter()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            t = time.perf_counter()
            parser.feed(splitter.push(chunk))
            longest = max(longest, time.perf_counter() - t)
    return time.perf_counter() - began, longest, len(parser.entries)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    lines = _lines(args.entries)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        size = path.stat().st_size
        whole, longest, catch = [], [], []
        count = 0
        for _ in range(args.rounds):
            seconds, chunk, count = _parse_chunks(path)
            whole.append(seconds)
            longest.append(chunk)
            parser = parser_for(Harness.CLAUDE)
            assert parser is not None
            followed = Followed(path, parser)
            followed.catch_up()
            with path.open("a", encoding="utf-8") as f:
                f.write("\n".join(lines[:100]) + "\n")
            t = time.perf_counter()
            followed.catch_up()
            catch.append(time.perf_counter() - t)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"transcript: {count} entries, {len(lines)} lines, {size / 1e6:.1f} MB")
        print(f"read and parse (1 MiB chunks): {statistics.median(whole) * 1000:.0f} ms")
        print(f"largest chunk's parse: {statistics.median(longest) * 1000:.1f} ms")
        print(f"catch-up after 100 appended lines: {statistics.median(catch) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

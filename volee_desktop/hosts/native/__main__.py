"""``python -m volee_desktop.hosts.native build [--sanitize] [--out PATH]``: build the native host.

``status`` says whether the launcher would use it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from volee_desktop.hosts.native import BINARY, NativeBuildError, binary, build


def main(argv: list[str] | None = None) -> int:
    """Build the native host, or say whether it is built."""
    parser = argparse.ArgumentParser(prog="python -m volee_desktop.hosts.native")
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("build", help="compile volee_host.c")
    make.add_argument("--out", type=Path, default=BINARY, help=f"where (default {BINARY})")
    make.add_argument(
        "--sanitize", action="store_true", help="with AddressSanitizer and UBSan (tests)"
    )
    sub.add_parser("status", help="say whether a fresh native host is built")
    args = parser.parse_args(argv)
    if args.command == "status":
        found = binary()
        print(found if found is not None else "not built (or older than its source)")
        return 0 if found is not None else 1
    try:
        out = build(args.out, sanitize=args.sanitize)
    except NativeBuildError as exc:
        print(f"cannot build the native host: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

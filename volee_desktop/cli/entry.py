"""The ``volee`` console script: a tiny dispatcher so that ``volee hook`` stays fast."""

from __future__ import annotations

import sys

WINDOWS_REFUSAL = (
    "volee: not supported on Windows yet; it runs under WSL "
    "(install it inside your WSL distribution: pipx install volee-desktop)"
)


def main(argv: list[str] | None = None) -> int:
    """Run ``volee``; ``volee hook``, ``volee bridge`` and ``volee mcp`` take fast paths
    importing almost nothing."""
    if sys.platform == "win32":
        # The daemon, the hosts and the hooks need POSIX (PTYs, Unix sockets, fork):
        # say so here instead of failing deep inside.
        print(WINDOWS_REFUSAL, file=sys.stderr)
        return 1
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from volee_desktop.cli import hookshim

        return hookshim.main(args[1:])
    if args[:1] == ["bridge"]:
        from volee_desktop.cli import bridge

        return bridge.main(args[1:])
    if args[:1] == ["mcp"]:
        from volee_desktop.mcp import relay

        return relay.main(args[1:])
    _keep_compiled()
    from volee_desktop.cli import main as cli

    return cli.main(args)


def _keep_compiled() -> None:
    """The dataclasses' methods compiled once and reused (``dcache``): before anything with a
    dataclass is imported, and what this run compiled kept at its end (the daemon keeps its
    own a moment after it starts)."""
    import atexit

    from volee_desktop import dcache
    from volee_desktop.paths import state_dir

    dcache.install(str(state_dir()))
    atexit.register(dcache.save)


if __name__ == "__main__":
    raise SystemExit(main())

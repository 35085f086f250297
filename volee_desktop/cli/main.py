"""The ``volee`` command (CLI contract in docs/architecture: stable for people and scripts).

The parser is assembled here, group by group: ``volee app``, then the agents, the
daemon and the missions.  ``entry`` sends ``volee hook`` to the lean shim before any
of this is imported.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..ipc.protocol import DaemonUnavailable, IpcError
from . import agents, answers, daemon, desktop, missions
from .common import CliError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``volee``, every command group in it."""
    parser = argparse.ArgumentParser(
        prog="volee",
        description="Supervise the coding agents you run on your own machine.",
    )
    parser.add_argument(
        "--version", action="version", version=f"volee {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("app", help="run the tray app in the foreground")
    p.set_defaults(func=_dispatch_app)
    daemon.add_commands(sub)
    agents.add_commands(sub)
    answers.add_commands(sub)
    p = sub.add_parser("hook", help="(harness hooks call this) forward a hook payload")
    p.add_argument("event", metavar="EVENT")
    missions.add_commands(sub)
    desktop.add_commands(sub)
    return parser


def _dispatch_app(args: argparse.Namespace) -> int:
    problem = no_desktop(dict(os.environ), sys.platform)
    if problem:
        raise CliError(problem, 2)
    from ..app.main import run_app

    return run_app(["volee"])  # argv[0]: the windows' WM_CLASS, matched to volee.desktop


def no_desktop(env: dict[str, str], platform: str) -> str | None:
    """Why the tray app cannot open here (Linux without a display), or None."""
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return (
        "the tray app needs a desktop session, and this one has none (no DISPLAY or "
        "WAYLAND_DISPLAY). Without a desktop, run the daemon alone: `volee daemon run` "
        "(`volee daemon install` starts it at login); `volee ls` and the other commands work."
    )


def main(argv: list[str]) -> int:
    """Run ``volee`` with ``argv``; returns the exit status."""
    parser = build_parser()
    if not argv:
        argv = ["app"]
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        status: int = func(args)
        return status
    except CliError as exc:
        print(f"volee: {exc}", file=sys.stderr)
        return exc.status
    except DaemonUnavailable as exc:
        print(f"volee: the daemon is not reachable: {exc}", file=sys.stderr)
        return 3
    except IpcError as exc:
        print(f"volee: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `volee ls | head`: the reader left; say nothing more (and not at exit either).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0

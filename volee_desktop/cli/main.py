"""The ``volee`` command (CLI contract in docs/architecture: stable for people and scripts).

The parser is assembled here, group by group: ``volee app``, then the agents, the
daemon and the missions.  ``entry`` sends ``volee hook`` to the lean shim before any
of this is imported.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..ipc.protocol import DaemonUnavailable, IpcError
from .common import CliError, emit_json

if TYPE_CHECKING:
    from .conventions import VoleeParser


def build_parser() -> VoleeParser:
    """The argument parser of ``volee``, every command group in it (imported here: ``volee
    app`` alone does not need them, main())."""
    from . import agents, answers, conventions, daemon, desktop, machines, missions, settings
    from .review import add_commands as add_review_commands

    parser = conventions.VoleeParser(
        prog="volee",
        description="Supervise the coding agents you run on your own machine.",
    )
    parser.add_argument(
        "--version", action="version", version=f"volee {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("app", help="run the tray app in the foreground")
    p.add_argument(
        "--no-daemon",
        action="store_true",
        help="no volee daemon on this machine: show the agents of the machines of "
        "`volee machine ls` only (always so on Windows; docs/machines.md)",
    )
    p.set_defaults(func=_dispatch_app)
    daemon.add_commands(sub)
    agents.add_commands(sub)
    answers.add_commands(sub)
    add_review_commands(sub)
    p = sub.add_parser("hook", help="(harness hooks call this) forward a hook payload")
    p.add_argument("event", metavar="EVENT")
    missions.add_commands(sub)
    desktop.add_commands(sub)
    machines.add_commands(sub)
    machines.add_machine_option(parser)
    settings.add_commands(sub)
    conventions.finish(parser, sub)
    return parser


def _dispatch_app(args: argparse.Namespace) -> int:
    problem = no_desktop(dict(os.environ), sys.platform)
    if problem:
        raise CliError(problem, 2)
    from ..app.main import run_app

    # No daemon can run on Windows (PTYs, hooks): there the agents are a WSL machine's.
    local = not getattr(args, "no_daemon", False) and sys.platform != "win32"
    # argv[0]: the windows' WM_CLASS, matched to volee.desktop
    return run_app(["volee"], local_daemon=local)


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


def bad_volee_home(value: str | None) -> str | None:
    """Why ``VOLEE_HOME`` cannot hold volee's folders, or None."""
    if not value:
        return None
    home = Path(value).expanduser()
    if home.exists() and not home.is_dir():
        return (
            f"VOLEE_HOME={value} is a file, not a folder: point VOLEE_HOME at a folder "
            "(volee creates it) or unset it to use the usual places"
        )
    return None


def _failed(args: argparse.Namespace, message: str, status: int, code: str) -> int:
    """Report a failure on stderr; with ``--json``, also as an error object on stdout."""
    print(f"volee: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        emit_json({"error": {"code": str(code), "message": message, "status": status}})
    return status


def main(argv: list[str]) -> int:
    """Run ``volee`` with ``argv``; returns the exit status."""
    target: Callable[[argparse.Namespace], None] | None = None
    if argv in ([], ["app"], ["app", "--no-daemon"]):
        # `volee app` alone (the login item, the menu entry): what to run is known without
        # the parser, and building it imports every command group (issue 27: start-up).
        args = argparse.Namespace(
            command="app", func=_dispatch_app, no_daemon="--no-daemon" in argv
        )
    else:
        from .machines import target

        parser = build_parser()
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return 2
    func = args.func
    try:
        home_problem = bad_volee_home(os.environ.get("VOLEE_HOME"))
        if home_problem:
            raise CliError(home_problem, 2)
        if target is not None:
            target(args)
        status: int = func(args)
        return status
    except CliError as exc:
        return _failed(args, str(exc), exc.status, "refused")
    except DaemonUnavailable as exc:
        return _failed(args, f"the daemon is not reachable: {exc}", 3, "unavailable")
    except IpcError as exc:
        return _failed(args, str(exc), 1, getattr(exc, "code", "error"))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `volee ls | head`: the reader left; say nothing more (and not at exit either).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:  # after BrokenPipeError, one of its kind
        # A folder volee needs cannot be made or written (permissions, a full disk, a file
        # in the way): say which, without a traceback.
        where = f" ({exc.filename})" if exc.filename else ""
        return _failed(args, f"{exc.strerror or exc}{where}", 1, "os-error")

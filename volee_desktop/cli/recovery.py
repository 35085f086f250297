"""``volee daemon install|uninstall`` (the login item, ADR 0024) and its line in ``daemon status``.

volee never installs the login item unasked: only these commands (and the
tray's "Start at login") do.  A daemon started by the login item steps aside
quietly (exit 0) when another volee already holds the lock, so the service
manager does not restart it in a loop (``login_item_start``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

#: Set to 1 by whoever starts volee at login, so the daemon knows a person did not.
LOGIN_ITEM_ENV = "VOLEE_LOGIN_ITEM"


def _daemon_actions(parser: argparse.ArgumentParser) -> Any:
    """The ``volee daemon`` sub-command table of ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            daemon = action.choices.get("daemon")
            if daemon is None:
                break
            for inner in daemon._actions:
                if isinstance(inner, argparse._SubParsersAction):
                    return inner
    raise RuntimeError("volee's parser has no `daemon` command to extend")


def extend(parser: argparse.ArgumentParser) -> None:
    """Add ``daemon install`` and ``daemon uninstall`` to ``parser``."""
    actions = _daemon_actions(parser)
    for name, func, helptext in (
        ("install", cmd_daemon_install, "start volee at login (systemd/launchd/Run key)"),
        ("uninstall", cmd_daemon_uninstall, "stop starting volee at login"),
    ):
        p = actions.add_parser(name, help=helptext)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=func)


def _item() -> Any:
    from ..loginitem import for_this_platform

    return for_this_platform()


def cmd_daemon_install(args: argparse.Namespace) -> int:
    from ..loginitem import LoginItemError
    from .commands import CliError, emit_json

    try:
        item = _item()
        fresh = _missing_folders(item)
        try:
            item.install()
        except LoginItemError:
            _remove_if_empty(fresh)
            raise
        status = item.status()
    except LoginItemError as exc:
        raise CliError(f"{exc.title}. {exc.message}") from exc
    if args.json:
        emit_json({"installed": True, "path": status.path, "summary": status.detail})
    else:
        print(f"volee will start at login ({status.path}): {status.detail}")
        print("agents interrupted by a restart come back without opening volee")
    return 0


def _missing_folders(item: Any) -> list[Path]:
    """The item's config folder and its parents that do not exist yet (a failed install
    must leave nothing behind, not even an empty ``~/.config``)."""
    home = getattr(item, "config_home", None)
    missing: list[Path] = []
    current = Path(home) if home is not None else None
    while current is not None and not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    for folder in folders:  # deepest first
        try:
            folder.rmdir()
        except OSError:
            return


def cmd_daemon_uninstall(args: argparse.Namespace) -> int:
    from ..loginitem import LoginItemError
    from .commands import CliError, emit_json

    try:
        item = _item()
        item.uninstall()
        status = item.status()
    except LoginItemError as exc:
        raise CliError(f"{exc.title}. {exc.message}") from exc
    if args.json:
        emit_json({"installed": status.installed, "path": status.path})
    else:
        print("volee no longer starts at login (a running volee keeps running)")
    return 0


def login_status_summary() -> dict[str, Any]:
    """The login item's state for ``volee daemon status``: a dict with a ``summary`` string."""
    from ..loginitem import LoginItemError

    try:
        status = _item().status()
    except LoginItemError as exc:
        return {"installed": False, "enabled": None, "summary": f"unknown ({exc.message})"}
    summary = status.detail if status.installed else "not installed (`volee daemon install`)"
    return {
        "installed": status.installed,
        "enabled": status.enabled,
        "path": status.path,
        "summary": summary,
    }


def login_item_start(environ: dict[str, str] | None = None) -> bool:
    """Whether this process was started by a service manager (the login item) rather than a person.

    systemd sets ``INVOCATION_ID`` for every unit it runs; launchd sets
    ``XPC_SERVICE_NAME`` to the job's label; ``VOLEE_LOGIN_ITEM=1`` says so explicitly.
    """
    env = os.environ if environ is None else environ
    return (
        env.get(LOGIN_ITEM_ENV) == "1"
        or bool(env.get("INVOCATION_ID"))
        or env.get("XPC_SERVICE_NAME", "").startswith("com.volee.")
    )


def already_running_message(exc: Exception) -> str:
    """What a login-item start says when it steps aside for the volee that already runs."""
    return f"volee: {exc}; started at login, this one steps aside (exit 0)"

"""``volee desktop-entry install|uninstall``: the menu entry and the icon for this user.

For a wheel installed with pipx or uv (the .deb installs them system-wide): the files go
under ``$XDG_DATA_HOME`` (``~/.local/share``), and uninstall removes exactly those. Neither
touches the login item (ADR 0024).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .common import CliError, Commands, emit_json


def add_commands(commands: Commands) -> None:
    """Add ``volee desktop-entry install|uninstall``."""
    entry = commands.add_parser(
        "desktop-entry", help="add or remove volee's menu entry and icon for this user (pipx, uv)"
    )
    entry.description = (
        "Add volee to this user's application menu (a .desktop file and the icon in "
        "$XDG_DATA_HOME, by default ~/.local/share), or remove exactly those files. "
        "The .deb package installs them for everyone; this is for a wheel installed "
        "with pipx or uv. It never starts volee at login (that is `volee daemon install`)."
    )
    entry.epilog = "example: pipx install ./volee_desktop-*.whl && volee desktop-entry install"
    actions = entry.add_subparsers(dest="entry_command", metavar="ACTION", required=True)
    for name, func, helptext in (
        ("install", cmd_install, "write the menu entry and the icons (SVG and PNG sizes)"),
        ("uninstall", cmd_uninstall, "remove the files `install` wrote"),
    ):
        p = actions.add_parser(name, help=helptext, description=helptext[0].upper() + helptext[1:])
        p.add_argument("--json", action="store_true", help="print the files as JSON")
        p.set_defaults(func=func)


def _executable() -> str:
    """The absolute path of the ``volee`` that runs now (a session's PATH may lack it)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "volee" and argv0.exists():
        return str(argv0.absolute())
    beside = Path(sys.executable).with_name("volee")
    if beside.exists():
        return str(beside)
    return shutil.which("volee") or "volee"


def cmd_install(args: argparse.Namespace) -> int:
    from ..app import desktopentry

    layout = desktopentry.Layout(desktopentry.user_share())
    try:
        written = desktopentry.write(layout, _executable())
    except (desktopentry.DesktopEntryError, OSError) as exc:
        raise CliError(f"cannot add the menu entry: {exc}") from exc
    refreshed = desktopentry.refresh_caches(layout)
    if args.json:
        emit_json({"installed": [str(p) for p in written], "refreshed": refreshed})
    else:
        print(f"volee is in the application menu: {layout.entry}")
        print(f"icons: {len(written) - 1} files under {layout.share / 'icons' / 'hicolor'}")
        print("`volee desktop-entry uninstall` removes them.")
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    from ..app import desktopentry

    layout = desktopentry.Layout(desktopentry.user_share())
    try:
        removed = desktopentry.remove(layout)
    except OSError as exc:
        raise CliError(f"cannot remove the menu entry: {exc}") from exc
    desktopentry.refresh_caches(layout)
    if args.json:
        emit_json({"removed": [str(p) for p in removed]})
    elif removed:
        print(f"removed volee's menu entry and icons ({len(removed)} files)")
    else:
        print("volee had no menu entry for this user; nothing to remove")
    return 0

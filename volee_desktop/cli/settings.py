"""``volee config confirm``: the person confirms the settings of ``config.toml`` that lower
safety (docs/trust-model.md, "Settings that lower safety"); only then are they in force.

The daemon refuses the confirmation to an agent (``daemon/serving/access.py``): it works from the
person's own shell, not from inside an agent's session.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..ipc.methods import Method
from .common import CliError, Commands, call, emit_json


def add_commands(sub: Commands) -> None:
    """Add ``volee config``."""
    p = sub.add_parser("config", help="settings of config.toml that wait for you")
    groups = p.add_subparsers(dest="config_command", metavar="COMMAND")
    c = groups.add_parser(
        "confirm", help="confirm what config.toml asks for that lowers safety (then in force)"
    )
    c.add_argument("--yes", action="store_true", help="do not ask (you have read them)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_confirm)
    p.set_defaults(func=lambda _args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_confirm(args: argparse.Namespace) -> int:
    waiting: dict[str, Any] = call(args, Method.CONFIG_UNCONFIRMED)
    pending = waiting["unconfirmed"]
    if not pending:
        result = {"confirmed": waiting["confirmed"], "unconfirmed": []}
        if args.json:
            emit_json(result)
        else:
            print("nothing to confirm: config.toml asks for no setting that lowers safety beyond")
            print("what you confirmed already")
        return 0
    if not args.json:
        print("config.toml asks for settings that lower safety:")
        for item in pending:
            print(f"  {item['key']} = {item['value']}: {item['why']}")
            print(f"    (until you confirm, {item['key']} = {item['standing']})")
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError(
                "not confirmed: this asks you first, and there is no terminal to ask on; "
                "run `volee config confirm --yes` once you have read what it confirms",
                2,
            )
        answer = input("Confirm them? Every agent started from now on runs with them [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not confirmed: the safer values stand")
            return 1
    # What you were shown is what is confirmed: a file changed meanwhile is refused.
    result = call(args, Method.CONFIG_CONFIRM, settings=waiting["asked"])
    if args.json:
        emit_json(result)
    else:
        confirmed = ", ".join(f"{k} = {v}" for k, v in result["confirmed"].items())
        print(f"confirmed, in force from now on: {confirmed}")
    return 0

"""``volee machine add|ls|rm`` and ``volee bridge``: the other machines (docs/machines.md).

``--machine NAME`` on every command that takes an AGENT is the same as ``NAME:AGENT``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..core.durations import duration
from ..ipc.methods import Method
from ..machines import (
    Machine,
    MachineError,
    authorized_keys_line,
    check_name,
    remove_machine,
    save_machine,
)
from ..paths import dirs
from .common import CliError, Commands, connect, emit_json
from .conventions import VoleeParser, commands

#: How long ``machine add`` waits to say whether the new machine answers.
FIRST_TRY = 25.0
#: Whether this machine runs a volee daemon: not Windows, whose agents run in a WSL machine
#: (docs/machines.md). Without one, ``machine add|rm|ls`` work on ``config.toml`` alone.
LOCAL_DAEMON = sys.platform != "win32"
#: Said where no daemon here can take a change of ``[machines]`` in.
NO_DAEMON_HERE = (
    "no volee daemon runs on this machine: `volee app` reads [machines] when it starts "
    "(start it again to show the change)"
)


def add_commands(sub: Commands) -> None:
    """Add ``volee machine`` and ``volee bridge``."""
    group = sub.add_parser("machine", help="the other machines whose agents volee shows")
    assert isinstance(group, VoleeParser)
    machine = group.add_subparsers(dest="machine_command", metavar="COMMAND")
    group.set_defaults(func=lambda _args: _help(group))

    p = machine.add_parser("add", help="show the agents of another machine (over ssh or a command)")
    p.add_argument(
        "name", metavar="NAME", help="its name in volee (devbox); NAME:AGENT names its agents"
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--ssh", metavar="DEST", help="an ssh destination (user@host, or a Host of ~/.ssh/config)"
    )
    how.add_argument(
        "--via", metavar="CMD", help="a command that runs a command there ('wsl.exe -d Ubuntu --')"
    )
    p.add_argument(
        "--volee", metavar="PATH", default="volee", help="volee on that machine (default: volee)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_add)

    p = machine.add_parser("ls", help="the machines: reachable or not, since when, their agents")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ls)

    p = machine.add_parser("rm", help="stop showing a machine (nothing there is touched)")
    p.add_argument("name", metavar="NAME", help="the machine's name in volee")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rm)

    p = sub.add_parser("bridge", help="(ssh or --via starts this) relay to this machine's daemon")
    p.set_defaults(func=cmd_bridge)


def add_machine_option(parser: VoleeParser) -> None:
    """``--machine NAME`` on each command with an AGENT (it means ``NAME:AGENT``) and on
    ``spawn`` (start it there)."""
    for path, command in commands(parser):
        dests = {action.dest for action in command.arguments}
        if "agent" in dests or path == ("spawn",):
            command.add_argument(
                "--machine",
                metavar="NAME",
                help="the machine it is on (`volee machine ls`); the same as NAME:AGENT",
            )


def target(args: argparse.Namespace) -> None:
    """Fold ``--machine NAME`` into ``args.agent`` as ``NAME:AGENT``."""
    name = getattr(args, "machine", None)
    agent = getattr(args, "agent", None)
    if name and isinstance(agent, str):
        prefix, sep, _rest = agent.partition(":")
        if sep and prefix != name:
            raise CliError(f"{agent!r} names machine {prefix!r}, but --machine says {name!r}", 2)
        if not sep:
            args.agent = f"{name}:{agent}"


def _help(group: argparse.ArgumentParser) -> int:
    group.print_help()
    return 2


def _reload(wait: float) -> dict[str, Any]:
    with connect(dirs(), timeout=wait + 30) as client:
        result: dict[str, Any] = client.request(Method.MACHINES_RELOAD, {"wait": wait})
    return result


def cmd_add(args: argparse.Namespace) -> int:
    try:
        check_name(args.name)
        machine = Machine(args.name, ssh=args.ssh, via=args.via, volee=args.volee)
        save_machine(dirs().config_file, machine)
    except MachineError as exc:
        raise CliError(str(exc), 2) from None
    if LOCAL_DAEMON:
        result = _reload(FIRST_TRY)
        view = next((m for m in result["machines"] if m["name"] == args.name), None)
    else:
        view = _unasked(machine)
    if args.json:
        emit_json(view)
        return 0
    print(f"{args.name}: {_state(view) if LOCAL_DAEMON else 'kept; ' + NO_DAEMON_HERE}")
    if args.ssh:
        print(
            "\nRecommended: a key of its own that can only run the bridge (docs/machines.md).\n"
            f"On {args.name}, add this line to ~/.ssh/authorized_keys (with that key's .pub):\n"
            f"  {authorized_keys_line(args.volee)}\n"
            "and here, in ~/.ssh/config, a Host with that IdentityFile and IdentitiesOnly yes."
        )
    return 0


def _unasked(machine: Machine) -> dict[str, Any]:
    """A machine's view as ``machines.list`` gives it, where no daemon here asked it."""
    return {
        "name": machine.name,
        "ssh": machine.ssh,
        "via": machine.via,
        "reachable": False,
        "since": None,
        "version": None,
        "agents": None,
        "problem": NO_DAEMON_HERE,
    }


def _state(view: dict[str, Any] | None) -> str:
    if view is None:
        return "kept, but the daemon does not show it (see `volee machine ls`)"
    if view["reachable"]:
        return f"reachable, volee {view['version']}, {view['agents']} agent(s)"
    return f"not reachable ({view['problem']}); volee keeps trying"


def cmd_ls(args: argparse.Namespace) -> int:
    if LOCAL_DAEMON:
        with connect(dirs()) as client:
            machines = client.request(Method.MACHINES_LIST, {"retry": True})
    else:
        machines = [_unasked(m) for m in _configured().values()]
    if args.json:
        emit_json(machines)
        return 0
    if not machines:
        print("no other machines: `volee machine add devbox --ssh devbox` adds one")
        return 0
    now = time.time()
    rows = [("NAME", "REACHABLE", "SINCE", "VERSION", "AGENTS", "HOW / PROBLEM")]
    for m in machines:
        since = duration(now - m["since"]) if m["since"] else ""
        how = f"ssh {m['ssh']}" if m["ssh"] else f"via {m['via']!r}"
        if m["problem"]:
            how = f"{how}: {m['problem']}"
        agents = "" if m["agents"] is None else str(m["agents"])
        rows.append(
            (m["name"], "yes" if m["reachable"] else "no", since, m["version"] or "", agents, how)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=False)) + "  " + r[5])
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    try:
        removed = remove_machine(dirs().config_file, args.name)
    except MachineError as exc:
        raise CliError(str(exc)) from None
    if LOCAL_DAEMON:
        _reload(0.0)
    if args.json:
        emit_json({"removed": removed.name, **removed.table()})
        return 0
    print(f"{removed.name}: no longer shown (nothing on it was touched)")
    return 0


def _configured() -> dict[str, Machine]:
    """The machines of ``config.toml`` (a bad entry refused in words)."""
    from ..config import load_config

    loaded = load_config(dirs().config_file)
    for problem in loaded.problems:
        print(f"volee: {problem}", file=sys.stderr)
    return dict(loaded.config.machines)


def cmd_bridge(args: argparse.Namespace) -> int:
    from . import bridge

    return bridge.main([])

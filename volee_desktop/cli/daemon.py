"""``volee daemon run|status|stop|repair|install [--linger]|uninstall``: the daemon, its login item.

volee never installs the login item unasked (ADR 0024): only ``daemon install`` (and the
tray's "Start at login") do.  A daemon started by the login item steps aside quietly
(exit 0) when another volee already holds the lock, so the service manager does not
restart it in a loop (``loginitem.origin``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.durations import duration
from ..ipc.client import Client
from ..ipc.methods import Method
from ..ipc.protocol import DaemonUnavailable, ServerStartError
from ..paths import NotPrivate, dirs
from .common import CliError, Commands, call, emit_json

if TYPE_CHECKING:
    from ..loginitem.base import LoginItem
    from ..loginitem.systemd import SystemdUserUnit

STOP_TIMEOUT = 15.0


def add_commands(commands: Commands) -> None:
    """Add ``volee daemon ACTION``."""
    daemon = commands.add_parser("daemon", help="run, inspect or stop the daemon; login item")
    actions = daemon.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    for name, func, helptext in (
        ("run", cmd_daemon_run, "run the daemon in the foreground"),
        ("status", cmd_daemon_status, "is the daemon running, and how is it"),
        ("stop", cmd_daemon_stop, "stop the daemon (agents keep running)"),
        ("repair", cmd_daemon_repair, "repair a damaged event log from its last good record"),
        ("install", cmd_daemon_install, "start volee at login (systemd/launchd/Run key)"),
        ("uninstall", cmd_daemon_uninstall, "stop starting volee at login"),
    ):
        p = actions.add_parser(name, help=helptext)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "install":
            p.add_argument(
                "--linger",
                action="store_true",
                help="a server: keep volee and its agents running after logout and start it "
                "at boot (`loginctl enable-linger`; Linux only)",
            )
        p.set_defaults(func=func)
    p = commands.add_parser("whoami", help="whom the daemon takes this process for, and why")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_whoami)


def cmd_whoami(args: argparse.Namespace) -> int:
    who = call(args, Method.CALLER)
    if args.json:
        emit_json(who)
    elif who["kind"] == "person":
        print(f"the person (pid {who['pid']}: {who['how']})")
    elif who["kind"] == "unknown":
        print(f"no one volee can identify (pid {who['pid']}: {who['how']}); never the person")
    else:
        print(
            f"agent {who['name'] or who['agent']} ({who['agent']}; pid {who['pid']}: {who['how']})"
        )
    return 0


def cmd_daemon_run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ..daemon import logfile
    from ..daemon.errors import AlreadyRunning
    from ..daemon.main import run_foreground
    from ..memtrim import one_arena
    from ..store.errors import StoreError

    one_arena()  # before any thread: worker threads' arenas kept their pages (memtrim.py)
    folders = dirs()
    if not logging.getLogger().handlers:
        # Size-capped when its output is logs/daemon.log (started by `volee`); else stderr.
        logfile.setup(folders.logs / "daemon.log")
    try:
        return asyncio.run(run_foreground(folders))
    except AlreadyRunning as exc:
        from ..loginitem.origin import already_running_message, login_item_start

        if login_item_start():
            # The service manager would restart a failed start in a loop: step aside quietly.
            print(already_running_message(exc), file=sys.stderr)
            return 0
        raise CliError(str(exc), 2) from exc
    except StoreError as exc:
        raise CliError(f"the daemon cannot start: {exc}", 3) from exc
    except (NotPrivate, ServerStartError) as exc:
        raise CliError(f"the daemon cannot start: {exc}", 3) from exc


def cmd_daemon_status(args: argparse.Namespace) -> int:
    folders = dirs()
    try:
        with Client.connect(folders.socket, timeout=5.0) as client:
            status = client.call(Method.DAEMON_STATUS)
    except DaemonUnavailable:
        status = {"running": False, "socket": str(folders.socket)}
        login = _login_status()
        if login is not None:
            status["login_item"] = login
        status["notifications"] = _notifications_status()
        if args.json:
            emit_json(status)
        else:
            print(f"volee daemon: not running (socket {folders.socket})")
            if login is not None:
                print(f"login item: {login.get('summary', login)}")
        return 3
    status["running"] = True
    login = _login_status()
    if login is not None:
        status["login_item"] = login
    status["notifications"] = _notifications_status()
    if args.json:
        emit_json(status)
        return 0
    print(f"volee daemon {status['version']}: running, pid {status['pid']}")
    up = duration(time.time() - status["started_at"])
    print(f"  up {up} (started in {status['startup_seconds']:.2f} s)")
    print(f"  socket     {status['socket']}")
    print(f"  event log  {status['events_db']} ({log_text(status)})")
    print(f"  agents     {status['agents']} ({status['live_agents']} live)")
    print(
        f"  hooks      {status['hooks_accepted']} accepted, {status['hooks_rejected']} kept aside"
    )
    if status.get("broken"):
        print(f"  BROKEN     {status['broken']}")
    if status.get("failing"):
        print(f"  NOT WRITING {status['failing']}")
    for agent, why in status.get("suspect_hosts", {}).items():
        print(f"  suspect host record of {agent} (set aside, not adopted): {why}")
    for problem in status.get("config_problems", []):
        print(f"  config: {problem} (default used)")
    for held in status.get("unconfirmed_settings", []):
        print(f"  config: {held}")
    for name, part in status.get("extra", {}).items():
        print(f"  {name:<10} {part_text(name, part)}")
    if login is not None:
        print(f"  login item {login.get('summary', login)}")
    notes = status["notifications"]
    if notes["problem"]:
        print(f"  notifications cannot be shown: {notes['problem']}")
    return 0


def log_text(status: dict[str, Any]) -> str:
    """The event log's size and its last compaction, in words (docs/decisions.md D22)."""
    part = status.get("log")
    if not isinstance(part, dict):  # an older daemon
        return f"{status['seq']} events"
    records = part.get("records")
    counted = f"{records:,} records" if isinstance(records, int) else "records being counted"
    text = f"{counted}, up to seq {status['seq']:,}"
    if part.get("compacting"):
        text += "; compacting now"
    at = part.get("compacted_at")
    if part.get("base_seq"):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else "at an unknown time"
        text += f"; compacted up to seq {part['base_seq']:,} ({when}"
        if part.get("dropped") is not None:
            text += f", {part['dropped']:,} dropped in {part.get('seconds') or 0:.1f} s"
        text += ")"
    elif not part.get("compacting"):
        text += "; never compacted"
    if part.get("problem"):
        text += f"; the last compaction {part['problem']}"
    return text


def cadence_text(part: dict[str, Any]) -> str:
    """Which discovery cadence is in force, in words (docs/discovery.md, "The cadence")."""
    if part["cadence"] == "watch":
        return (
            "lists when the watch sees a session start or end, when asked, "
            "and every 5 min as a safety net"
        )
    rest = "every 5 min" if part.get("watch") == "on" else "every 30 s"
    return (
        f"the seed's cadence: lists every 2-10 s while the list is open, {rest} otherwise "
        f"({part.get('seed_because', 'no watch')})"
    )


def part_text(name: str, part: Any) -> str:
    """A status part in words where volee has them (the MCP ones), else its JSON."""
    if isinstance(part, str):
        return part
    if name == "mcp_http" and isinstance(part, dict):
        text = (
            f"over HTTP at {part.get('url')}: {part.get('connections', 0)} connections open, "
            f"{part.get('requests', 0)} requests, {part.get('refused', 0)} refused"
        )
        if part.get("moved_from"):
            text += (
                f"; port {part['moved_from']} was taken: agents started before lost volee's "
                "tools until they are resumed"
            )
        return text
    if name == "discovery" and isinstance(part, dict) and "cadence" in part:
        return f"{json.dumps(part)}\n             {cadence_text(part)}"
    if name == "mcp" and isinstance(part, dict):
        return f"relays: {part.get('sessions', 0)} sessions open ({part.get('opened', 0)} opened)"
    return json.dumps(part)


def _notifications_status() -> dict[str, Any]:
    """Whether the tray app (this user, this machine) can show desktop notifications."""
    from .. import notifycheck

    why = notifycheck.problem()
    return {"desktop": why is None, "problem": why}


def _login_status() -> dict[str, Any] | None:
    try:
        result: dict[str, Any] = login_status_summary()
    except Exception as exc:  # status is informative; never fail `daemon status` on it
        return {"summary": f"unknown ({exc})"}
    return result


def cmd_daemon_stop(args: argparse.Namespace) -> int:
    folders = dirs()
    try:
        with Client.connect(folders.socket, timeout=5.0) as client:
            pid = client.call(Method.DAEMON_STATUS)["pid"]
            client.call(Method.DAEMON_STOP)
    except DaemonUnavailable:
        from ..pidlock import holder, is_held

        starting = holder(folders.daemon_lock) if is_held(folders.daemon_lock) else None
        if starting is None:
            print("volee daemon: not running")
            return 0
        # It holds the lock but does not serve yet (starting): it would come up after this
        # "stop". Ending it mid-start is safe: the log is durable and hosts live on.
        pid = starting
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_TIMEOUT
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if time.monotonic() >= deadline:
            raise CliError(
                f"the daemon (pid {pid}) is still running {STOP_TIMEOUT:.0f} s after it was "
                f"asked to stop; see {folders.logs / 'daemon.log'}, and if it stays, "
                f"`kill {pid}` (agents keep running in their hosts)"
            )
        time.sleep(0.05)
    if args.json:
        emit_json({"stopped": True, "pid": pid})
    else:
        print(f"volee daemon: stopped (pid {pid}); agents keep running in their hosts")
    return 0


def cmd_daemon_repair(args: argparse.Namespace) -> int:
    from ..pidlock import holder, is_held
    from ..store.integrity import repair

    folders = dirs()
    if is_held(folders.daemon_lock):
        raise CliError(
            f"the daemon is running (pid {holder(folders.daemon_lock)}); stop it first: "
            "volee daemon stop"
        )
    if not folders.events_db.exists():
        raise CliError(f"there is no event log at {folders.events_db}; nothing to repair")
    report = repair(folders.events_db)
    print(report)
    return 0


# --- the login item ------------------------------------------------------------------------


def _item() -> LoginItem:
    from ..loginitem import for_this_platform

    return for_this_platform()


def cmd_daemon_install(args: argparse.Namespace) -> int:
    from ..loginitem import LoginItemError, SystemdUserUnit

    linger = getattr(args, "linger", False)
    try:
        item = _item()
        if linger and not isinstance(item, SystemdUserUnit):
            raise CliError("--linger is for Linux with systemd (`loginctl enable-linger`)", 2)
        user = item.linger() if isinstance(item, SystemdUserUnit) and linger else None
        fresh = _missing_folders(item)
        try:
            item.install()
        except LoginItemError:
            _remove_if_empty(fresh)
            raise
        told = _start_lingering(item) if isinstance(item, SystemdUserUnit) and linger else []
        status = item.status()
    except LoginItemError as exc:
        raise CliError(f"{exc.title}. {exc.message}") from exc
    if args.json:
        emit_json(
            {
                "installed": True,
                "path": status.path,
                "summary": status.detail,
                "linger": user,
                "notes": told,
            }
        )
        return 0
    print(f"volee will start at login ({status.path}): {status.detail}")
    if user is not None:
        print(f"linger is on for {user}: volee starts at boot and its agents outlive logout")
    print("agents interrupted by a restart come back without opening volee")
    for line in told:
        print(line)
    return 0


def _start_lingering(item: SystemdUserUnit) -> list[str]:
    """Start the unit when no daemon runs; when one does from a login session, say that its
    agents end with that session and how to move to the unit (loginitem/linger.py)."""
    from ..loginitem.linger import session_scope

    try:
        with Client.connect(dirs().socket, timeout=5.0) as client:
            pid = int(client.call(Method.DAEMON_STATUS)["pid"])
    except DaemonUnavailable:
        started = item.start()
        if started.ok:
            return ["started volee.service now: its agents live in its cgroup, not your session"]
        return [f"could not start volee.service now ({started.output}): it starts at boot"]
    scope = session_scope(pid)
    if scope is None:
        return []
    return [
        f"the daemon running now (pid {pid}) was started in your login session ({scope}): "
        "the agents it starts end with that session. To have them outlive logout, run "
        "`volee daemon stop` and `systemctl --user start volee.service` (agents running now "
        "stay in the session)"
    ]


def _missing_folders(item: LoginItem) -> list[Path]:
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

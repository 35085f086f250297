"""The ``volee`` command (CLI contract in docs/architecture: stable for people and scripts)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..ipc.client import Client
from ..ipc.protocol import DaemonUnavailable, IpcError
from ..paths import Dirs, dirs

START_TIMEOUT = 20.0
STOP_TIMEOUT = 15.0
ALREADY_RUNNING = 2  # `volee daemon run`'s status when another daemon holds the lock


class CliError(Exception):
    """A failure to report on stderr with a non-zero exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# --- talking to the daemon --------------------------------------------------------------------


def connect(folders: Dirs, *, start: bool = True, timeout: float = 30.0) -> Client:
    """A client of this user's daemon, starting the daemon first if none runs."""
    try:
        return Client.connect(folders.socket, timeout=timeout)
    except DaemonUnavailable:
        if not start:
            raise
    start_daemon(folders)
    return Client.connect(folders.socket, timeout=timeout)


def _spawn_daemon(log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "volee_desktop.cli", "daemon", "run"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )


def start_daemon(folders: Dirs) -> None:
    """Start the headless daemon detached from this terminal and wait until it serves."""
    from ..daemon.lock import is_held

    folders.logs.mkdir(parents=True, exist_ok=True)
    log_path = folders.logs / "daemon.log"
    proc = _spawn_daemon(log_path)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            Client.connect(folders.socket, timeout=2.0).close()
            return
        except DaemonUnavailable:
            pass
        code = proc.poll()
        if code is not None and code != ALREADY_RUNNING:
            tail = _tail(log_path)
            raise CliError(f"the volee daemon could not start (exit {code}):\n{tail}", 3)
        # exit ALREADY_RUNNING: another daemon won the race; wait for it to serve. If that one
        # was stopping and let go of the lock without serving, nobody else starts one: we do.
        if code == ALREADY_RUNNING and not is_held(folders.daemon_lock):
            proc = _spawn_daemon(log_path)
        time.sleep(0.05)
    raise CliError(f"the volee daemon did not answer within {START_TIMEOUT:.0f} s; see {log_path}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def call(args: argparse.Namespace, method: str, **params: Any) -> Any:
    """Call a daemon method, starting the daemon if needed."""
    with connect(dirs()) as client:
        return client.request(method, params)


def emit_json(value: Any) -> None:
    """Print JSON for scripts."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def ago(seconds: float) -> str:
    """A short duration: 12 s, 3 min, 2 h, 4 d."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h"
    return f"{s // 86400} d"


# --- commands ---------------------------------------------------------------------------------


def cmd_daemon_run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ..daemon.errors import AlreadyRunning
    from ..daemon.main import run_foreground
    from ..store.errors import StoreError

    folders = dirs()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return asyncio.run(run_foreground(folders))
    except AlreadyRunning as exc:
        from .recovery import already_running_message, login_item_start

        if login_item_start():
            # The service manager would restart a failed start in a loop: step aside quietly.
            print(already_running_message(exc), file=sys.stderr)
            return 0
        raise CliError(str(exc), 2) from exc
    except StoreError as exc:
        raise CliError(f"the daemon cannot start: {exc}", 3) from exc


def cmd_daemon_status(args: argparse.Namespace) -> int:
    folders = dirs()
    try:
        with Client.connect(folders.socket, timeout=5.0) as client:
            status = client.call("daemon.status")
    except DaemonUnavailable:
        status = {"running": False, "socket": str(folders.socket)}
        login = _login_status()
        if login is not None:
            status["login_item"] = login
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
    if args.json:
        emit_json(status)
        return 0
    print(f"volee daemon {status['version']}: running, pid {status['pid']}")
    up = ago(time.time() - status["started_at"])
    print(f"  up {up} (started in {status['startup_seconds']:.2f} s)")
    print(f"  socket     {status['socket']}")
    print(f"  event log  {status['events_db']} ({status['seq']} events)")
    print(f"  agents     {status['agents']} ({status['live_agents']} live)")
    print(
        f"  hooks      {status['hooks_accepted']} accepted, {status['hooks_rejected']} kept aside"
    )
    if status.get("broken"):
        print(f"  BROKEN     {status['broken']}")
    for problem in status.get("config_problems", []):
        print(f"  config: {problem} (default used)")
    for name, part in status.get("extra", {}).items():
        print(f"  {name:<10} {part if isinstance(part, str) else json.dumps(part)}")
    if login is not None:
        print(f"  login item {login.get('summary', login)}")
    return 0


def _login_status() -> dict[str, Any] | None:
    try:
        from .recovery import login_status_summary as status_summary
    except ImportError:
        return None
    try:
        result: dict[str, Any] = status_summary()
    except Exception as exc:  # status is informative; never fail `daemon status` on it
        return {"summary": f"unknown ({exc})"}
    return result


def cmd_daemon_stop(args: argparse.Namespace) -> int:
    folders = dirs()
    try:
        with Client.connect(folders.socket, timeout=5.0) as client:
            pid = client.call("daemon.status")["pid"]
            client.call("daemon.stop")
    except DaemonUnavailable:
        from ..daemon.lock import holder, is_held

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
    from ..daemon.lock import holder, is_held
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


def cmd_ls(args: argparse.Namespace) -> int:
    with connect(dirs()) as client:
        if not args.no_refresh:
            try:
                client.call("discovery.refresh")
            except IpcError:
                pass  # discovery off or failing: list what is known
        agents = client.call("agents.list", all=args.all)
    if args.json:
        emit_json(agents)
        return 0
    if not agents:
        print("no agents yet: `volee spawn -- 'your task'` starts one")
        return 0
    now = time.time()
    rows = [("STATE", "NAME", "SINCE", "DETAIL", "ID")]
    for a in agents:
        detail = a["detail"] or a["activity"] or ""
        marks = []
        if a.get("held") and a["held"] != detail:
            marks.append(f"held: {a['held']}")
        elif a.get("held"):
            marks.append("held")
        if a.get("interrupted"):
            marks.append(f"interrupted ({a['interrupted']})")
            if a.get("action"):
                marks.append(f"`volee resume` to {a['action']}")
        if marks:
            detail = f"{detail} [{'; '.join(marks)}]" if detail else f"[{'; '.join(marks)}]"
        rows.append((a["state"], a["name"], ago(now - a["state_since"]), detail[:70], a["id"]))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=False)) + "  " + r[4])
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    items = call(args, "agents.timeline", agent=args.agent)
    if args.json:
        emit_json(items)
        return 0
    for item in items:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(item["at"]))
        print(f"{stamp}  {item['text']}")
    return 0


def _agent_env() -> dict[str, str]:
    from ..daemon.agents import allowed_env

    return allowed_env(dict(os.environ))


def cmd_spawn(args: argparse.Namespace) -> int:
    words = list(args.words)
    if words[:1] == ["--"]:
        words = words[1:]
    harness = args.harness
    if harness == "generic":
        if not words:
            raise CliError(
                "the generic harness needs a command: volee spawn --harness generic -- CMD"
            )
        argv, prompt = words, None
    else:
        argv, prompt = [], " ".join(words) or None
    params: dict[str, Any] = {
        "harness": harness,
        "prompt": prompt,
        "argv": argv,
        "name": args.name,
        "cwd": str(Path(args.cwd or os.getcwd()).absolute()),
        "worktree": args.worktree,
        "role": args.role,
        "mission": args.mission,
        "model": args.model,
        "permission_mode": args.permission_mode,
        "env": _agent_env(),
    }
    agent = call(args, "agents.spawn", **{k: v for k, v in params.items() if v is not None})
    if args.json:
        emit_json(agent)
    else:
        print(agent["id"])
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    if text == "-":
        text = sys.stdin.read()
    result = call(args, "agents.send", agent=args.agent, text=text)
    if result.get("resumed"):
        print(f"{args.agent} was not running: resumed with your message", file=sys.stderr)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    agent = call(args, "agents.stop", agent=args.agent)
    print(f"{agent['name']}: {agent['state']} and held (a message from you lifts the hold)")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"agent": args.agent}
    if args.text:
        params["text"] = " ".join(args.text)
    agent = call(args, "agents.resume", **params)
    print(f"{agent['name']}: resumed ({agent['state']})")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    result = call(args, "agents.forget", agent=args.agent)
    print(f"forgot {result['name']} ({result['forgotten']})")
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    from ..hosts.attach import attach

    info = call(args, "agents.attach_info", agent=args.agent)
    if not sys.stdin.isatty():
        raise CliError("`volee attach` needs a terminal (stdin is not a TTY)")
    print(f"attached to {info['name']}; Ctrl-] detaches (the agent keeps running)\r")
    result = attach(info["socket"], sys.stdin.fileno(), sys.stdout.fileno())
    print(f"\r\ndetached from {info['name']}: {result}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``volee``."""
    parser = argparse.ArgumentParser(
        prog="volee",
        description="Supervise the coding agents you run on your own machine.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("app", help="run the tray app in the foreground")
    p.set_defaults(func=_dispatch_app)

    daemon = sub.add_parser("daemon", help="run, inspect or stop the daemon; login item")
    dsub = daemon.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    for name, func, helptext in (
        ("run", cmd_daemon_run, "run the daemon in the foreground"),
        ("status", cmd_daemon_status, "is the daemon running, and how is it"),
        ("stop", cmd_daemon_stop, "stop the daemon (agents keep running)"),
        ("repair", cmd_daemon_repair, "repair a damaged event log from its last good record"),
    ):
        dp = dsub.add_parser(name, help=helptext)
        dp.add_argument("--json", action="store_true", help="machine-readable output")
        dp.set_defaults(func=func)

    p = sub.add_parser("ls", help="agents, most urgent first")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true", help="also ended sessions volee only watched")
    p.add_argument("--no-refresh", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser("timeline", help="an agent's history: interruptions and decisions")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("spawn", help="start an agent; prints its id")
    p.add_argument("--harness", choices=["claude", "codex", "pi", "generic"], default="claude")
    p.add_argument("--name")
    p.add_argument("--cwd")
    p.add_argument("--worktree", action="store_true", help="a new branch in a new worktree")
    p.add_argument("--role")
    p.add_argument("--mission")
    p.add_argument("--model")
    p.add_argument("--permission-mode", dest="permission_mode")
    p.add_argument("--json", action="store_true")
    p.add_argument("words", nargs=argparse.REMAINDER, metavar="PROMPT")
    p.set_defaults(func=cmd_spawn)

    p = sub.add_parser("send", help="deliver a message (lifts a stop hold)")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("text", nargs="+", metavar="TEXT")
    p.set_defaults(func=cmd_send)

    p = sub.add_parser("stop", help="stop and hold an agent")
    p.add_argument("agent", metavar="AGENT")
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser("resume", help="resume an interrupted or stopped agent now")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("text", nargs="*", metavar="TEXT")
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("forget", help="remove an agent (its sessions are ignored from then on)")
    p.add_argument("agent", metavar="AGENT")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("attach", help="attach this terminal to the agent's PTY")
    p.add_argument("agent", metavar="AGENT")
    p.set_defaults(func=cmd_attach)

    p = sub.add_parser("hook", help="(harness hooks call this) forward a hook payload")
    p.add_argument("event", metavar="EVENT")
    return parser


def _dispatch_app(args: argparse.Namespace) -> int:
    problem = no_desktop(dict(os.environ), sys.platform)
    if problem:
        raise CliError(problem, 2)
    from ..app.main import run_app

    return run_app([])


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


EXTENSIONS: list[Any] = []


def _add_builtin_extensions() -> None:
    from . import missions, recovery

    EXTENSIONS.append(recovery.extend)  # daemon install|uninstall
    EXTENSIONS.append(missions.extend)  # mission, tidy, mcp


_add_builtin_extensions()


def main(argv: list[str]) -> int:
    """Run ``volee`` with ``argv``; returns the exit status."""
    parser = build_parser()
    for extend in EXTENSIONS:
        extend(parser)
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

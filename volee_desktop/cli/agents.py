"""``volee ls|timeline|spawn|send|stop|resume|forget|attach``: the agents."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..core.durations import duration
from ..harness.env import allowed_env
from ..ipc.protocol import IpcError
from ..paths import dirs
from .common import (
    HARNESS_CHOICES,
    HARNESS_DEFAULT,
    CliError,
    Commands,
    call,
    connect,
    created,
    emit_json,
    progress,
)


def add_commands(sub: Commands) -> None:
    """Add the agent commands."""
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
    p.add_argument(
        "--harness",
        choices=HARNESS_CHOICES,
        default=HARNESS_DEFAULT,
        help=f"the coding agent to run (default: {HARNESS_DEFAULT})",
    )
    p.add_argument("--name", help="its name in volee (default: from the task)")
    p.add_argument("--cwd", metavar="DIR", help="the folder it works in (default: this one)")
    p.add_argument("--worktree", action="store_true", help="a new branch in a new worktree")
    p.add_argument("--role", help="its role, shown in the list (e.g. reviewer)")
    p.add_argument("--mission", metavar="MISSION", help="the mission it works for")
    p.add_argument("--model", help="the harness's model (its own names: opus, gpt-5, …)")
    p.add_argument(
        "--permission-mode",
        dest="permission_mode",
        metavar="MODE",
        help="the harness's permission mode (claude: default, acceptEdits, plan, …)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("words", nargs=argparse.REMAINDER, metavar="PROMPT")
    p.set_defaults(func=cmd_spawn)

    p = sub.add_parser("send", help="deliver a message (lifts a stop hold)")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("text", nargs="+", metavar="TEXT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_send)

    p = sub.add_parser("stop", help="stop and hold an agent")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser("resume", help="resume an interrupted or stopped agent now")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument(
        "text", nargs="*", metavar="TEXT", help="a message to resume it with (default: none)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("forget", help="remove an agent (its sessions are ignored from then on)")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("attach", help="attach this terminal to the agent's PTY")
    p.add_argument("agent", metavar="AGENT")
    p.set_defaults(func=cmd_attach)


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
    rows = [("STATE", "NAME", "SINCE", "CONTEXT", "DETAIL", "ID")]
    for a in agents:
        detail = a["detail"] or a["activity"] or ""
        request = a.get("request")
        if request and request.get("summary"):
            detail = f"{request['kind']}: {request['summary']}"
            if request.get("reason"):
                detail += f" ({request['reason']})"
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
        # What an agent asks is worth more room than what it last did.
        cut = 110 if request else 70
        share = a.get("context")
        context = f"{round(share * 100)}%" if isinstance(share, (int, float)) else ""
        if context and isinstance(a.get("cost_usd"), (int, float)):
            context += f" ${a['cost_usd']:.2f}"
        since = duration(now - a["state_since"])
        rows.append((a["state"], a["name"], since, context, detail[:cut], a["id"]))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=False)) + "  " + r[5])
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
        "env": allowed_env(dict(os.environ)),
    }
    with progress("starting the agent (a worktree, the harness)"):
        return created(args, "agents.spawn", params)


def cmd_send(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    if text == "-":
        text = sys.stdin.read()
    result = call(args, "agents.send", agent=args.agent, text=text)
    if args.json:
        emit_json(result)
        return 0
    if result.get("resumed"):
        print(f"{args.agent} was not running: resumed with your message", file=sys.stderr)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    agent = call(args, "agents.stop", agent=args.agent)
    if args.json:
        emit_json(agent)
        return 0
    print(f"{agent['name']}: {agent['state']} and held (a message from you lifts the hold)")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"agent": args.agent}
    if args.text:
        params["text"] = " ".join(args.text)
    agent = call(args, "agents.resume", **params)
    if args.json:
        emit_json(agent)
        return 0
    print(f"{agent['name']}: resumed ({agent['state']})")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    result = call(args, "agents.forget", agent=args.agent)
    if args.json:
        emit_json(result)
        return 0
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

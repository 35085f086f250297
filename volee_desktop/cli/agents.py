"""``volee ls|timeline|spawn|send|stop|resume|continue|forget|attach``: the agents."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..core.durations import duration
from ..harness.env import allowed_env
from ..ipc.methods import Method
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
        help=f"the coding agent to run (default: [agents] harness in config.toml, else "
        f"{HARNESS_DEFAULT})",
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

    p = sub.add_parser(
        "continue", help="continue now an agent whose turn ended on a usage limit (docs/limits.md)"
    )
    p.add_argument("agent", nargs="?", metavar="AGENT", help="the agent (or --all-limited)")
    p.add_argument(
        "--all-limited",
        dest="all_limited",
        action="store_true",
        help="every agent that waits on a limit",
    )
    p.add_argument("--json", action="store_true", help="print the continued agents' views")
    p.set_defaults(func=cmd_continue)

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
                client.call(Method.DISCOVERY_REFRESH)
            except IpcError:
                pass  # discovery off or failing: list what is known
        agents = client.call(Method.AGENTS_LIST, all=args.all)
        unreachable: dict[str, str] = {}
        if not args.json and any(a.get("reachable") is False for a in agents):
            # "devbox unreachable since 14:02": when, from the machine's own view.
            for m in client.call(Method.MACHINES_LIST):
                if not m["reachable"] and m["since"]:
                    unreachable[m["name"]] = time.strftime("%H:%M", time.localtime(m["since"]))
    if args.json:
        emit_json(agents)
        return 0
    if not agents:
        print("no agents yet: `volee spawn -- 'your task'` starts one")
        return 0
    for line in ls_lines(agents, unreachable, time.time()):
        print(line)
    return 0


def ls_lines(agents: list[dict[str, Any]], unreachable: dict[str, str], now: float) -> list[str]:
    """``volee ls``'s table: a line per agent of ``agents.list``, under a header.

    The state column says ``denied`` or ``interrupted`` for a resting agent whose turn ended
    so (``outcome``), the list's word, never a plain ``done``; the denied request opens its
    detail.
    """
    rows = [("STATE", "NAME", "SINCE", "CONTEXT", "DETAIL", "ID")]
    for a in agents:
        detail = a["detail"] or a["activity"] or ""
        limited = limit_text(a)
        if limited:
            detail = limited
        request = a.get("request")
        if request and request.get("summary"):
            detail = f"{request['kind']}: {request['summary']}"
            if request.get("reason"):
                detail += f" ({request['reason']})"
        if a.get("outcome") == "denied" and a.get("denied"):
            # What was denied first, as the list says it ("denied · Bash: rm -rf build").
            detail = f"{a['denied']} · {detail}" if detail else a["denied"]
        marks = []
        if a.get("held") and a["held"] != detail:
            marks.append(f"held: {a['held']}")
        elif a.get("held"):
            marks.append("held")
        if a.get("interrupted"):
            marks.append(f"interrupted ({a['interrupted']})")
            if a.get("action"):
                marks.append(f"`volee resume` to {a['action']}")
        if a.get("reachable") is False:
            since = unreachable.get(a["machine"])
            marks.append(f"{a['machine']} unreachable" + (f" since {since}" if since else ""))
        if marks:
            detail = f"{detail} [{'; '.join(marks)}]" if detail else f"[{'; '.join(marks)}]"
        # What an agent asks is worth more room than what it last did.
        cut = 110 if request else 70
        share = a.get("context")
        context = f"{round(share * 100)}%" if isinstance(share, (int, float)) else ""
        if context and isinstance(a.get("cost_usd"), (int, float)):
            context += f" ${a['cost_usd']:.2f}"
        since = duration(now - a["state_since"])
        name = f"{a['machine']}:{a['name']}" if a.get("machine") else a["name"]
        state = a.get("outcome") or a["state"]
        rows.append((state, name, since, context, detail[:cut], a["id"]))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=False)) + "  " + r[5]
        for r in rows
    ]


def cmd_timeline(args: argparse.Namespace) -> int:
    items = call(args, Method.AGENTS_TIMELINE, agent=args.agent)
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
    machine = getattr(args, "machine", None)
    if machine and not (args.cwd and args.cwd.startswith("/")):
        raise CliError(f"name the folder on {machine} it works in: --cwd /path/there", 2)
    params: dict[str, Any] = {
        "harness": harness,
        "prompt": prompt,
        "argv": argv,
        "name": args.name,
        "cwd": args.cwd if machine else str(Path(args.cwd or os.getcwd()).absolute()),
        "worktree": args.worktree,
        "role": args.role,
        "mission": args.mission,
        "model": args.model,
        "permission_mode": args.permission_mode,
        # This machine's environment is not the other machine's.
        "env": None if machine else allowed_env(dict(os.environ)),
        "machine": machine,
    }
    with progress("starting the agent (a worktree, the harness)"):
        return created(args, Method.AGENTS_SPAWN, params)


def cmd_send(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    if text == "-":
        text = sys.stdin.read()
    result = call(args, Method.AGENTS_SEND, agent=args.agent, text=text)
    if args.json:
        emit_json(result)
        return 0
    if result.get("resumed"):
        print(f"{args.agent} was not running: resumed with your message", file=sys.stderr)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    agent = call(args, Method.AGENTS_STOP, agent=args.agent)
    if args.json:
        emit_json(agent)
        return 0
    print(f"{agent['name']}: {agent['state']} and held (a message from you lifts the hold)")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"agent": args.agent}
    if args.text:
        params["text"] = " ".join(args.text)
    agent = call(args, Method.AGENTS_RESUME, **params)
    if args.json:
        emit_json(agent)
        return 0
    print(f"{agent['name']}: resumed ({agent['state']})")
    return 0


def limit_text(agent: dict[str, Any]) -> str:
    """ "limited — resets 16:20" for an agent that waits on a limit, else ''."""
    limit = agent.get("limit")
    if not limit or not limit.get("ended") or agent.get("state") != "idle":
        return ""
    resets = limit.get("resets_at")
    if isinstance(resets, (int, float)):
        return f"limited — resets {time.strftime('%H:%M', time.localtime(resets))}"
    return f"limited — {agent.get('detail', '').removeprefix('limited: ')}, reset time not known"


def cmd_continue(args: argparse.Namespace) -> int:
    if bool(args.agent) == bool(args.all_limited):
        raise CliError("name one agent, or give --all-limited (not both)")
    params: dict[str, Any] = {"all": True} if args.all_limited else {"agent": args.agent}
    agents = call(args, Method.AGENTS_CONTINUE, **params)
    if args.json:
        emit_json(agents)
        return 0
    if not agents:
        print("no agent waits on a limit")
    for agent in agents:
        print(f"{agent['name']}: continued ({agent['state']})")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    result = call(args, Method.AGENTS_FORGET, agent=args.agent)
    if args.json:
        emit_json(result)
        return 0
    print(f"forgot {result['name']} ({result['forgotten']})")
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    from ..hosts.attach import attach

    info = call(args, Method.AGENTS_ATTACH_INFO, agent=args.agent)
    if not sys.stdin.isatty():
        raise CliError("`volee attach` needs a terminal (stdin is not a TTY)")
    print(f"attached to {info['name']}; Ctrl-] detaches (the agent keeps running)\r")
    result = attach(info["socket"], sys.stdin.fileno(), sys.stdout.fileno())
    print(f"\r\ndetached from {info['name']}: {result}")
    return 0

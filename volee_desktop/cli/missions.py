"""``volee mission create|ls|show|answer|invite``, ``volee tidy [--dry-run]`` and ``volee mcp``."""

from __future__ import annotations

import argparse
import os
import shlex
import time
from pathlib import Path
from typing import Any

from ..core.durations import duration
from ..harness.env import allowed_env
from ..ipc.methods import Method
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
    """Add ``mission``, ``tidy`` and ``mcp``."""
    mission = sub.add_parser("mission", help="missions: a goal, a coordinator, its workers")
    msub = mission.add_subparsers(dest="mission_command", metavar="ACTION", required=True)

    p = msub.add_parser("create", help="start a mission (spawns its coordinator); prints its id")
    p.add_argument("--goal", required=True, help="what the mission must achieve, in words")
    p.add_argument(
        "--kind",
        choices=["change", "analysis"],
        default="change",
        help="change: workers deliver branches to merge; analysis: a report (default: change)",
    )
    p.add_argument(
        "--repo",
        action="append",
        required=True,
        metavar="PATH",
        dest="repos",
        help="a git repository it works on (repeat for several)",
    )
    p.add_argument(
        "--machine",
        metavar="NAME",
        help="start it on another machine (`volee machine ls`); --repo is a path there",
    )
    p.add_argument("--workers", type=int, metavar="N", help="how many workers to spawn")
    p.add_argument(
        "--harness",
        choices=HARNESS_CHOICES,
        default=HARNESS_DEFAULT,
        help=f"the coding agent for the coordinator and workers (default: {HARNESS_DEFAULT})",
    )
    p.add_argument("--name", help="the coordinator's name (default: from the goal)")
    p.add_argument("--model", help="the harness's model (its own names)")
    p.add_argument(
        "--permission-mode",
        dest="permission_mode",
        metavar="MODE",
        help="the harness's permission mode for the mission's agents",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_create)

    p = msub.add_parser("ls", help="missions, newest first")
    p.add_argument("--all", action="store_true", help="also missions that are over")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ls)

    p = msub.add_parser("show", help="a mission: workers, verdicts, messages")
    p.add_argument("mission", metavar="MISSION")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = msub.add_parser("answer", help="answer the coordinator's report (--option or a text)")
    p.add_argument("mission", metavar="MISSION")
    p.add_argument("--option", help="one of the report's options (the approving one merges)")
    p.add_argument(
        "text", nargs="*", metavar="TEXT", help="your answer in words, instead of --option"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_answer)

    p = msub.add_parser("invite", help="invite an agent to a mission (it joins by itself)")
    p.add_argument("mission", metavar="MISSION")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_invite)

    p = sub.add_parser("tidy", help="remove worktrees whose work is delivered (branches kept)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        dest="dry_run",
        help="say what it would remove; remove nothing",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_tidy)

    p = sub.add_parser("mcp", help="(harnesses start this) volee's MCP server on stdio")
    p.set_defaults(func=cmd_mcp)


def cmd_create(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1 (got {args.workers})")
    machine = args.machine
    if machine and not all(r.startswith("/") for r in args.repos):
        raise CliError(f"name the repositories on {machine} by their paths there: --repo /path", 2)
    params: dict[str, Any] = {
        "goal": args.goal,
        "kind": args.kind,
        "repositories": (
            list(args.repos)
            if machine
            else [str(Path(r).expanduser().absolute()) for r in args.repos]
        ),
        "workers": args.workers,
        "harness": args.harness,
        "name": args.name,
        "model": args.model,
        "permission_mode": args.permission_mode,
        # This machine's environment is not the other machine's.
        "env": None if machine else allowed_env(dict(os.environ)),
        "machine": machine,
    }
    return created(args, Method.MISSIONS_CREATE, params)


def cmd_ls(args: argparse.Namespace) -> int:
    missions = call(args, Method.MISSIONS_LIST, all=args.all)
    if args.json:
        emit_json(missions)
        return 0
    if not missions:
        print("no missions yet: `volee mission create --goal … --repo PATH` starts one")
        return 0
    now = time.time()
    for m in missions:
        workers = [a for a in m["agents"] if a["role"] == "worker"]
        where = f"{m['machine']}:" if m.get("machine") else ""
        print(
            f"{m['status']:<17} {where}{m['id']}  {m['kind']:<8} {len(workers)} worker(s)  "
            f"{duration(now - m['updated_at'])} ago  {m['goal'][:60]}"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    m = call(args, Method.MISSIONS_SHOW, mission=args.mission)
    if args.json:
        emit_json(m)
        return 0
    ref = f"{m['machine']}:{m['id']}" if m.get("machine") else m["id"]
    print(f"mission {ref} ({m['kind']}): {m['status']}")
    if m.get("reason"):
        print(f"  why: {m['reason']}")
    print(f"  goal: {m['goal']}")
    print(f"  repositories: {', '.join(m['repositories'])}")
    for a in m["agents"]:
        said = f"  {a['verdict']}: {a['verdict_reason']}" if a.get("verdict") else ""
        print(f"  {a['role']:<11} {a['name']:<24} {a['state']:<11}{said}")
        if a.get("delivery") and m["kind"] == "change" and a["role"] != "coordinator":
            print(f"{'':<14}evidence: {evidence(a['delivery'])}")
    if m.get("messages"):
        print("messages:")
    question = None
    for msg in m.get("messages", []):
        stamp = time.strftime("%H:%M:%S", time.localtime(msg["at"]))
        to = ", ".join(msg["recipient_names"])
        print(f"  {stamp} {msg['sender_name']} -> {to} [{msg['kind']}] {msg['body']}")
        if msg.get("options"):
            print(
                f"           options: {', '.join(msg['options'])} (approving: {msg['approving']})"
            )
        if msg["id"] == m.get("report"):
            question = msg
    if m["status"] == "awaiting-approval" and question is not None:
        print(
            f"answer with: volee mission answer {ref} --option "
            f"{shlex.quote(question['approving'])}"
            " (approves: merges every worker's branch and closes the mission),"
            " another --option, or a text (back to the coordinator)"
        )
    return 0


def evidence(d: dict[str, Any]) -> str:
    """A worker's delivery evidence in one line: branch, commits, push, pull request, tree."""
    base = d.get("base") or "the base branch"
    if d.get("merged_into_base"):
        commits = f"merged into {base}"
    else:
        n = d.get("commits") or 0
        commits = f"{n} commit{'s' if n != 1 else ''} ahead of {base}"
    parts = [f"branch {d.get('branch') or '?'}", commits, PUSHED.get(d.get("pushed") or "", "?")]
    if d.get("pushed") != "no-remote":
        pr = d.get("pull_request")
        if pr:
            where = "at the tip" if pr.get("head") == d.get("tip") else "NOT at the tip"
            parts.append(f"pull request #{pr['number']} {pr['state']} {where}")
        elif d.get("pull_request_known"):
            parts.append("no pull request")
        else:
            parts.append("pull request unknown")
    clean = d.get("clean")
    parts.append(
        "clean tree" if clean else "tree unread" if clean is None else "uncommitted changes"
    )
    read = time.strftime("%H:%M:%S", time.localtime(d.get("checked_at") or 0))
    return ", ".join(parts) + f" (read {read})"


PUSHED = {
    "pushed": "pushed",
    "unpushed": "not pushed",
    "no-remote": "no remote",
    "unknown": "push state unknown",
}


def cmd_answer(args: argparse.Namespace) -> int:
    text = " ".join(args.text) or None
    if args.option is None and text is None:
        raise CliError(
            f"answer with --option OPTION or a text; `volee mission show {args.mission}` "
            "lists the report's options"
        )
    params: dict[str, Any] = {"mission": args.mission}
    if args.option is not None:
        params["option"] = args.option
    if text is not None:
        params["text"] = text
    # An approval merges every worker's branch before the daemon replies: give it time.
    with (
        progress("answering the mission (an approval merges its branches)"),
        connect(dirs(), timeout=300.0) as client,
    ):
        view = client.call(Method.MISSIONS_ANSWER, **params)
    if args.json:
        emit_json(view)
        return 0
    print(
        f"mission {view['id']}: {view['status']}"
        + (f" ({view['reason']})" if view.get("reason") else "")
    )
    if view["status"] == "approved":
        print(f"still merging: `volee mission show {view['id']}` follows it")
    return 0


def cmd_invite(args: argparse.Namespace) -> int:
    view = call(args, Method.MISSIONS_INVITE, mission=args.mission, agent=args.agent)
    if args.json:
        emit_json(view)
        return 0
    print(
        f"invited {args.agent} to mission {view['id']}: it joins with volee's MCP tool "
        "join_mission (it was told)"
    )
    return 0


def cmd_tidy(args: argparse.Namespace) -> int:
    with connect(dirs(), timeout=300.0) as client:
        entries = client.call(Method.TIDY, dry_run=args.dry_run)
    if args.json:
        emit_json(entries)
        return 0
    if not entries:
        print("no worktrees to tidy")
        return 0
    for e in entries:
        if e["removed"]:
            print(f"removed  {e['worktree']} ({e['name']}; branch {e['branch']} kept)")
        elif e["removable"]:
            print(f"would remove  {e['worktree']} ({e['name']}; branch {e['branch']} kept)")
        else:
            print(f"kept     {e['worktree']} ({e['name']}): {'; '.join(e['missing'])}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..mcp.relay import main

    return main([])

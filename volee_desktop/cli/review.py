"""``volee log|merge|pr|discard``: read what an agent did, then merge its change, propose it as
a pull request, or throw it away."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..ipc.methods import Method
from ..paths import dirs
from .common import CliError, Commands, call, connect, emit_json

#: Characters of a tool's result shown in the text form (``--json`` has it all).
RESULT_LINE = 160


def add_commands(sub: Commands) -> None:
    """Add the review commands."""
    p = sub.add_parser("log", help="an agent's conversation: prompts, replies, tool calls")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N entries")
    p.add_argument("--json", action="store_true", help="one JSON object per entry, per line")
    p.set_defaults(func=cmd_log)

    p = sub.add_parser("merge", help="merge an agent's branch into its base branch")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--squash", action="store_true", help="as one commit (with --message)")
    p.add_argument(
        "--message",
        metavar="TEXT",
        help="the merge commit's or squashed commit's message (a fast-forward makes none)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser(
        "pr", help="push an agent's branch and open its pull request (GitHub, with the token)"
    )
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--title", metavar="TEXT", help="its title (default: NAME: its task)")
    p.add_argument("--body", metavar="TEXT", help="its description (default: the agent's task)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_pr)

    p = sub.add_parser("discard", help="remove an agent's worktree and branch (says what is lost)")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_discard)


def entry_lines(entry: dict[str, Any]) -> list[str]:
    """One entry of a conversation as text lines."""
    kind = entry.get("kind")
    text = str(entry.get("text") or "")
    if kind == "tool":
        lines = [f"  > {text}"]
        result = entry.get("result")
        if isinstance(result, str):
            first = next((line for line in result.splitlines() if line.strip()), "(no output)")
            mark = "x" if entry.get("error") else "="
            lines.append(f"    {mark} {first[:RESULT_LINE]}")
        return lines
    label = {"user": "you", "assistant": "agent", "volee": "volee", "error": "error"}.get(
        str(kind), str(kind)
    )
    body = text.splitlines() or [""]
    return [f"{label}: {body[0]}", *(f"  {line}" for line in body[1:])]


def cmd_log(args: argparse.Namespace) -> int:
    if args.tail is not None and args.tail < 1:
        raise CliError("--tail must be 1 or more", 2)
    params: dict[str, Any] = {"agent": args.agent}
    if args.tail is not None:
        params["tail"] = args.tail
    with connect(dirs()) as client:
        page = client.call(Method.AGENTS_LOG, **params)
        pages = [page]
        while page.get("next") is not None:
            page = client.call(Method.AGENTS_LOG, agent=args.agent, start=page["next"])
            pages.append(page)
    first = pages[0]
    for page in pages:
        for entry in page["entries"]:
            if args.json:
                print(json.dumps(entry, ensure_ascii=False))
            else:
                print("\n".join(entry_lines(entry)))
    if first.get("notice"):
        print(f"volee: {first['notice']}", file=sys.stderr)
    if pages[-1].get("partial"):
        print("volee: the last line is incomplete (being written, or cut off)", file=sys.stderr)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"agent": args.agent, "squash": args.squash}
    if args.message:
        params["message"] = args.message
    result = call(args, Method.AGENTS_MERGE, **params)
    if args.json:
        emit_json(result)
    if not result.get("merged"):
        print(f"volee: {result['text']}", file=sys.stderr)
        return 1
    if not args.json:
        print(result["text"])
    return 0


def cmd_pr(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"agent": args.agent}
    for key in ("title", "body"):
        if getattr(args, key):
            params[key] = getattr(args, key)
    result = call(args, Method.AGENTS_OPEN_PR, **params)
    if args.json:
        emit_json(result)
    else:
        print(result["text"])
    return 0


def cmd_discard(args: argparse.Namespace) -> int:
    with connect(dirs()) as client:
        preview = client.call(Method.AGENTS_DISCARD, agent=args.agent, dry_run=True)
        lost = preview["lost"]
        if not args.yes:
            print(preview["text"], file=sys.stderr)
            for commit in lost["commits"]:
                print(f"  commit {commit}", file=sys.stderr)
            for name in lost["uncommitted"][:20]:
                print(f"  file   {name}", file=sys.stderr)
            if not sys.stdin.isatty():
                raise CliError("not discarded: run it again with --yes to discard without asking")
            answer = input("discard? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("not discarded", file=sys.stderr)
                return 1
        result = client.call(Method.AGENTS_DISCARD, agent=args.agent)
    if args.json:
        emit_json(result)
    else:
        print(result["text"])
    return 0

"""``volee allow|deny|answer|output``: answer what an agent asks, and read its screen."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.answer import Answer, AnswerError
from ..ipc.methods import Method
from .common import CliError, Commands, call, emit_json


def add_commands(sub: Commands) -> None:
    """Add the answering commands."""
    p = sub.add_parser("allow", help="allow what an agent asks (checked on its screen first)")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument(
        "--always", action="store_true", help="and do not ask again (the dialog's own option)"
    )
    p.add_argument("--request", metavar="ID", help="only if it still asks this (rq_…)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_allow)

    p = sub.add_parser("deny", help="deny what an agent asks; it carries on without it")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--reason", metavar="TEXT", help="told to the agent as your next message")
    p.add_argument("--request", metavar="ID", help="only if it still asks this (rq_…)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_deny)

    p = sub.add_parser("answer", help="answer an agent's question: an option number or a reply")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("option", nargs="?", type=int, metavar="OPTION", help="the option's number")
    p.add_argument("--reply", metavar="TEXT", help="your own answer instead of an option")
    p.add_argument("--request", metavar="ID", help="only if it still asks this (rq_…)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser("output", help="an agent's screen as text (the last one if it ended)")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument(
        "--lines", type=int, default=40, metavar="N", help="the last N lines (default: 40)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_output)


def _answered(args: argparse.Namespace, result: dict[str, Any]) -> int:
    if args.json:
        emit_json(result)
    else:
        print(f"{result['name']}: {result['answer']} ({result['summary']})")
    return 0


def _give(args: argparse.Namespace, answer: Answer) -> int:
    method, params = answer.call(args.agent, args.request)
    return _answered(args, call(args, method, **params))


def cmd_allow(args: argparse.Namespace) -> int:
    return _give(args, Answer.allow(always=args.always))


def cmd_deny(args: argparse.Namespace) -> int:
    return _give(args, Answer.deny(args.reason or ""))


def cmd_answer(args: argparse.Namespace) -> int:
    if (args.option is None) == (args.reply is None):
        raise CliError("give an OPTION number or --reply TEXT (one of them)", 2)
    try:
        answer = Answer.pick(args.option) if args.option is not None else Answer.reply(args.reply)
    except AnswerError as exc:
        raise CliError(str(exc), 2) from None
    return _give(args, answer)


def cmd_output(args: argparse.Namespace) -> int:
    if args.lines < 1:
        raise CliError("--lines must be 1 or more", 2)
    result = call(args, Method.AGENTS_OUTPUT, agent=args.agent, lines=args.lines)
    if args.json:
        emit_json(result)
    else:
        print(result["text"])
    return 0

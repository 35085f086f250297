"""What every ``volee`` command follows: help on each option, an example each, completion.

``finish(parser)`` runs once the groups have added their commands: it gives each command its
example (``EXAMPLES``; tests/cli/test_conventions.py requires one per command), fills in the
help of the options every command shares (``--json``, AGENT, MISSION, …) and adds
``volee completion bash|zsh|fish``. (``common.progress()`` says on stderr that a command still
works once it has taken more than two seconds.)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from .common import Commands

#: An example per command, by its path (``"mission answer"``).
EXAMPLES: dict[str, str] = {
    "app": "volee app",
    "daemon": "volee daemon status",
    "daemon run": "volee daemon run",
    "daemon status": "volee daemon status --json",
    "daemon stop": "volee daemon stop",
    "config": "volee config confirm",
    "config confirm": "volee config confirm",
    "daemon repair": "volee daemon repair",
    "daemon install": "volee daemon install",
    "daemon uninstall": "volee daemon uninstall",
    "whoami": "volee whoami --json",
    "ls": "volee ls --json | jq '.[] | select(.request) | .name'",
    "timeline": "volee timeline api-fixer",
    "spawn": "volee spawn --worktree --name api-fixer -- 'make the API tests pass'",
    "send": "volee send api-fixer 'use the v2 client instead'",
    "stop": "volee stop api-fixer",
    "resume": "volee resume api-fixer 'carry on from the failing test'",
    "continue": "volee continue --all-limited",
    "forget": "volee forget api-fixer --json",
    "attach": "volee attach api-fixer",
    "allow": "volee allow api-fixer --always",
    "deny": "volee deny api-fixer --reason 'no network calls in tests'",
    "answer": "volee answer api-fixer 2",
    "output": "volee output api-fixer --lines 20",
    "log": "volee log api-fixer --tail 20",
    "merge": "volee merge api-fixer --squash --message 'Fix the API tests'",
    "discard": "volee discard api-fixer --yes",
    "pr": "volee pr api-fixer --title 'Fix the API tests'",
    "hook": "volee hook PreToolUse < payload.json",
    "mission": "volee mission ls",
    "mission create": "volee mission create --goal 'Upgrade to pydantic 2' --repo . --workers 3",
    "mission ls": "volee mission ls --all",
    "mission show": "volee mission show mi_01J",
    "mission answer": "volee mission answer mi_01J --option approve",
    "mission invite": "volee mission invite mi_01J docs-writer",
    "tidy": "volee tidy --dry-run",
    "mcp": "volee mcp",
    "desktop-entry": "volee desktop-entry install",
    "desktop-entry install": "volee desktop-entry install",
    "desktop-entry uninstall": "volee desktop-entry uninstall --json",
    "machine": "volee machine ls",
    "machine add": "volee machine add devbox --ssh devbox-volee",
    "machine ls": "volee machine ls --json",
    "machine rm": "volee machine rm devbox",
    "bridge": "volee bridge < requests.ndjson",
    "completion": "volee completion bash > ~/.local/share/bash-completion/completions/volee",
}

#: Help for what many commands take, where a command gives none of its own.
SHARED_HELP: dict[str, str] = {
    "--json": "print the result as JSON (on failure: an object with `error`)",
    "AGENT": "an agent: its id (ag_…), a unique prefix of it, or its unique name",
    "MISSION": "a mission: its id (mi_…), a unique prefix of it, or its unique name",
    "TEXT": "the words of the message (`-` reads them from stdin)",
    "PROMPT": "the agent's first task (after `--`); for --harness generic: the command to run",
    "EVENT": "the hook's name, as the harness calls it (PreToolUse, Stop, …)",
}

SHELLS = ("bash", "zsh", "fish")


class VoleeParser(argparse.ArgumentParser):
    """An ArgumentParser that keeps, in the open, what it was given: its arguments and its
    commands (``finish``, the completion scripts and the tests walk them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arguments: list[argparse.Action] = []
        self.commands: dict[str, VoleeParser] = {}
        self.command_help: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action

    def add_subparsers(self, **kwargs: Any) -> Any:
        table = super().add_subparsers(**kwargs)
        add = table.add_parser
        owner = self

        def add_parser(name: str, **options: Any) -> VoleeParser:
            child = add(name, **options)
            assert isinstance(child, VoleeParser)
            owner.commands[name] = child
            owner.command_help[name] = str(options.get("help") or "")
            return child

        table.add_parser = add_parser  # type: ignore[method-assign]
        return table


def commands(
    parser: VoleeParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], VoleeParser]]:
    """Every command under ``parser`` with its path (groups too), depth first."""
    for name, child in parser.commands.items():
        yield (*path, name), child
        yield from commands(child, (*path, name))


def _key(action: argparse.Action) -> str:
    if action.option_strings:
        return action.option_strings[-1]
    return str(action.metavar or action.dest)


def finish(parser: VoleeParser, sub: Commands) -> None:
    """Add ``completion``; give every command its example and every option its help."""
    add_completion(sub, parser)
    for path, command in commands(parser):
        example = EXAMPLES.get(" ".join(path))
        if example is not None:
            command.epilog = f"example:\n  {example}"
            command.formatter_class = argparse.RawDescriptionHelpFormatter
        for action in command.arguments:
            if action.help is None:
                action.help = SHARED_HELP.get(_key(action))


def add_completion(sub: Commands, root: VoleeParser) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")

    def cmd_completion(args: argparse.Namespace) -> int:
        sys.stdout.write(completion(root, args.shell))
        return 0

    p.set_defaults(func=cmd_completion)


def completion(parser: VoleeParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (shtab for bash and zsh)."""
    if shell == "fish":
        return fish(parser)
    import shtab

    return str(shtab.complete(parser, shell=shell))


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(parser: VoleeParser) -> str:
    """fish completions: the commands at each level, then each command's options."""
    prog = parser.prog
    lines = [f"# fish completion for {prog} (volee completion fish)", f"complete -c {prog} -f"]

    def seen(path: tuple[str, ...]) -> str:
        return "; and ".join(f"__fish_seen_subcommand_from {p}" for p in path)

    def command_condition(path: tuple[str, ...], children: list[str]) -> str:
        if not path:
            return "__fish_use_subcommand"
        return f"{seen(path)}; and not __fish_seen_subcommand_from {' '.join(children)}"

    def walk(node: VoleeParser, path: tuple[str, ...]) -> None:
        children = list(node.commands)
        for name in children:
            text = node.command_help.get(name, "")
            lines.append(
                f"complete -c {prog} -n {_fish_quote(command_condition(path, children))} -a {name}"
                + (f" -d {_fish_quote(text)}" if text else "")
            )
        for action in node.arguments:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            flags = " ".join(
                f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}"
                for o in action.option_strings
            )
            cond = seen(path) if path else "__fish_use_subcommand"
            extra = ""
            if action.choices:
                extra = " -x -a " + _fish_quote(" ".join(str(c) for c in action.choices))
            elif action.nargs != 0:
                extra = " -r"
            desc = f" -d {_fish_quote(action.help)}" if action.help else ""
            lines.append(f"complete -c {prog} -n {_fish_quote(cond)} {flags}{extra}{desc}")
        for name, child in node.commands.items():
            walk(child, (*path, name))

    walk(parser, ())
    return "\n".join(lines) + "\n"

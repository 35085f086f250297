"""The conventions every `volee` command follows (docs/architecture.md, "CLI contract")."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.polling import wait_until
from volee_desktop.cli import common, conventions
from volee_desktop.cli.main import build_parser

# Commands that change nothing (or hand the terminal over): no --json needed.
READ_ONLY = {
    "app",
    "attach",
    "bridge",
    "completion",
    "daemon run",
    "hook",
    "ls",
    "mcp",
    "mission ls",
    "mission show",
    "output",
    "timeline",
    "whoami",
    "daemon status",
}


def volee(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env or os.environ.copy(),
    )


def leaves() -> list[tuple[str, conventions.VoleeParser]]:
    return [
        (" ".join(path), command)
        for path, command in conventions.commands(build_parser())
        if not command.commands
    ]


def test_every_command_has_an_example() -> None:
    for path, command in conventions.commands(build_parser()):
        name = " ".join(path)
        assert command.epilog, name
        assert command.epilog.startswith("example:\n  volee"), name


def test_every_option_and_argument_has_help_text() -> None:
    missing = [
        f"{' '.join(path)} {conventions._key(action)}"
        for path, command in conventions.commands(build_parser())
        for action in command.arguments
        if not action.help
    ]
    assert not missing, missing


def test_every_command_that_changes_something_takes_json() -> None:
    lacking = [
        name
        for name, command in leaves()
        if name not in READ_ONLY and not any("--json" in a.option_strings for a in command._actions)  # type: ignore[attr-defined]
    ]
    assert not lacking, lacking


def test_the_version() -> None:
    assert volee("--version").stdout.startswith("volee ")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_parse_in_their_shell(shell: str, tmp_path: Path) -> None:
    done = volee("completion", shell)
    assert done.returncode == 0, done.stderr
    script = tmp_path / f"volee.{shell}"
    script.write_text(done.stdout)
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (scripts/dev test installs it)")
    check = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


def test_bash_and_fish_complete_a_command_and_its_choices(tmp_path: Path) -> None:
    bash = tmp_path / "volee.bash"
    bash.write_text(volee("completion", "bash").stdout)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'source {bash}; COMP_WORDS=(volee spa); COMP_CWORD=1; COMP_LINE="volee spa"; '
            'COMP_POINT=9; _shtab_volee; echo "${COMPREPLY[@]}"',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["spawn"]
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed")
    fish = tmp_path / "volee.fish"
    fish.write_text(volee("completion", "fish").stdout)
    done = subprocess.run(
        ["fish", "-c", f'source {fish}; complete -C "volee spawn --harness "'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert {line.split("\t")[0] for line in done.stdout.splitlines()} >= {"claude", "generic"}


def test_a_volee_home_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home-file"
    home.write_text("")
    env = dict(os.environ, VOLEE_HOME=str(home))
    done = volee("ls", env=env)
    assert done.returncode == 2
    assert "is a file, not a folder" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_failure_with_json_prints_an_error_object(tmp_path: Path) -> None:
    try:
        done = volee("stop", "nobody-by-this-name", "--json")
        assert done.returncode != 0
        error = json.loads(done.stdout)["error"]
        assert error["code"]
        assert "nobody-by-this-name" in error["message"]
        assert "volee: " in done.stderr
    finally:
        volee("daemon", "stop")


def test_progress_is_said_on_stderr_only_once_it_takes_long() -> None:
    out = io.StringIO()
    with common.progress("doing it", after=3600, stream=out):
        pass
    assert out.getvalue() == ""  # quick: nothing said (the teller was let go at once)
    with common.progress("merging", after=0.01, stream=out):
        wait_until(lambda: "volee: merging…" in out.getvalue(), what="the progress line")
    assert out.getvalue().count("merging") == 1


def test_a_reader_that_leaves_is_no_error_but_other_os_errors_are_one_line() -> None:
    code = (
        "import sys\n"
        "from volee_desktop.cli import agents, main\n"
        "def leave(args):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "def denied(args):\n"
        "    raise PermissionError(13, 'Permission denied', '/x/state')\n"
        "agents.cmd_ls = leave\n"
        "agents.cmd_timeline = denied\n"
        "first = main.main(['ls'])\n"
        "second = main.main(['timeline', 'x'])\n"
        "sys.stderr.write(f'status {first} {second}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "status 0 1" in done.stderr
    assert "volee: Permission denied (/x/state)" in done.stderr
    assert "Traceback" not in done.stderr

"""``volee machine …`` and ``--machine NAME``: parsed, folded into NAME:AGENT, refused when bad."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from volee_desktop.cli import machines
from volee_desktop.cli.common import CliError
from volee_desktop.cli.main import build_parser, main
from volee_desktop.config import load_config
from volee_desktop.paths import dirs


@pytest.mark.parametrize(
    "argv",
    [
        ["allow", "builder", "--machine", "devbox"],
        ["stop", "builder", "--machine", "devbox"],
        ["output", "builder", "--machine", "devbox"],
        ["timeline", "builder", "--machine", "devbox"],
        ["send", "builder", "hi", "--machine", "devbox"],
        ["allow", "devbox:builder"],
    ],
)
def test_machine_option_means_name_colon_agent(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    machines.target(args)
    assert args.agent == "devbox:builder"


def test_two_machines_for_one_agent_is_refused() -> None:
    args = argparse.Namespace(agent="devbox:builder", machine="other")
    with pytest.raises(CliError, match="names machine 'devbox', but --machine says 'other'"):
        machines.target(args)


def test_spawn_there_needs_a_folder_there(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spawn", "--machine", "devbox", "--", "fix it"]) == 2
    assert "name the folder on devbox it works in: --cwd /path/there" in capsys.readouterr().err


def test_a_bad_name_is_refused_and_nothing_is_kept(volee_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", "machine", "add", "dev box", "--ssh", "x"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "'dev box' cannot name a machine" in done.stderr
    assert load_config(dirs().config_file).config.machines == {}


def test_removing_an_unknown_machine_says_so(volee_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "volee_desktop.cli", "machine", "rm", "nope"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "no machine named 'nope'; `volee machine ls` lists them" in done.stderr

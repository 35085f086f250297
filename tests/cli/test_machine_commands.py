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


def test_with_no_daemon_here_machines_are_kept_listed_and_removed_in_the_config(
    volee_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Windows runs no volee daemon (its agents run in a WSL machine): `machine add` used to
    # ask the local daemon to reload, and failed; it keeps the machine and says what to do.
    monkeypatch.setattr(machines, "LOCAL_DAEMON", False)

    def no_daemon(*_args: object, **_kw: object) -> None:
        raise AssertionError("no daemon may be asked or started here")

    monkeypatch.setattr(machines, "connect", no_daemon)
    via = r"C:\Windows\System32\wsl.exe -d Ubuntu --"
    assert main(["machine", "add", "wsl", "--via", via, "--volee", "/home/me/bin/volee"]) == 0
    out = capsys.readouterr().out
    assert "wsl: kept; no volee daemon runs on this machine: `volee app` reads" in out
    assert load_config(dirs().config_file).config.machines["wsl"].via == via
    assert main(["machine", "ls"]) == 0
    listed = capsys.readouterr().out
    assert "wsl " in listed
    assert f"via {via!r}: no volee daemon runs on this machine" in listed
    assert main(["machine", "rm", "wsl"]) == 0
    assert "wsl: no longer shown" in capsys.readouterr().out
    assert load_config(dirs().config_file).config.machines == {}


@pytest.mark.parametrize(
    ("via", "windows", "words"),
    [
        (r"C:\Windows\System32\wsl.exe -d Ubuntu --", True,
         ["C:\\Windows\\System32\\wsl.exe", "-d", "Ubuntu", "--"]),
        (r'"C:\Program Files\WSL\wsl.exe" -d Ubuntu --', True,
         ["C:\\Program Files\\WSL\\wsl.exe", "-d", "Ubuntu", "--"]),
        (r"C:\Windows\System32\wsl.exe -d Ubuntu --", False,
         ["C:WindowsSystem32wsl.exe", "-d", "Ubuntu", "--"]),
        ("docker exec -i 'my box' #1", False, ["docker", "exec", "-i", "my box", "#1"]),
    ],
)  # fmt: skip
def test_a_via_command_is_split_as_its_platforms_shell_would(
    via: str, windows: bool, words: list[str]
) -> None:
    from volee_desktop.machines import split_command

    # On Windows a backslash is a path's (it was an escape: "C:WindowsSystem32wsl.exe").
    assert split_command(via, windows=windows) == words

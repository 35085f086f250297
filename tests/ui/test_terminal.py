"""Which terminal opens an agent, and with what argv (pure builders, fake `which`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from volee_desktop.app.terminal import attach_command, mac_script, terminal_argv


def which_of(*present: str) -> Callable[[str], str | None]:
    def which(name: str) -> str | None:
        base = Path(name).name
        return f"/usr/bin/{base}" if base in present or name in present else None

    return which


CMD = attach_command("ag_1", ["/opt/volee/bin/volee"])


def test_attach_command() -> None:
    assert CMD == ["/opt/volee/bin/volee", "attach", "ag_1"]


def test_terminal_variable_wins_with_its_run_flag() -> None:
    argv = terminal_argv(CMD, {"TERMINAL": "kitty"}, which_of("kitty", "xterm"), "linux")
    assert argv == ["kitty", *CMD]
    argv = terminal_argv(CMD, {"TERMINAL": "gnome-terminal"}, which_of("gnome-terminal"), "linux")
    assert argv == ["gnome-terminal", "--", *CMD]
    argv = terminal_argv(CMD, {"TERMINAL": "myterm"}, which_of("myterm"), "linux")
    assert argv == ["myterm", "-e", *CMD]


def test_terminal_with_its_own_arguments_is_taken_as_written() -> None:
    argv = terminal_argv(CMD, {"TERMINAL": "wezterm start --"}, which_of("wezterm"), "linux")
    assert argv == ["wezterm", "start", "--", *CMD]


def test_fallbacks_in_order_and_none_without_a_terminal() -> None:
    env: dict[str, str] = {"TERMINAL": "not-installed"}
    assert terminal_argv(CMD, env, which_of("xterm", "konsole"), "linux") == [
        "/usr/bin/konsole",
        "-e",
        *CMD,
    ]
    assert terminal_argv(CMD, {}, which_of("x-terminal-emulator", "xterm"), "linux") == [
        "/usr/bin/x-terminal-emulator",
        "-e",
        *CMD,
    ]
    assert terminal_argv(CMD, {}, which_of(), "linux") is None


def test_macos_runs_a_command_script_in_terminal_app(tmp_path: Path) -> None:
    assert terminal_argv(CMD, {}, which_of("xterm"), "darwin") is None
    script, argv = mac_script(CMD, tmp_path)
    assert argv == ["open", "-a", "Terminal", str(script)]
    assert script.suffix == ".command"
    assert "exec /opt/volee/bin/volee attach ag_1" in script.read_text()
    assert script.stat().st_mode & 0o100

"""What ``volee app`` imports before its first paint (issue 27: start like a native app)."""

from __future__ import annotations

import os
import subprocess
import sys


def loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules of a fresh interpreter after running ``code``."""
    script = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return set(out.stdout.split())


def test_volee_app_alone_builds_no_parser_of_the_other_commands() -> None:
    """`volee app` (the login item, the menu entry) runs without importing every command
    group; without a desktop it still says what to run instead (the same answer)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    code = (
        "from volee_desktop.cli.main import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stderr(io.StringIO()) as err:\n"
        "    status = main(['app'])\n"
        "assert status == 2 and 'needs a desktop session' in err.getvalue(), err.getvalue()"
    )
    modules = loaded_after(code, env)
    groups = {f"volee_desktop.cli.{name}" for name in ("agents", "answers", "missions", "review")}
    assert not groups & modules
    assert "volee_desktop.harness.choices" not in modules


def test_the_daemon_and_the_app_load_the_terminal_emulator_with_the_first_screen() -> None:
    """pyte (and wcwidth's tables) load with the first agent's screen, not at start."""
    modules = loaded_after(
        "import volee_desktop.daemon.main, volee_desktop.app.main, volee_desktop.app.embed"
    )
    assert "volee_desktop.daemon.main" in modules
    assert not {"pyte", "wcwidth"} & modules

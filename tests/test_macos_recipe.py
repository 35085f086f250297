"""The macOS recipe, as far as Linux can check it: the bundle's Info.plist and its layout.

The .app itself is built on a macOS runner (.github/workflows/macos.yml; untested, see
installers/macos/README.md).
"""

from __future__ import annotations

import plistlib
import subprocess
import sys
from pathlib import Path

from volee_desktop import __version__, datafiles

sys.path.insert(0, str(datafiles.CHECKOUT / "installers" / "macos"))
import build_app


def test_info_plist_is_a_menu_bar_app_with_the_launch_agents_bundle_id() -> None:
    info = plistlib.loads(plistlib.dumps(build_app.info_plist(__version__)))
    assert info["CFBundleIdentifier"] == "com.volee.desktop"
    assert info["LSUIElement"] is True
    assert info["CFBundleExecutable"] == "volee"
    assert info["CFBundleShortVersionString"] == __version__
    template = (datafiles.CHECKOUT / "launchd" / "com.volee.desktop.plist.in").read_text()
    assert f"<string>{build_app.BUNDLE_ID}</string>" in template


def test_the_interpreter_goes_in_contents_macos_with_its_library_beside_it(
    tmp_path: Path,
) -> None:
    prefix = tmp_path / "python"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "python3.12").mkdir(parents=True)
    (prefix / "lib" / "python3.12" / "os.py").write_text("")
    (prefix / "bin" / "python3.12").write_text('#!/bin/sh\necho python "$@"\n')
    (prefix / "bin" / "python3.12").chmod(0o755)
    (prefix / "bin" / "python3").symlink_to("python3.12")
    (prefix / "bin" / "pip3").write_text("")
    app = tmp_path / "volee.app"
    python = build_app.lay_out(app, prefix, "1.2.3")
    assert python == app / "Contents" / "MacOS" / "python3"
    assert python.is_symlink()
    assert (app / "Contents" / "lib" / "python3.12" / "os.py").is_file()
    assert not (app / "Contents" / "MacOS" / "pip3").exists()
    launcher = app / "Contents" / "MacOS" / "volee"
    done = subprocess.run([str(launcher), "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "python -m volee_desktop.cli --version"
    info = plistlib.loads((app / "Contents" / "Info.plist").read_bytes())
    assert info["CFBundleVersion"] == "1.2.3"

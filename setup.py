"""Build hook: a wheel carries the top-level data folders as ``volee_desktop/_data/``.

The folders stay where they are in git (one copy); ``volee_desktop/datafiles.py`` finds them
in either place. An editable install skips the copy and reads the checkout's folders.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# Keep in step with volee_desktop.datafiles.FOLDERS (tests/test_packaging.py checks the wheel).
FOLDERS = ("resources", "systemd", "launchd")


class BuildPyWithData(build_py):
    """build_py that also copies the data folders into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "volee_desktop" / "_data"
        for folder in FOLDERS:
            source = ROOT / folder
            if not source.is_dir():
                raise SystemExit(
                    f"cannot build volee: the data folder {source} is missing; "
                    "build from a full checkout or an sdist made from one"
                )
            shutil.copytree(
                source,
                target / folder,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )


setup(cmdclass={"build_py": BuildPyWithData})

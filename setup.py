"""Build hook: a wheel carries the top-level data folders as ``volee_desktop/_data/``, and
the native host built from ``volee_desktop/hosts/native/volee_host.c``.

The folders stay where they are in git (one copy); ``volee_desktop/datafiles.py`` finds them
in either place. An editable install skips the copy and reads the checkout's folders.

The native host (one ``cc`` line, libc only) goes into the wheel's package, or into the
checkout for an editable install (``pip install -e .``); without a C compiler the build says
so and goes on: the launcher then starts the Python host.  A wheel with it is tagged for this
platform (``py3-none-linux_x86_64``), one without it stays ``py3-none-any``.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# Keep in step with volee_desktop.datafiles.FOLDERS (tests/test_packaging.py checks the wheel).
FOLDERS = ("resources", "systemd", "launchd")


def _native() -> ModuleType:
    """volee_desktop.hosts.native from this checkout (stdlib only, like the modules it
    imports: volee_desktop, hosts and hosts.errors hold no more than their names)."""
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("volee_desktop.hosts.native")
    finally:
        sys.path.remove(str(ROOT))


BUILT_NATIVE: list[Path] = []


def build_native(package_dir: Path) -> None:
    """Compile the native host into ``package_dir``/hosts/native; warn if it cannot be."""
    native = _native()
    out = package_dir / "hosts" / "native" / native.BINARY.name
    try:
        native.build(out, source=native.SOURCE)
    except native.NativeBuildError as exc:
        print(
            f"warning: the native host is not built ({exc}); volee uses the Python host",
            file=sys.stderr,
        )
        return
    BUILT_NATIVE.append(out)


def drop_native_source(package_dir: Path) -> None:
    """A wheel carries the native binary alone: not its C source (MANIFEST.in puts it in the
    sdist, and package data would follow it here) nor the stamp of its hash, which only a
    checkout needs to tell an edited source from the built one (hosts/native.binary)."""
    native = package_dir / "hosts" / "native"
    for name in ("volee_host.c", "volee-host.sha256"):
        (native / name).unlink(missing_ok=True)


class BuildPyWithData(build_py):
    """build_py that also copies the data folders into the built package, and builds the
    native host."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            build_native(ROOT / "volee_desktop")
            return
        build_native(Path(self.build_lib) / "volee_desktop")
        drop_native_source(Path(self.build_lib) / "volee_desktop")
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


class PlatformWheel(bdist_wheel):
    """A wheel that carries the native host is this platform's, not every platform's."""

    def get_tag(self) -> tuple[str, str, str]:
        python, abi, plat = super().get_tag()
        if BUILT_NATIVE and not getattr(self, "editable_mode", False):
            self.root_is_pure = False
            plat = super().get_tag()[2]
            return "py3", "none", plat
        return python, abi, plat


setup(cmdclass={"build_py": BuildPyWithData, "bdist_wheel": PlatformWheel})

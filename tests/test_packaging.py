"""A built wheel carries the top-level data folders, and the code finds them there.

The folders (``resources/``, ``systemd/``, ``launchd/``) live once in git at the top level;
``setup.py`` copies them into the wheel as ``volee_desktop/_data/``. The wheel is built once
from a copy of the checkout (no ``build/`` left in the shared tree) without build isolation,
so no network is needed.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import volee_desktop
from volee_desktop import datafiles

ROOT = datafiles.CHECKOUT
# What a build needs from the checkout (setup.py's inputs), copied to a temp folder.
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "volee_desktop")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "_data")


def shipped_files() -> list[str]:
    """Every data file in the checkout, as ``folder/relative/path``."""
    found = [
        path.relative_to(ROOT).as_posix()
        for folder in datafiles.FOLDERS
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    ]
    assert found, "no data files found in the checkout"
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once from a copy of the checkout."""
    source = tmp_path_factory.mktemp("source")
    for name in (*SOURCES, *datafiles.FOLDERS):
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=IGNORE)
        else:
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("volee_desktop-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_carries_every_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for name in shipped_files():
            packaged = f"volee_desktop/_data/{name}"
            assert packaged in names, f"{name} is missing from {wheel.name}"
            assert archive.read(packaged) == (ROOT / name).read_bytes()
        assert "volee_desktop/py.typed" in names
        assert "volee_desktop/cli/hookshim.py" in names
        # The native host's binary alone: its source and stamp only serve a checkout.
        assert "volee_desktop/hosts/native/volee_host.c" not in names
        assert "volee_desktop/hosts/native/volee-host.sha256" not in names


@pytest.mark.slow
def test_the_code_finds_the_data_files_in_an_unpacked_wheel(wheel: Path, tmp_path: Path) -> None:
    # The unpacked wheel is what site-packages holds: no checkout folders beside the package.
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path)
        for info in archive.infolist():  # the modes, as pip installs them (the native host's x)
            if info.external_attr >> 16:
                (tmp_path / info.filename).chmod((info.external_attr >> 16) & 0o777)
    probe = (
        "import sys\n"
        "sys.path.insert(0, sys.argv.pop(1))\n"
        "import volee_desktop\n"
        "assert volee_desktop.__file__.startswith(sys.path[0]), volee_desktop.__file__\n"
        "from volee_desktop import datafiles\n"
        "from volee_desktop.harness.pi import extension_path\n"
        "from volee_desktop.loginitem.base import template_path\n"
        "base = datafiles.PACKAGED\n"
        "for name in sys.argv[1:]:\n"
        "    folder, _, rest = name.partition('/')\n"
        "    found = datafiles.find(folder, *rest.split('/'))\n"
        "    assert found == base / name, (name, found)\n"
        "assert extension_path() == base / 'resources/pi/volee-extension.ts'\n"
        "assert template_path('systemd', 'volee.service.in').is_relative_to(base)\n"
        "assert template_path('launchd', 'com.volee.desktop.plist.in').is_relative_to(base)\n"
        "from volee_desktop.app.icons import resources_dir\n"
        "assert resources_dir() == base / 'resources'\n"
        "import os\n"
        "os.environ.pop('VOLEE_HOST', None)\n"
        "from volee_desktop.hosts import launcher, native\n"
        "assert not native.SOURCE.exists()\n"
        "if native.BINARY.exists():  # built (a C compiler was there): used without its source\n"
        "    assert launcher.host_command() == [str(native.BINARY)]\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(tmp_path), *shipped_files()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_checkout_layout_finds_every_data_file() -> None:
    # The editable install (scripts/dev, CI) reads the checkout's folders.
    for name in shipped_files():
        folder, _, rest = name.partition("/")
        assert datafiles.find(folder, *rest.split("/")) == ROOT / name


def test_setup_py_copies_the_same_folders_the_code_looks_in() -> None:
    tree = ast.parse((ROOT / "setup.py").read_text())
    (folders,) = (
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "FOLDERS" for t in node.targets)
    )
    assert folders == datafiles.FOLDERS


def test_an_unknown_data_folder_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown data folder 'docs'"):
        datafiles.find("docs", "x")


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, built from the checkout as `scripts/dev package` builds it."""
    out = tmp_path_factory.mktemp("sdist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("volee_desktop-*.tar.gz")
    return built


def _tracked(folder: str) -> list[str]:
    done = subprocess.run(
        ["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout (an unpacked sdist): nothing to compare with")
    return [line for line in done.stdout.splitlines() if (ROOT / line).is_file()]


@pytest.mark.slow
def test_the_sdist_carries_every_test_and_its_tests_run(sdist: Path, tmp_path: Path) -> None:
    import tarfile

    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (top,) = tmp_path.iterdir()
    missing = [name for name in _tracked("tests") if not (top / name).is_file()]
    assert not missing, f"{len(missing)} test files are missing from the sdist: {missing[:5]}"
    for name in ("pyproject.toml", "setup.py", "scripts/dev", "installers/debian/build_deb.py"):
        assert (top / name).is_file(), name
    # The unpacked sdist's own tests, against its own code (pytest's pythonpath is ".").
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_layers.py",
            "tests/core/test_states.py",
            "tests/test_packaging.py::test_the_checkout_layout_finds_every_data_file",
        ],
        cwd=top,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
    assert (
        str(top)
        in subprocess.run(
            [sys.executable, "-c", "import volee_desktop; print(volee_desktop.__file__)"],
            cwd=top,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


@pytest.mark.slow
def test_the_wheel_metadata_says_what_volee_needs_and_where_it_runs(wheel: Path) -> None:
    import email

    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(archive.read(name))
    assert meta["Version"] == volee_desktop.__version__
    assert meta["License-Expression"] == "LicenseRef-Proprietary"
    classifiers = meta.get_all("Classifier") or []
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Operating System :: MacOS" in classifiers
    assert not [c for c in classifiers if "Windows" in c]
    requires = meta.get_all("Requires-Dist") or []
    # volee speaks MCP itself (mcp/protocol.py): the SDK is only the tests' client.
    assert not [r for r in requires if r.startswith("mcp") and "extra" not in r]
    assert 'mcp>=2; extra == "test"' in requires
    urls = meta.get_all("Project-URL") or []
    assert any(u.startswith("Homepage, https://") for u in urls)


def test_the_deb_depends_on_what_scripts_dev_installs_for_the_app() -> None:
    sys.path.insert(0, str(ROOT / "installers" / "debian"))
    import build_deb

    script = (ROOT / "scripts" / "dev").read_text()
    block = script.split('RUNTIME_APT="', 1)[1].split('"', 1)[0]
    runtime = set(block.replace("\\\n", " ").split()) - set(build_deb.RECOMMENDS)
    assert set(build_deb.LIBRARIES) == runtime


def test_the_deb_keeps_every_qt_module_volee_imports() -> None:
    # The .deb drops every PySide6 module not in QT_MODULES (docs/packaging.md): a new import
    # fails here at once, not only in the slow test that installs the package.
    sys.path.insert(0, str(ROOT / "installers" / "debian"))
    import build_deb

    imported: set[str] = set()
    for source in (ROOT / "volee_desktop").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            imported |= {n.split(".")[1] for n in names if n.startswith("PySide6.Qt")}
    assert imported, "no PySide6 import found"
    assert imported <= set(build_deb.QT_MODULES), imported - set(build_deb.QT_MODULES)


def test_the_deb_finds_the_qt_libraries_a_module_needs_in_its_elf_file() -> None:
    sys.path.insert(0, str(ROOT / "installers" / "debian"))
    import build_deb
    import PySide6

    pyside = Path(PySide6.__file__).parent
    assert "libQt6Widgets.so.6" in build_deb.elf_needed(pyside / "QtWidgets.abi3.so")
    assert "libQt6Core.so.6" in build_deb.elf_needed(pyside / "Qt" / "lib" / "libQt6Gui.so.6")
    assert build_deb.elf_needed(pyside / "__init__.py") == []

"""Build volee's .deb from its wheel: a venv at its final path, /opt/volee, on the system Python.

Hooks and hosts run ``<interpreter> -I -S`` (docs/packaging.md), so the package carries a real
interpreter's venv rather than a frozen binary: ``/usr/bin/python3 -m venv`` in a staging
folder, ``pip install`` of the wheel and its dependencies, the staging path rewritten to
``/opt/volee`` in the scripts (what dh-virtualenv does), then ``dpkg-deb`` directly.

    python installers/debian/build_deb.py dist/volee_desktop-X-py3-none-any.whl --out dist

It runs with a Python that has volee's dependencies (the checkout's .venv): the icons are
rendered with Qt from ``resources/volee.svg``.
"""

from __future__ import annotations

import argparse
import email
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGE = "volee-desktop"
PREFIX = Path("/opt/volee")
# What the Qt plugins volee loads (xcb, wayland, offscreen, svg) need from the system; the
# same list as scripts/dev's RUNTIME_APT (tests/test_deb.py checks they agree).
LIBRARIES = (
    *("libgl1", "libegl1", "libxkbcommon0", "libfontconfig1", "libglib2.0-0", "libdbus-1-3"),
    *("libxcb-cursor0", "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1"),
    *("libxcb-render-util0", "libxcb-render0", "libxcb-shape0", "libxcb-util1", "libxcb-xkb1"),
    "libxkbcommon-x11-0",
)
# fonts-symbola: the glyphs of Claude Code's screen DejaVu lacks (app/termfont.py).
RECOMMENDS = ("git", "hicolor-icon-theme", "desktop-file-utils", "fonts-symbola")
# PySide6-Essentials ships every Qt module it has bindings for, Qt's developer tools and sources;
# the package keeps what volee loads (docs/packaging.md, "What is left of Qt"). The Python
# modules volee imports (`grep -rn PySide6 volee_desktop`):
QT_MODULES = ("QtCore", "QtGui", "QtWidgets", "QtDBus", "QtSvg")
# The plugins it loads, by folder (file names; "*" keeps the folder whole): the platforms a
# desktop gives (X11, Wayland) and the two with no screen (offscreen, minimal: the tests, a
# headless `volee`), their GL/shell/decoration glue, the desktop's theme and input methods,
# and SVG (the icons are SVG). Not wayland-egl: the widgets draw in shared memory, and it
# alone needs libQt6OpenGL.
QT_PLUGINS = {
    "platforms": ("libqxcb.so", "libqwayland.so", "libqoffscreen.so", "libqminimal.so"),
    "xcbglintegrations": ("*",),
    "wayland-shell-integration": ("*",),
    "wayland-decoration-client": ("*",),
    "platformthemes": ("*",),
    "platforminputcontexts": (
        "libcomposeplatforminputcontextplugin.so",
        "libibusplatforminputcontextplugin.so",
    ),
    "imageformats": ("libqsvg.so",),
    "iconengines": ("libqsvgicon.so",),
}
# Beside the modules (paths relative to site-packages/PySide6): tools, headers, build files,
# docs, the type stubs; Qt's translations (volee's text is English only) and QML.
PRUNE_PYSIDE = (
    "assistant",
    "designer",
    "linguist",
    "lrelease",
    "lupdate",
    "qmlformat",
    "qmlls",
    "qmllint",
    "svgtoqml",
    "include",
    "typesystems",
    "glue",
    "scripts",
    "doc",
    "lib",
    "Qt/libexec",
    "Qt/metatypes",
    "Qt/translations",
    "Qt/qml",
    "Qt/resources",
)
PRUNE_BIN_PREFIX = "pyside6-"

MAINTAINER = "volee desktop <volee@users.noreply.github.com>"
DESCRIPTION = """\
Supervise the coding agents you run on your machine
 volee watches Claude Code, codex, pi and any command you start as an agent:
 a tray icon that says which one needs you, a daemon that keeps their state
 across restarts, and a CLI (volee ls, spawn, send, stop, resume).
 .
 The package holds its own Python environment in /opt/volee, on the system
 Python. It adds a menu entry and never starts volee at login unasked:
 `volee daemon install` does that."""

POSTRM = """\
#!/bin/sh
# The venv is ours alone: whatever Python wrote there at run time (__pycache__) goes with it.
set -e
if [ "$1" = remove ] || [ "$1" = purge ]; then
    rm -rf /opt/volee
fi
exit 0
"""


# pip's notes about this machine's local package indexes (scripts/dev filters them too).
NOISE = "is ignored: it is neither a file nor a directory"


def run(argv: list[str]) -> None:
    print("+", " ".join(argv), file=sys.stderr, flush=True)
    # Never PYTHONPATH: with a checkout on it the staged venv's interpreter finds volee there,
    # and pip, taking it as installed, leaves the package out of the .deb.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    for line in done.stdout.splitlines():
        if NOISE not in line:
            print(line, file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed (exit {done.returncode})")


def wheel_version(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (meta,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.message_from_bytes(archive.read(meta))
    version = message["Version"]
    if not version:
        raise SystemExit(f"{wheel} has no version in its metadata")
    return str(version)


def debian_version(version: str) -> str:
    # PEP 440 pre-releases sort before the release in Debian only with a tilde.
    for tag in ("a", "b", "rc", ".dev"):
        head, sep, tail = version.partition(tag)
        if sep and head and head[-1].isdigit():
            return f"{head}~{tag.lstrip('.')}{tail}-1"
    return f"{version}-1"


def system_python(path: str) -> tuple[str, str]:
    """(the interpreter's real path, its X.Y)."""
    real = os.path.realpath(shutil.which(path) or path)
    out = subprocess.run(
        [real, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return real, out.stdout.strip()


def build_venv(stage: Path, wheel: Path, python: str, index_args: list[str]) -> Path:
    venv = stage / PREFIX.relative_to("/")
    run([python, "-m", "venv", "--without-pip", str(venv)])
    # The build's pip installs into the staged venv (no pip inside the package).
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            *index_args,
            str(wheel),
        ]
    )
    return venv


def _elf_sections(data: bytes) -> list[tuple[int, int, int, int]]:
    """(type, offset, size, link) of each section of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shentsize = int.from_bytes(data[0x3A:0x3C], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    sections = []
    for i in range(shnum):
        h = data[shoff + i * shentsize : shoff + (i + 1) * shentsize]
        sections.append(
            (
                int.from_bytes(h[4:8], "little"),
                int.from_bytes(h[0x18:0x20], "little"),
                int.from_bytes(h[0x20:0x28], "little"),
                int.from_bytes(h[0x28:0x2C], "little"),
            )
        )
    return sections


def elf_needed(path: Path) -> list[str]:
    """The DT_NEEDED names of a 64-bit little-endian ELF file ([] for anything else)."""
    data = path.read_bytes()
    sections = _elf_sections(data)
    names = []
    for kind, offset, size, link in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][1]
        for entry in range(offset, offset + size, 16):
            tag = int.from_bytes(data[entry : entry + 8], "little")
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                at = strtab + int.from_bytes(data[entry + 8 : entry + 16], "little")
                names.append(data[at : data.index(b"\0", at)].decode())
    return names


def strip_symbols(venv: Path) -> int:
    """``strip --strip-unneeded`` the shared objects that still carry a symbol table (the
    wheels of cryptography, wcwidth, watchfiles, ICU...); the bytes freed. The dynamic symbols
    they link by stay."""
    carrying = []
    for path in sorted(venv.rglob("*.so*")):
        if path.is_symlink() or not path.is_file():
            continue
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        if any(kind == 2 for kind, *_ in _elf_sections(path.read_bytes())):  # SHT_SYMTAB
            carrying.append(path)
    if not carrying:
        return 0
    before = sum(p.stat().st_size for p in carrying)
    run(["strip", "--strip-unneeded", *map(str, carrying)])
    return before - sum(p.stat().st_size for p in carrying)


def rewrite_record(site: Path) -> None:
    """Each dist-info's RECORD lists only the files left (pip uninstall, importlib.metadata)."""
    for record in site.glob("*.dist-info/RECORD"):
        kept = []
        for line in record.read_text().splitlines(keepends=True):
            name = line.rsplit(",", 2)[0].strip('"')
            if (site / name).exists():
                kept.append(line)
        record.write_text("".join(kept))


def slim_qt(site: Path) -> int:
    """Keep the Qt modules and plugins volee loads and the libraries they need; the bytes freed.

    The libraries are found, not listed: every Qt library no kept module or plugin needs
    (DT_NEEDED, followed through the libraries themselves) goes.
    """
    pyside = site / "PySide6"
    qt = pyside / "Qt"
    gone: list[Path] = []
    for path in pyside.glob("Qt*.*"):
        if path.name.split(".")[0] not in QT_MODULES and path.is_file():
            gone.append(path)
    gone += pyside.glob("*.pyi")
    gone += [pyside / "py.typed"]
    for folder in (qt / "plugins").iterdir():
        keep = QT_PLUGINS.get(folder.name, ())
        if "*" not in keep:
            gone += [p for p in folder.rglob("*") if p.is_file() and p.name not in keep]
    gone_set = set(gone)
    libraries = {
        p.name: p for p in [*(qt / "lib").iterdir(), *pyside.glob("libpyside6*.so*")] if p.is_file()
    }
    kept = [
        p
        for p in [*pyside.rglob("*.so*"), *(site / "shiboken6").rglob("*.so*")]
        if p.is_file() and p not in gone_set and p.name not in libraries
    ]
    needed: set[str] = set()
    todo = [name for p in kept for name in elf_needed(p)]
    while todo:
        name = todo.pop()
        if name in libraries and name not in needed:
            needed.add(name)
            todo += elf_needed(libraries[name])
    gone += [p for name, p in libraries.items() if name not in needed]
    freed = 0
    for path in gone:
        if path.is_file() and not path.is_symlink():
            freed += path.stat().st_size
        path.unlink(missing_ok=True)
    for folder in sorted((qt / "plugins").iterdir()):
        if not any(folder.iterdir()):
            folder.rmdir()
    return freed


def prune(venv: Path) -> int:
    """Remove what the app never loads of Qt, its developer tools; the bytes freed."""
    freed = 0
    (site,) = (venv / "lib").glob("python3*/site-packages")
    for rel in PRUNE_PYSIDE:
        target = site / "PySide6" / rel
        if target.is_dir():
            freed += sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
            shutil.rmtree(target)
        elif target.is_file():
            freed += target.stat().st_size
            target.unlink()
    freed += slim_qt(site)
    # Type stubs (PySide6's went above) and the SBOMs of the dependencies' wheels: nothing
    # reads them at run time (about 0.7 MiB; the licences stay).
    for unread in [*site.rglob("*.pyi"), *site.glob("*.dist-info/sboms")]:
        if unread.is_dir():
            freed += sum(p.stat().st_size for p in unread.rglob("*") if p.is_file())
            shutil.rmtree(unread)
        else:
            freed += unread.stat().st_size
            unread.unlink()
    # wcwidth's grapheme tables for named terminals (wcwidth >= 0.9): loaded only when a width
    # is asked for a given terminal; pyte asks wcwidth() of one character, never with one.
    # Their sources stay (imported, they still work); their bytecode goes (2.1 MiB).
    for cached in site.glob("wcwidth/table_grapheme_overrides/__pycache__/_known_*.pyc"):
        freed += cached.stat().st_size
        cached.unlink()
    # The tests some dependencies ship inside themselves (jeepney's).
    for tests in [*site.glob("*/tests"), *site.glob("*/*/tests")]:
        if tests.is_dir() and (tests / "__init__.py").exists():
            freed += sum(p.stat().st_size for p in tests.rglob("*") if p.is_file())
            shutil.rmtree(tests)
    freed += strip_symbols(venv)
    rewrite_record(site)
    for script in (venv / "bin").glob(f"{PRUNE_BIN_PREFIX}*"):
        freed += script.stat().st_size
        script.unlink()
    for name in ("Activate.ps1", "activate.csh", "activate.fish"):
        (venv / "bin" / name).unlink(missing_ok=True)
    return freed


def relocate(stage: Path, venv: Path) -> None:
    """Point every text file that names the staging path at /opt/volee; refuse any left."""
    old = str(venv).encode()
    new = str(PREFIX).encode()
    for path in [*(venv / "bin").iterdir(), venv / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old in data:
            path.write_bytes(data.replace(old, new))
    left = [
        str(p)
        for p in venv.rglob("*")
        if p.is_file() and not p.is_symlink() and p.suffix != ".pyc" and old in p.read_bytes()
    ]
    if left:
        raise SystemExit("the staging path is still named in: " + ", ".join(left[:10]))


def desktop_files(stage: Path) -> None:
    """The menu entry and the icons under /usr/share (rendered in a child: Qt stays out of here)."""
    render = (
        "import sys; from pathlib import Path; from volee_desktop.app import desktopentry as d; "
        "d.write(d.Layout(Path(sys.argv[1])), executable=None)"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    subprocess.run(
        [sys.executable, "-c", render, str(stage / "usr" / "share")], cwd=ROOT, env=env, check=True
    )


def control(version: str, python_xy: str, installed_kib: int, arch: str) -> str:
    depends = ", ".join([f"python{python_xy}", *LIBRARIES])
    return (
        f"Package: {PACKAGE}\n"
        f"Version: {version}\n"
        f"Architecture: {arch}\n"
        f"Maintainer: {MAINTAINER}\n"
        f"Installed-Size: {installed_kib}\n"
        f"Depends: {depends}\n"
        f"Recommends: {', '.join(RECOMMENDS)}\n"
        "Section: devel\n"
        "Priority: optional\n"
        "Homepage: https://github.com/volee-dev/volee-desktop\n"
        f"Description: {DESCRIPTION}\n"
    )


def md5sums(stage: Path) -> str:
    lines = []
    for path in sorted(stage.rglob("*")):
        rel = path.relative_to(stage)
        if rel.parts[0] == "DEBIAN" or path.is_symlink() or not path.is_file():
            continue
        lines.append(f"{hashlib.md5(path.read_bytes()).hexdigest()}  {rel.as_posix()}\n")
    return "".join(lines)


def build(wheel: Path, out: Path, python: str, compression: str, index_args: list[str]) -> Path:
    version = debian_version(wheel_version(wheel))
    real_python, python_xy = system_python(python)
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="volee-deb-") as tmp:
        stage = Path(tmp) / "root"
        venv = build_venv(stage, wheel, real_python, index_args)
        freed = prune(venv)
        print(f"pruned what volee never loads of Qt: {freed / 2**20:.1f} MiB", file=sys.stderr)
        relocate(stage, venv)
        bindir = stage / "usr" / "bin"
        bindir.mkdir(parents=True)
        (bindir / "volee").symlink_to(PREFIX / "bin" / "volee")
        desktop_files(stage)
        doc = stage / "usr" / "share" / "doc" / PACKAGE
        doc.mkdir(parents=True)
        shutil.copy2(HERE / "copyright", doc / "copyright")
        for path in stage.rglob("*"):
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
        size = sum(p.lstat().st_size for p in stage.rglob("*"))
        meta = stage / "DEBIAN"
        meta.mkdir()
        (meta / "control").write_text(control(version, python_xy, (size + 1023) // 1024, arch))
        (meta / "md5sums").write_text(md5sums(stage))
        (meta / "postrm").write_text(POSTRM)
        (meta / "postrm").chmod(0o755)
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{PACKAGE}_{version}_{arch}.deb"
        run(
            [
                "dpkg-deb",
                "--root-owner-group",
                f"-Z{compression}",
                *(["-z9"] if compression == "zstd" else []),
                "--build",
                str(stage),
                str(target),
            ]
        )
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="volee's wheel (scripts/dev package builds it)")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the .deb goes")
    parser.add_argument(
        "--python", default="/usr/bin/python3", help="the system interpreter the venv runs on"
    )
    parser.add_argument(
        "--compression",
        default="zstd",
        choices=["xz", "gzip", "zstd", "none"],
        help="dpkg-deb -Z (zstd: 38 MB in seconds; xz: smaller, in minutes; dpkg >= 1.21.18)",
    )
    parser.add_argument(
        "--pip-arg",
        action="append",
        default=[],
        dest="index_args",
        help="passed to pip install (e.g. --pip-arg=--no-index --pip-arg=--find-links=DIR)",
    )
    args = parser.parse_args(argv)
    target = build(
        args.wheel.resolve(), args.out.resolve(), args.python, args.compression, args.index_args
    )
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

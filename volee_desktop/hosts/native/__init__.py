"""The native host: ``volee_host.c``, the Python host (``hosts/main.py`` and ``host.py``) in C.

Same command line, record, ``--ready-fd`` line, socket, framing, requests, replies and errors;
about 1 MB RSS where a CPython host is 8.4 MB (docs/performance.md, item 4).  C11 and libc
only, built with one ``cc`` line into this folder as ``volee-host``:

- by ``setup.py`` (a wheel, and an editable install: ``pip install -e .``), skipped with a
  warning when there is no C compiler (the Python host stays the fallback);
- on demand: ``python -m volee_desktop.hosts.native build`` (``--sanitize`` builds a copy
  with AddressSanitizer and UBSan for the tests of hostile input).

``volee-host.sha256`` beside the binary is the hash of the source it was built from: a
binary older than its source is never used (an edited checkout falls back to the Python host
until it is built again).  A wheel (so the .deb) carries the binary alone, neither the source
nor the stamp (140 KB the package never reads): there, with no source to compare against, the
binary is the one the wheel was built with, and is used.  The launcher picks the host
(``hosts/launcher.host_command``):
``VOLEE_HOST=python`` forces the Python host, ``VOLEE_HOST=native`` requires this one, and
anything else takes the native host when it is built.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from volee_desktop.hosts.errors import Error

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "volee_host.c"
BINARY = HERE / "volee-host"
# The compile line: -s strips the symbols; -static (when libc.a is there) maps only the
# pages of libc the host uses: 0.9 MB RSS a host, where a dynamic one is 1.8 (libc.so's
# shared pages count in every RSS).  Without libc.a the binary is linked dynamically.
CFLAGS = ("-std=c11", "-O2", "-s")
STATIC = ("-static",)
SANITIZE_FLAGS = (
    "-std=c11",
    "-O1",
    "-g",
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
)


class NativeBuildError(Error):
    """The native host could not be built (no compiler, or the compiler failed)."""


def source_hash(source: Path = SOURCE) -> str:
    """The sha256 of the source, as the stamp beside a binary built from it says."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def _stamp(binary: Path) -> Path:
    return binary.with_name(binary.name + ".sha256")


def compiler() -> str | None:
    """The C compiler: $CC, else cc, gcc or clang on PATH; None when there is none."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    return None


def build(out: Path = BINARY, *, sanitize: bool = False, source: Path = SOURCE) -> Path:
    """Compile the native host to ``out`` (and its stamp); NativeBuildError if it cannot."""
    cc = compiler()
    if cc is None:
        raise NativeBuildError("no C compiler (cc, gcc or clang) on PATH")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    tries = [SANITIZE_FLAGS] if sanitize else [(*CFLAGS, *STATIC), CFLAGS]
    for flags in tries:
        done = subprocess.run(
            [cc, *flags, "-o", str(tmp), str(source)], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            break
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise NativeBuildError(f"{cc} failed on {source}:\n{done.stderr.strip()}")
    os.replace(tmp, out)
    _stamp(out).write_text(source_hash(source) + "\n")
    return out


_checked: dict[tuple[Path, float, float], bool] = {}


def binary(path: Path = BINARY, source: Path = SOURCE) -> Path | None:
    """The built native host, or None when it is not built or was built from another source.

    Without its source beside it (an installed wheel: setup.py ships the binary alone) the
    binary is the one the wheel was built with: used when it is executable."""
    try:
        built = path.stat().st_mtime
    except OSError:
        return None
    try:
        key = (path, built, source.stat().st_mtime)
    except OSError:
        return path if os.access(path, os.X_OK) else None
    if key not in _checked:
        try:
            fresh = _stamp(path).read_text().strip() == source_hash(source)
        except OSError:
            fresh = False
        _checked[key] = fresh and os.access(path, os.X_OK)
    return path if _checked[key] else None


__all__ = ["BINARY", "SOURCE", "NativeBuildError", "binary", "build", "compiler", "source_hash"]

"""The methods ``dataclasses`` writes for each class, compiled once and kept (issue 27, item 3).

Every ``@dataclass`` has its ``__init__``, ``__repr__``, ``__eq__``... written as source and
compiled when its module is imported: volee's start imports about 160 of them (the events,
the model, the config), and compiling that source was 80 of the app's 300 ms of imports on
CPython 3.11.  The source is all that decides the code, so the code compiled for a source
is kept in one file (``<state>/dataclasses.cache``, ``marshal``: the format ``.pyc`` files
use, with the interpreter's magic number in front) and the next start reuses it.

The module's ``exec`` is replaced by one that looks the source up first (``dataclasses``
calls ``exec`` only for these methods, on every version since 3.7); a miss compiles it as
``exec`` would and keeps it for :func:`save`.  A file of another interpreter, one that does
not read, or one another user could have written (owner, mode, folder) is not used.  Stdlib
only: it runs before volee imports anything with a dataclass.
"""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import stat
import sys
from importlib.util import MAGIC_NUMBER

NAME = "dataclasses.cache"
#: A file with more sources than this is started afresh (sources of older versions pile up).
MOST = 4000
#: ``exec`` compiles a source with its caller's future flags: ``dataclasses`` has none.
_FLAGS = 0


class _Cache:
    def __init__(self, path: str, known: dict[str, object]) -> None:
        self.path = path
        self.known = known
        self.new: dict[str, object] = {}

    def exec(self, source: object, globals: object = None, locals: object = None) -> None:
        code = source
        if isinstance(source, str):
            code = self.known.get(source) or self.new.get(source)
            if code is None:
                code = compile(source, "<string>", "exec", _FLAGS, dont_inherit=True)
                self.new[source] = code
        builtins.exec(code, globals, locals)  # type: ignore[arg-type]


_cache: _Cache | None = None


def _private(path: str) -> bool:
    """Whether ``path`` belongs to this user and no one else may write it."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted(path: str) -> bool:
    return _private(os.path.dirname(path)) and _private(path)


def _read(path: str) -> dict[str, object]:
    if not _trusted(path):
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[: len(MAGIC_NUMBER)] != MAGIC_NUMBER:
            return {}
        known = marshal.loads(data[len(MAGIC_NUMBER) :])
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return known if isinstance(known, dict) else {}


def install(state: str) -> None:
    """Compile ``dataclasses``' methods through the cache in ``state`` (a folder); once."""
    global _cache
    if _cache is not None or sys.implementation.name != "cpython":
        return
    path = os.path.join(state, NAME)
    _cache = _Cache(path, _read(path))
    dataclasses.exec = _cache.exec  # type: ignore[attr-defined]


def uninstall() -> None:
    """``dataclasses`` compiles as it did (what is new is not kept)."""
    global _cache
    if _cache is not None:
        del dataclasses.exec  # type: ignore[attr-defined]
        _cache = None


def save() -> int:
    """Write the cache with what this process compiled that it did not hold (written to a
    temporary file, then renamed); the number of sources added (0: nothing written)."""
    cache = _cache
    if cache is None or not cache.new:
        return 0
    folder = os.path.dirname(cache.path)
    if not os.path.isdir(folder) or not _private(folder):
        return 0
    known = _read(cache.path) if os.path.exists(cache.path) else {}
    if len(known) + len(cache.new) > MOST:
        known = {}
    known.update(cache.new)
    added = len(cache.new)
    tmp = f"{cache.path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC_NUMBER + marshal.dumps(known))
        os.replace(tmp, cache.path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return 0
    cache.known, cache.new = known, {}
    return added

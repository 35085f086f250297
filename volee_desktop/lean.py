"""What the stdlib-only processes share: JSON over the C half of ``json``, and the socket rule.

The hook shim (``cli/hookshim.py``), the status line (``cli/statusline.py``), the MCP relay
(``mcp/relay.py``), the bridge (``cli/bridge.py``) and the host (``hosts/``) run as
``python -I -S``, stdlib only: the ``json`` and ``socket`` packages pull in ``re`` and ``enum``
(and ``json.decoder/encoder/scanner``), half a MiB and most of the CPU time of a process that
sends a few small dicts.  So each fact they share is written once, here, imported by the
package as ``volee_desktop.lean`` and by a file run alone as the top-level ``lean`` (the
package's folder appended to ``sys.path``: nothing else of the package is loaded).  It costs
``_json`` and ``stat`` (which ``os`` imports anyway): ``tests/test_lean_module.py`` checks
that it loads nothing else.

- ``dumps`` and ``loads`` give the same text and the same values as ``json.dumps`` and
  ``json.loads`` with their default options (the tests compare them): ``dumps`` takes
  ``indent`` and ``separators`` as ``json.dumps`` does, strings are escaped to ASCII by
  ``_json`` itself (``quote``), and ``loads`` parses with ``_json``'s scanner.  A malformed
  document raises ``ValueError`` with ``json``'s message (``Expecting value: line 1 column 1
  (char 0)``); the other syntax errors need ``json.decoder`` for their exception, imported
  then (``re`` and ``enum`` with it), which a well-behaved peer never causes.
- ``socket_refusal`` is the rule every client of the daemon's socket keeps before connecting
  (the blocking and asyncio clients through ``ipc.transport.check_server_path``, the lean ones
  through ``check_socket``): the folder and the socket are this user's, the folder writable by
  no one else, else refuse, for a socket another user planted would receive whatever is sent
  (a hook's prompt).  ``check_peer`` is its half after connecting (Linux's ``SO_PEERCRED``),
  ``connect`` the two around one connection.
"""

from __future__ import annotations

import os
import stat
import sys
from _json import encode_basestring_ascii as _quote
from _json import make_scanner

# Not typing.TYPE_CHECKING: importing typing would cost every lean process its memory.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: A str as a JSON string, escaped to ASCII (``json.dumps(text)``).
quote = _quote
_INF = float("inf")
_WHITESPACE = " \t\n\r"


def _float(value: float) -> str:
    """``json``'s float: ``repr``, and JavaScript's names for the values JSON has none for."""
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


class _Encoder:
    """``json.encoder``'s pure-Python encoder, without the options the host never uses."""

    __slots__ = ("chunks", "indent", "item_sep", "key_sep", "markers")

    def __init__(self, indent: str | None, item_sep: str, key_sep: str) -> None:
        self.indent = indent
        self.item_sep = item_sep
        self.key_sep = key_sep
        self.chunks: list[str] = []
        self.markers: set[int] = set()

    def value(self, obj: object, level: int) -> None:
        out = self.chunks.append
        if isinstance(obj, str):
            out(_quote(obj))
        elif obj is None:
            out("null")
        elif obj is True:
            out("true")
        elif obj is False:
            out("false")
        elif isinstance(obj, int):
            out(int.__repr__(obj))
        elif isinstance(obj, float):
            out(_float(obj))
        elif isinstance(obj, (list, tuple)):
            self.container(obj, level, "[]")
        elif isinstance(obj, dict):
            self.container(obj, level, "{}")
        else:
            raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")

    def container(
        self, obj: list[Any] | tuple[Any, ...] | dict[Any, Any], level: int, ends: str
    ) -> None:
        out = self.chunks.append
        if not obj:
            out(ends)
            return
        marker = id(obj)
        if marker in self.markers:
            raise ValueError("Circular reference detected")
        self.markers.add(marker)
        indent = self.indent
        separator = self.item_sep
        if indent is not None:
            level += 1
            separator += "\n" + indent * level
            out(ends[0] + "\n" + indent * level)
        else:
            out(ends[0])
        if isinstance(obj, dict):
            for i, (key, item) in enumerate(obj.items()):
                if i:
                    out(separator)
                out(_quote(_key(key)))
                out(self.key_sep)
                self.value(item, level)
        else:
            for i, item in enumerate(obj):
                if i:
                    out(separator)
                self.value(item, level)
        if indent is not None:
            out("\n" + indent * (level - 1))
        out(ends[1])
        self.markers.discard(marker)


def dumps(obj: object, indent: int | None = None, separators: tuple[str, str] | None = None) -> str:
    """``json.dumps(obj, indent=indent, separators=separators)``, the same text."""
    if separators is not None:
        item_sep, key_sep = separators
    elif indent is not None:
        item_sep, key_sep = ",", ": "
    else:
        item_sep, key_sep = ", ", ": "
    encoder = _Encoder(None if indent is None else " " * indent, item_sep, key_sep)
    encoder.value(obj, 0)
    return "".join(encoder.chunks)


class _Parsing:
    """What ``_json.make_scanner`` reads from a decoder: plain JSON, like ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    array_hook = None  # read from Python 3.15 on
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": -float("inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


_scan: Callable[[str, int], tuple[Any, int]] = make_scanner(_Parsing())  # type: ignore[arg-type]


def _error(msg: str, doc: str, pos: int) -> ValueError:
    """A ``ValueError`` worded as ``json.JSONDecodeError`` words it."""
    line = doc.count("\n", 0, pos) + 1
    column = pos - doc.rfind("\n", 0, pos)
    return ValueError(f"{msg}: line {line} column {column} (char {pos})")


def _encoding(b: bytes | bytearray) -> str:
    """``json.detect_encoding``: the BOM or the zero bytes of the first characters decide."""
    if b.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        return "utf-32"
    if b.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "utf-16"
    if b.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if len(b) >= 4:
        if not b[0]:
            return "utf-16-be" if b[1] else "utf-32-be"
        if not b[1]:
            return "utf-16-le" if b[2] or b[3] else "utf-32-le"
    elif len(b) == 2:
        if not b[0]:
            return "utf-16-be"
        if not b[1]:
            return "utf-16-le"
    return "utf-8"


def _skip(doc: str, pos: int) -> int:
    return len(doc) - len(doc[pos:].lstrip(_WHITESPACE)) if pos < len(doc) else pos


def loads(doc: str | bytes | bytearray) -> Any:
    """``json.loads(doc)``: the same values, and ``ValueError`` where it raises one."""
    if isinstance(doc, str):
        if doc.startswith("\ufeff"):
            raise _error("Unexpected UTF-8 BOM (decode using utf-8-sig)", doc, 0)
    elif isinstance(doc, (bytes, bytearray)):
        doc = doc.decode(_encoding(doc), "surrogatepass")
    else:
        raise TypeError(
            f"the JSON object must be str, bytes or bytearray, not {doc.__class__.__name__}"
        )
    start = _skip(doc, 0)
    try:
        value, end = _scan(doc, start)
    except StopIteration as exc:
        raise _error("Expecting value", doc, exc.value) from None
    except SystemError:
        # Python 3.11's _json words most syntax errors with json.decoder.JSONDecodeError but
        # only finds it in sys.modules: in a process that never imported json the error was a
        # SystemError (a host died of one malformed frame).  Import it, then read again: the
        # JSONDecodeError (a ValueError) says what json says.
        import json.decoder  # noqa: F401

        value, end = _scan(doc, start)
    end = _skip(doc, end)
    if end != len(doc):
        raise _error("Extra data", doc, end)
    return value


def socket_refusal(path: str) -> str | None:
    """Why a client must not connect to the socket at ``path`` (its folder, or the socket
    itself, is another user's or writable by others), else None.

    Another user can plant a socket only where they may write: the folder must be ours and
    writable by no one else (the daemon makes it 0700).  Missing files are left to ``connect``
    (the daemon is simply not running).
    """
    me = os.geteuid()
    folder = os.path.dirname(path) or "."
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot check the folder of {path}: {exc}"
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != me or st.st_mode & 0o022:
        return (
            f"refusing to connect to {path}: its folder {folder} is not a private folder of "
            f"yours (owner uid {st.st_uid}, mode {stat.filemode(st.st_mode)}; you are uid "
            f"{me}); another user may be listening there. Remove it, or point "
            "XDG_RUNTIME_DIR/VOLEE_HOME at a folder of yours"
        )
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot check the socket {path}: {exc}"
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != me:
        return (
            f"refusing to connect to {path}: it is not a socket of yours (owner uid "
            f"{st.st_uid}, mode {stat.filemode(st.st_mode)}; you are uid {me}); "
            "remove it and start the daemon again"
        )
    return None


def check_socket(path: str) -> None:
    """``socket_refusal`` as an error: ``PermissionError`` with the reason."""
    why = socket_refusal(path)
    if why is not None:
        raise PermissionError(why)


def check_peer(sock: Any, path: str) -> None:
    """After connecting: ``PermissionError`` unless this user's process accepted (Linux's
    ``SO_PEERCRED``; macOS and the BSDs have none in ``_socket``: the checks before
    connecting stand alone)."""
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    uid = int.from_bytes(raw[4:8], sys.byteorder)
    if uid != os.geteuid():
        raise PermissionError(
            f"refusing to talk to {path}: it is served by uid {uid}, not by you (uid "
            f"{os.geteuid()}); stop that process or remove the socket"
        )


def connect(path: str, timeout: float | None) -> Any:
    """A Unix socket connected to the daemon at ``path``, as every lean client connects:
    ``check_socket`` before, ``check_peer`` after (the socket closed again when either
    refuses, ``PermissionError``); what ``connect`` raises (``FileNotFoundError``: no daemon
    runs there) is raised as it is."""
    import _socket

    check_socket(path)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        check_peer(sock, path)
    except BaseException:
        sock.close()
        raise
    return sock

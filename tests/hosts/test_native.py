"""The native host (hosts/native/volee_host.c) against the Python host, and against hostile peers.

The same frames go to a Python host and to a native host holding the same program; every
reply must be the same bytes (errors included, word for word).  Then a build with
AddressSanitizer and UBSan takes random frames, deep nesting and huge values, and must answer
and exit cleanly with nothing reported.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.polling import wait_until
from volee_desktop.hosts import native, wire
from volee_desktop.hosts.errors import HostError
from volee_desktop.hosts.launcher import HOST_ENV, HostClient, host_command, launch_host
from volee_desktop.hosts.records import HostRecord, host_alive, read_record

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the native host is built and tested on Linux"
)


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _ask(path: str, data: bytes, timeout: float = 5.0) -> list[tuple[bytes, bytes]]:
    """Send raw bytes on a fresh connection; the frames that come back up to the first JSON
    frame (a reply), or all of them until the host hangs up."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(path)
    try:
        sock.sendall(data)
        buf = b""
        frames: list[tuple[bytes, bytes]] = []
        while True:
            while len(buf) >= 5:
                size = struct.unpack(">I", buf[1:5])[0]
                if len(buf) < 5 + size:
                    break
                frames.append((buf[:1], buf[5 : 5 + size]))
                buf = buf[5 + size :]
                if frames[-1][0] == b"J":
                    return frames
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                frames.append((b"?", b"timeout"))
                return frames
            if not chunk:
                return frames
            buf += chunk
    finally:
        sock.close()


@pytest.fixture(scope="module")
def built(native_host: Path) -> Path:
    """The native host's binary (conftest's ``native_host``)."""
    return native_host


@pytest.fixture
def pair(built: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A Python host and a native host, each holding `sleep 60`: their socket paths."""
    root = Path(tempfile.mkdtemp(prefix="vp", dir="/tmp"))
    sockets = []
    records = []
    for kind in ("python", "native"):
        monkeypatch.setenv(HOST_ENV, kind)
        agent = f"ag_{kind}"
        record = launch_host(
            agent,
            ["sleep", "60"],
            root,
            {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            root / "hosts" / f"{agent}.json",
            root / "run" / f"{agent}.sock",
            linger=0.2,
        )
        head = (Path(f"/proc/{record.host_pid}/cmdline").read_bytes().split(b"\0"))[0]
        assert (head.endswith(b"volee-host")) == (kind == "native")
        sockets.append(record.socket)
        records.append(record)
    yield sockets[0], sockets[1]
    for record in records:
        try:
            HostClient(record.socket).stop(grace=1)
        except HostError:
            pass
    for record in records:

        def gone(r: HostRecord = record) -> bool:
            return not host_alive(r)

        wait_until(gone, 10, "the host to exit")
    shutil.rmtree(root, ignore_errors=True)


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode()


DEEP = 400  # well inside the Python host's recursion limit

# Frames whose replies must be the same from both hosts (none asks for pids or times).
CASES: list[bytes] = [
    # the framing
    b"X\0\0\0\0",
    b"'\0\0\0\0",
    b"\\\0\0\0\0",
    b"\n\0\0\0\0",
    b"\x00\0\0\0\0",
    b"\xff\0\0\0\0",
    b"J\x01\x00\x00\x01",
    b"I\xff\xff\xff\xff",
    _frame(b"J", b"{}") + b"Q\0\0\0\0",  # a good frame, then a bad header: neither is served
    _frame(b"O", b"from a client: ignored") + _frame(b"J", _json({"op": "nope"})),
    _frame(b"I", b"not attached: ignored") + _frame(b"J", _json({"op": "nope"})),
    # JSON that is not JSON
    *(
        _frame(b"J", doc)
        for doc in (
            b"",
            b" ",
            b"[",
            b"{",
            b"[1,",
            b'{"a" 1}',
            b'"abc',
            b'"a\\',
            b'"\\u12"',
            b'"\\uZZZZ"',
            b'"\\x"',
            b'"a\x01"',
            b"-",
            b"-a",
            b"01",
            b"1.",
            b"1e",
            b"nul",
            b"[1 2]",
            b"{1:2}",
            b'"\\ud800\\uZZZZ"',
            b'"\\u123',
            b'"\\ud800\\u00"',
            b"tru",
            b"[-]",
            b"NaN1",
            b'{"a":}',
            b'{"op":"x"}\n\nx',
            b'{"a":\n  "b\x02"}',
            b"\xff",
            b"\xe2\x82",
            b"\xe2\x28",
            b"a\xed\xa0",
            b'{"op": "\xed\xa0\x80"}',
            b"\xf0\x9f\x98",
            b"\xc0\xaf",
            b'{"op":"\xc3\xa9\xe2\x80\xa8\xc2\x85"}',
            b"\xef\xbb\xbf" + _json({"op": "bom"}),
            b"\xef\xbb\xbf\xff",
            '{"op": "utf-16"}'.encode("utf-16"),
            '{"op": "le"}'.encode("utf-16-le"),
            '{"op": "be"}'.encode("utf-16-be"),
            '{"op": "utf-32"}'.encode("utf-32"),
            '{"op": "32le"}'.encode("utf-32-le"),
            '{"op": "32be"}'.encode("utf-32-be"),
            '{"op": "x"}'.encode("utf-16-le") + b"\x00",
            b"\x00{",
            b"[]",
            b"1",
            b'"x"',
            b"null",
            b"true",
            b"1.5",
            b"NaN",
            b"-Infinity",
            b"1" * 5000,
            b'{"op": ' + b"9" * 4301 + b"}",
            b'{"op": ' + b"9" * 4300 + b"}",
        )
    ),
    # what is not a request, said with Python's repr
    *(
        _frame(b"J", doc)
        for doc in (
            b"{}",
            b'{"op": 1}',
            b'{"op": null}',
            b'{"op": true}',
            b'{"op": -0}',
            b'{"op": -0.0}',
            b'{"op": 1.0}',
            b'{"op": 1e16}',
            b'{"op": 1e15}',
            b'{"op": 0.0001}',
            b'{"op": 0.00001}',
            b'{"op": 1.5e-7}',
            b'{"op": 123456789.123456789}',
            b'{"op": 5e-324}',
            b'{"op": 1.7976931348623157e308}',
            b'{"op": 1e400}',
            b'{"op": -1e400}',
            b'{"op": NaN}',
            b'{"op": Infinity}',
            b'{"op": -Infinity}',
            b'{"op": 12345678901234567890123}',
            b'{"op": -12345678901234567890123}',
            b'{"op": "nope"}',
            b'{"op": ""}',
            b'{"op": "it\'s"}',
            b'{"op": "it\'s \\"quoted\\""}',
            b'{"op": "\\"q\\""}',
            b'{"op": "\\\\ \\t \\n \\r \\b \\f \\u0000 \\u001f \\u007f"}',
            b'{"op": "\\u0080 \\u0085 \\u00a0 \\u00ad \\u00e9 \\u2028 \\u200b \\ufeff \\uffff"}',
            b'{"op": "\\ud800 \\udfff \\ud83d\\ude00 \\udbff\\udfff \\ud800x"}',
            b'{"op": "\\ud83d\\u0041 \\uDB40\\uDC01 \\uE000 \\u0378"}',
            b'{"op": "\xf0\x9f\x98\x80 \xe4\xb8\xad \xf3\xa0\x80\x81"}',
            b'{"op": []}',
            b'{"op": {}}',
            b'{"op": [1, "two", 3.0, null, true, false, [], {}]}',
            b'{"op": {"b": 1, "a": 2, "b": 3, "c": {"x": 1, "x": [2]}}}',
            b'{"op": {"\'": "\\"", "\\\\": "\\n"}}',
            b'{"op": [ 1 , [ 2 , { "k" : [ ] } ] ] }',
            b'{"op": "x", "op": "y"}',
            b'{"op": "status", "op": 7}',
            b'{"op": ' + b"[" * DEEP + b"]" * DEEP + b"}",
            b'{"op": ' + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"}",
            b'{"op": "_op_hello"}',
            b'{"op": "Hello"}',
            b'{"op": "hello\\u0000"}',
        )
    ),
    # requests with bad values
    *(
        _frame(b"J", _json(req))
        for req in (
            {"op": "resize"},
            {"op": "resize", "rows": 24},
            {"op": "resize", "cols": 80},
            {"op": "resize", "rows": [24], "cols": 80},
            {"op": "resize", "rows": 24, "cols": None},
            {"op": "resize", "rows": "abc", "cols": 80},
            {"op": "resize", "rows": "1__0", "cols": 80},
            {"op": "resize", "rows": " 12 ", "cols": 99999},
            {"op": "resize", "rows": "1_2", "cols": 0},
            {"op": "resize", "rows": "\u0661\u0662", "cols": -5},
            {"op": "resize", "rows": 0, "cols": 80},
            {"op": "resize", "rows": 10000, "cols": 80},
            {"op": "resize", "rows": 1e30, "cols": 80},
            {"op": "resize", "rows": -1e30, "cols": 80},
            {"op": "resize", "rows": 123456789012345678901234567890, "cols": 80},
            {"op": "resize", "rows": float("nan"), "cols": 80},
            {"op": "resize", "rows": True, "cols": 10**5},
            {"op": "resize", "rows": 24.9, "cols": 10**5},
            {"op": "resize", "rows": "9" * 4301, "cols": 80},
            {"op": "resize", "rows": "+5", "cols": "-0"},
            {"op": "resize", "rows": "", "cols": 80},
            {"op": "resize", "rows": "1.5", "cols": 80},
            {"op": "resize", "rows": "\u00a012\u2003", "cols": 0},
            {"op": "screen", "lines": {"n": 5}},
            {"op": "screen", "lines": "x"},
            {"op": "screen", "lines": None},
            {"op": "screen", "lines": "3"},
            {"op": "screen", "lines": -5},
            {"op": "screen", "lines": 10**30},
            {"op": "screen", "lines": float("nan")},
            {"op": "signal"},
            {"op": "signal", "signal": None},
            {"op": "signal", "signal": []},
            {"op": "signal", "signal": {}},
            {"op": "signal", "signal": "NOPE"},
            {"op": "signal", "signal": "Signals"},
            {"op": "signal", "signal": "getsignal"},
            {"op": "signal", "signal": "SIGTERMX"},
            {"op": "signal", "signal": "NSIG"},
            {"op": "signal", "signal": "9"},
            {"op": "signal", "signal": "__name__"},
            {"op": "signal", "signal": 9999},
            {"op": "signal", "signal": -1},
            {"op": "signal", "signal": 65},
            {"op": "signal", "signal": 1e300},
            {"op": "signal", "signal": 10**40},
            {"op": "signal", "signal": "abc\u00e9'"},
            {"op": "signal", "signal": 0},
            {"op": "signal", "signal": "SIG_DFL"},
            {"op": "signal", "signal": "ITIMER_REAL"},
            {"op": "signal", "signal": "SIGWINCH"},
            {"op": "signal", "signal": 28.7},
            {"op": "stop", "grace": [1]},
            {"op": "stop", "grace": "abc"},
            {"op": "stop", "grace": {}},
            {"op": "stop", "grace": None},
            {"op": "stop", "grace": "1e"},
            {"op": "stop", "grace": "infinit"},
            {"op": "send"},
            {"op": "send", "text": 5},
            {"op": "send", "text": None},
            {"op": "send", "text": ["a"]},
            {"op": "attach", "rows": "x", "cols": 80},
            {"op": "attach", "rows": 5, "cols": 0},
            {"op": "attach", "rows": 0, "cols": "x"},
            {"op": "close"},
            {"op": "flush"},
            {"op": "flush", "every_ms": -1},
            {"op": "watch", "every_ms": None},
            {"op": "watch", "every_ms": 0},
            {"op": "watch", "every_ms": 10000},
            {"op": "watch", "every_ms": 10001},
            {"op": "watch", "every_ms": -1},
            {"op": "watch", "every_ms": -0.5},
            {"op": "watch", "every_ms": 10000.9},
            {"op": "watch", "every_ms": 1e300},
            {"op": "watch", "every_ms": float("nan")},
            {"op": "watch", "every_ms": 10**40},
            {"op": "watch", "every_ms": -(10**40)},
            {"op": "watch", "every_ms": " 250 "},
            {"op": "watch", "every_ms": "2_5"},
            {"op": "watch", "every_ms": "x"},
            {"op": "watch", "every_ms": [250]},
            {"op": "watch", "every_ms": {}},
            {"op": "watch", "every_ms": True},
        )
    ),
    _frame(b"J", b'{"op": "send", "text": "\\ud800"}'),
    _frame(b"J", b'{"op": "send", "text": "ab\\udc00\\ud800c\\ud800"}'),
    _frame(b"J", b'{"op": "send", "text": "\xed\xa0\x80"}'),
    _frame(b"J", _json({"op": "nope"})) + _frame(b"J", b"[") + _frame(b"J", _json({"op": "x"})),
]


def _said_here(data: bytes) -> list[tuple[bytes, bytes]] | None:
    """The reply to frames that are no request, as the Python host's own code words it, run
    here (where ``json`` is imported); None when the first JSON frame is a request."""

    def refusal(exc: Exception) -> list[tuple[bytes, bytes]]:
        return [(b"J", wire.json_frame({"ok": False, "error": str(exc)})[5:])]

    try:
        frames = wire.FrameReader().feed(data)
    except wire.FrameError as exc:
        return refusal(exc)
    for kind, payload in frames:
        if kind == wire.JSON:
            try:
                wire.decode_json(payload)
            except wire.FrameError as exc:
                return refusal(exc)
            return None
    return None


# Python 3.13 says "Illegal trailing comma before end of array/object" where 3.11 said what
# the native host says ("Expecting value", "Expecting property name enclosed in double quotes").
_TRAILING = re.compile(rb"Illegal trailing comma before end of (array|object)")


def _as_311(frames: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    def word(m: re.Match[bytes]) -> bytes:
        if m.group(1) == b"array":
            return b"Expecting value"
        return b"Expecting property name enclosed in double quotes"

    return [(kind, _TRAILING.sub(word, payload)) for kind, payload in frames]


def _same_reply(python_sock: str, native_sock: str, data: bytes) -> list[tuple[bytes, bytes]]:
    """Both hosts' replies to the same frames: the same bytes (a malformed frame also as the
    Python host's code words it here, where json is loaded: the host loads it when it needs
    it, lean.loads)."""
    expected = _ask(python_sock, data)
    here = _said_here(data)
    if here is not None:
        assert expected == here, f"{data[:300]!r}"
    got = _ask(native_sock, data)
    assert got == _as_311(expected), f"{data[:300]!r}"
    return expected


def test_every_reply_is_the_python_hosts_word_for_word(pair: tuple[str, str]) -> None:
    python_sock, native_sock = pair
    for data in CASES:
        _same_reply(python_sock, native_sock, data)
    # Either side of a Python 3.11 host's recursion limit (990 to 992 deep, as its stack is;
    # from 3.12 on, the C recursion limit of _json is another).
    for depth in (900, 1100) if sys.version_info[:2] == (3, 11) else ():
        nested = b'{"op": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
        _same_reply(python_sock, native_sock, _frame(b"J", nested))
        _same_reply(python_sock, native_sock, _frame(b"J", b"[" * depth + b"]" * depth))
    # Both are still serving, with the same state.
    for sock in pair:
        status = HostClient(sock).status()
        assert status.running
        assert (status.rows, status.cols) == (40, 120)


def _random_value(rnd: random.Random, depth: int = 0) -> str:
    """A JSON value's text, often broken: odd numbers, escapes, code points, nesting."""
    pick = rnd.random()
    if depth > 4 or pick < 0.35:
        return rnd.choice(
            [
                "null",
                "true",
                "false",
                "NaN",
                "Infinity",
                "-Infinity",
                str(rnd.randint(-(10**30), 10**30)),
                repr(rnd.uniform(-1e6, 1e6)),
                repr(rnd.random() * 10 ** rnd.randint(-320, 308)),
                f"{rnd.randint(0, 9)}e{rnd.randint(-400, 400)}",
                "-0",
                "0.0",
                '"' + _random_text(rnd) + '"',
            ]
        )
    if pick < 0.6:
        return '"' + _random_text(rnd) + '"'
    if pick < 0.8:
        items = [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
        return "[" + rnd.choice([",", ", ", " ,\n"]).join(items) + "]"
    keys = ['"' + _random_text(rnd, short=True) + '"' for _ in range(rnd.randint(0, 4))]
    if keys and rnd.random() < 0.3:
        keys.append(keys[0])
    members = [f"{k}: {_random_value(rnd, depth + 1)}" for k in keys]
    return "{" + ", ".join(members) + "}"


# Code points whose printability no Unicode version since 14 changed.
_POINTS = [
    *range(0x20, 0x7F),
    0x0,
    0x1,
    0x1F,
    0x7F,
    0x80,
    0x85,
    0x9F,
    0xA0,
    0xAD,
    0xE9,
    0x378,
    0x3B1,
    0x600,
    0x61C,
    0x1680,
    0x200B,
    0x2028,
    0x2029,
    0x202F,
    0x3000,
    0x4E2D,
    0xD7FF,
    0xE000,
    0xF8FF,
    0xFEFF,
    0xFFFD,
    0xFFFE,
    0xFFFF,
    0x1F600,
    0xE0001,
    0xF0000,
    0x10FFFF,
]


def _random_text(rnd: random.Random, short: bool = False) -> str:
    out = []
    for _ in range(rnd.randint(0, 4 if short else 12)):
        kind = rnd.random()
        cp = rnd.choice(_POINTS)
        if kind < 0.5:
            out.append(chr(cp) if cp >= 0x20 and cp not in (0x22, 0x5C) else "x")
        elif kind < 0.8:
            out.append(f"\\u{cp:04x}" if cp < 0x10000 else _pair(cp))
        elif kind < 0.9:
            out.append(f"\\u{rnd.choice([0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83D]):04x}")
        else:
            out.append(rnd.choice(['\\"', "\\\\", "\\n", "\\t", "'", "\\/", "\\b", "\\f"]))
    return "".join(out)


def _pair(cp: int) -> str:
    v = cp - 0x10000
    return f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"


def _mutate(rnd: random.Random, doc: bytes) -> bytes:
    """Break a document a little: cut it, drop, double or swap a byte, or add one."""
    if not doc or rnd.random() < 0.5:
        return doc
    i = rnd.randrange(len(doc))
    how = rnd.randrange(4)
    if how == 0:
        return doc[:i]
    if how == 1:
        return doc[:i] + doc[i + 1 :]
    if how == 2:
        return doc[:i] + doc[i : i + 1] * 2 + doc[i + 1 :]
    return doc[:i] + bytes([rnd.choice(b'{}[]",:\\ \x00\x1f\x80\xff0e.-')]) + doc[i:]


def _would_signal(data: bytes) -> bool:
    """Whether this frame is a signal request the hosts would deliver."""
    try:
        req: dict[str, Any] = json.loads(data[5:])
        sig: Any = req["signal"] if req.get("op") == "signal" else None
        num = getattr(signal, sig, None) if isinstance(sig, str) else int(sig)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
        return False
    return isinstance(num, int) and 0 <= num < signal.NSIG


def test_random_requests_get_the_python_hosts_replies(pair: tuple[str, str]) -> None:
    python_sock, native_sock = pair
    rnd = random.Random(27)
    for _ in range(400):
        value = _random_value(rnd)
        op = rnd.choice(["op", "op", "signal", "lines", "rows", "every_ms"])
        if op == "op":
            doc = '{"op": ' + value + "}"
        else:
            name = {"signal": "signal", "lines": "screen", "rows": "resize", "every_ms": "watch"}[
                op
            ]
            doc = f'{{"op": "{name}", "{op}": {value}, "cols": 100000}}'
        data = _frame(b"J", _mutate(rnd, doc.encode("utf-8", "surrogatepass")))
        if _would_signal(data):
            continue  # a real signal would end the program
        _same_reply(python_sock, native_sock, data)
    for sock in pair:
        assert HostClient(sock).status().running


def test_a_send_in_bracketed_paste_mode_and_output_are_the_same(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output, replay, screen and a paste the same way from both hosts (a shell that turns
    bracketed paste on, prints escapes, a CR-redrawn line and bad UTF-8, then echoes)."""
    root = Path(tempfile.mkdtemp(prefix="vq", dir="/tmp"))
    script = (
        "printf '\\033[?2004h'; printf 'a\\033[31mred\\033[0m\\rAB\\tc\\bd\\n';"
        "printf '\\303\\050 \\342\\202 \\355\\240\\200 end  \\302\\240\\n';"
        "printf '\\033]0;title\\007kept\\033P..\\033\\\\x\\n'; printf 'ready\\n';"
        "IFS= read -r line; printf 'GOT:%s\\n' \"$line\" | od -c | head -3; sleep 30"
    )
    screens: dict[str, list[str | bytes]] = {}
    try:
        for kind in ("python", "native"):
            monkeypatch.setenv(HOST_ENV, kind)
            agent = f"ag_{kind}"
            record = launch_host(
                agent,
                ["sh", "-c", script],
                root,
                {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
                root / "h" / f"{agent}.json",
                root / "r" / f"{agent}.sock",
                linger=0.2,
            )
            client = HostClient(record.socket)
            with client.open_stream() as stream:
                stream.read_until(b"ready", 10)
                assert client.status().bracketed_paste
                client.send_text("x\x1b[201~y\u00e9")
                out = stream.read_until(b"0000025", 10)
            assert b"\x1b[200~" not in out  # the program's echo is od's

            def printed(c: HostClient = client) -> bool:
                return "0000025" in c.screen(50)

            wait_until(printed, 10, "od's output")
            screens[kind] = [client.screen(n) for n in (1, 3, 50, 0, -1)]
            screens[kind].append(
                _ask(record.socket, _frame(b"J", _json({"op": "attach"})) + b"")[0][1]
            )
            client.stop(grace=1)
        assert screens["native"] == screens["python"]
        assert "G   O   T" in screens["native"][2]
    finally:
        shutil.rmtree(root, ignore_errors=True)


_PRINTER = """
import random, sys, time
rnd = random.Random(int(sys.argv[1]))
pieces = [b"\\x1b[", b"\\x1b]0;t\\x07", b"\\x1b]8;;x\\x1b\\\\", b"\\x1bP", b"\\x1b(B", b"\\x1b",
          b"\\r", b"\\n", b"\\b", b"\\t", b"\\x07", b"\\x7f", b"\\x85", b" \\xc2\\xa0",
          b"\\xe2\\x80\\xa8", b"\\xc3", b"\\xa9", b"\\xe2\\x82", b"\\xed\\xa0\\x80",
          b"\\xf0\\x9f\\x98\\x80", b"\\xff", b"31m", b"2J", b"?2004h", b"word ", b"  ", b"m"]
out = bytearray()
while len(out) < int(sys.argv[2]):
    out += rnd.choice(pieces) if rnd.random() < 0.6 else bytes([rnd.randrange(256)])
sys.stdout.buffer.write(bytes(out) + b"\\nDONE\\n")
sys.stdout.flush()
time.sleep(30)
"""


@pytest.mark.parametrize(("seed", "size"), [(1, 2_000), (2, 40_000), (3, 300_000)])
def test_screens_of_random_output_are_the_python_hosts(
    built: Path, monkeypatch: pytest.MonkeyPatch, seed: int, size: int
) -> None:
    """Escapes cut anywhere, bad UTF-8, CRs and backspaces, past the ring's size: the same
    screen for every number of lines, and the same replay on attach."""
    root = Path(tempfile.mkdtemp(prefix="vs", dir="/tmp"))
    seen: dict[str, list[object]] = {}
    try:
        for kind in ("python", "native"):
            monkeypatch.setenv(HOST_ENV, kind)
            agent = f"ag_{kind}"
            record = launch_host(
                agent,
                [sys.executable, "-c", _PRINTER, str(seed), str(size)],
                root,
                {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                root / "h" / f"{agent}.json",
                root / "r" / f"{agent}.sock",
                linger=0.2,
            )
            client = HostClient(record.socket)

            def done(c: HostClient = client) -> bool:
                return c.screen(1) == "DONE"

            wait_until(done, 20, "the output to end")
            seen[kind] = [client.screen(n) for n in (1, 2, 5, 40, 200, 5000, 0, -3)]
            seen[kind].append(_ask(record.socket, _frame(b"J", _json({"op": "attach"})))[0])
            replay = _ask(record.socket, _frame(b"J", _json({"op": "watch", "output": True})))
            seen[kind].append(replay)
            client.stop(grace=1)
        assert seen["native"] == seen["python"]
        assert len(str(seen["native"][5])) > min(size // 4, 2000)  # a screen, not nothing
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- hostile peers, against a build with AddressSanitizer and UBSan ---------------------


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if native.compiler() is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("asan") / "volee-host"
    try:
        return native.build(out, sanitize=True)
    except native.NativeBuildError as exc:
        pytest.skip(f"no sanitizer build here: {exc}")


def _nofile(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


class Foreground:
    """A native host run in the foreground (its stderr kept), holding `sleep 60`."""

    def __init__(
        self, binary: Path, root: Path, linger: float = 0.3, nofile: int | None = None
    ) -> None:
        self.root = root
        self.sock = str(root / "r" / "s.sock")
        self.log = root / "host.log"
        (root / "h").mkdir()
        read_fd, write_fd = os.pipe()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            # leaks: the host frees what it holds; a report ends it with an error code
            "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=99",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
        }
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(binary),
                    "--agent",
                    "ag_f",
                    "--record",
                    str(root / "h" / "ag_f.json"),
                    "--socket",
                    self.sock,
                    "--cwd",
                    str(root),
                    "--linger",
                    str(linger),
                    "--ready-fd",
                    str(write_fd),
                    "--foreground",
                    "--",
                    "sleep",
                    "60",
                ],
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
                preexec_fn=None if nofile is None else lambda: _nofile(nofile),
            )
        os.close(write_fd)
        with os.fdopen(read_fd) as ready:
            line = ready.readline()
        assert json.loads(line)["ok"], self.log.read_text()

    def end(self) -> str:
        """Stop the program, let the host exit; its log (nothing reported, exit 0)."""
        HostClient(self.sock).stop(grace=1)
        code = self.proc.wait(timeout=30)
        text = self.log.read_text(errors="replace")
        assert code == 0, text
        assert "Sanitizer" not in text, text
        assert "runtime error" not in text, text
        return text


@pytest.fixture
def foreground(sanitized: Path) -> Iterator[Foreground]:
    root = Path(tempfile.mkdtemp(prefix="vf", dir="/tmp"))
    host = Foreground(sanitized, root)
    yield host
    if host.proc.poll() is None:
        host.proc.kill()
        host.proc.wait()
    shutil.rmtree(root, ignore_errors=True)


def _send_raw(path: str, data: bytes, read: bool = True) -> bytes:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(path)
    got = b""
    try:
        sock.sendall(data)
        if read:
            sock.shutdown(socket.SHUT_WR)
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    return got


def test_random_frames_never_crash_or_hang_the_host(foreground: Foreground) -> None:
    rnd = random.Random(4)
    for _ in range(300):
        kind = rnd.choice([b"J", b"J", b"J", b"I", b"O", bytes([rnd.randrange(256)])])
        size = rnd.choice([0, 1, 5, 100, 3000])
        payload = bytes(rnd.randrange(256) for _ in range(size))
        if rnd.random() < 0.5:
            payload = _mutate(rnd, _random_value(rnd).encode("utf-8", "surrogatepass"))
        header = kind + struct.pack(
            ">I", len(payload) if rnd.random() < 0.9 else rnd.randrange(2**32)
        )
        data = header + payload
        if rnd.random() < 0.2:
            data = data[: rnd.randrange(len(data) + 1)]  # cut: the host waits for the rest
        _send_raw(foreground.sock, data, read=rnd.random() < 0.5)
    assert HostClient(foreground.sock).status().running
    foreground.end()


def test_deep_nesting_infinities_and_huge_replies_are_refused(foreground: Foreground) -> None:
    client = HostClient(foreground.sock)
    deep = b'{"op": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    reply = _ask(foreground.sock, _frame(b"J", deep))
    assert json.loads(reply[0][1]) == {
        "ok": False,
        "error": "bad JSON frame: maximum recursion depth exceeded while decoding a JSON array "
        "from a unicode string",
    }
    for fields, said in (
        ({"rows": float("inf"), "cols": 5}, "cannot convert float infinity to integer"),
        ({"rows": 5, "cols": -float("inf")}, "cannot convert float infinity to integer"),
    ):
        with pytest.raises(HostError, match=said):
            client.request("resize", **fields)
    with pytest.raises(HostError, match="int too large to convert to float"):
        client.request("stop", grace=10**400)
    # A repr past what a client may be sent: the client is dropped, the host serves on.
    huge = b'{"op": [' + b",".join([b'"\\u0001\\u0002\\u0003\\u0004"'] * 400_000) + b"]}"
    assert _ask(foreground.sock, _frame(b"J", huge)) == []
    # A frame announced at the limit and never sent, and a client that never reads.
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(foreground.sock)
    idle.sendall(b"J" + struct.pack(">I", 16 * 1024 * 1024) + b"{")
    assert client.status().running
    idle.close()
    assert "dropped a client that stopped reading" in foreground.end()


def test_a_stop_with_an_endless_grace_still_stops_on_the_program_end(
    foreground: Foreground,
) -> None:
    record = read_record(foreground.root / "h" / "ag_f.json")
    assert record is not None
    assert record.program_pid is not None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(foreground.sock)
    sock.sendall(_frame(b"J", b'{"op": "stop", "grace": Infinity}'))
    time.sleep(0.3)
    # sleep takes SIGTERM and ends: the waiter hears it, and the host exits after its linger
    sock.settimeout(10)
    reply = sock.recv(65536)
    sock.close()
    assert b'"signal_name":"SIGTERM"' in reply
    code = foreground.proc.wait(timeout=30)  # after its linger
    text = foreground.log.read_text()
    assert code == 0, text
    ended = read_record(foreground.root / "h" / "ag_f.json")
    assert ended is not None
    assert ended.exit is not None
    assert ended.exit.signal_name == "SIGTERM"
    assert ended.exit.stop_requested
    assert "Sanitizer" not in text, text
    assert "runtime error" not in text, text


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_out_of_descriptors_the_host_waits_then_serves_again(built: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="vo", dir="/tmp"))
    host = Foreground(built, root, nofile=24)
    try:
        socks = []
        for _ in range(40):  # more than it may hold: the rest wait in the backlog
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(host.sock)
            except BlockingIOError:
                pass
            socks.append(sock)
        time.sleep(0.3)
        before = _cpu_ticks(host.proc.pid)
        time.sleep(1.0)
        assert _cpu_ticks(host.proc.pid) - before < 20  # waiting, not spinning on accept
        for sock in socks:
            sock.close()

        def serves() -> bool:
            try:
                return HostClient(host.sock).status().running
            except HostError:
                return False  # its backlog still holds the closed ones

        wait_until(serves, 10, "the host to serve again")
        assert "cannot accept a connection" in host.end()
    finally:
        if host.proc.poll() is None:
            host.proc.kill()
            host.proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def test_a_request_of_a_million_keys_costs_no_more_than_its_frame(built: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="vk", dir="/tmp"))
    host = Foreground(built, root)
    try:
        doc = b'{"op": "nope", ' + b'"k": 1, ' * 1_500_000 + b'"z": 0}'
        reply = _ask(host.sock, _frame(b"J", doc), timeout=30)
        assert json.loads(reply[0][1]) == {"ok": False, "error": "unknown request 'nope'"}
        status = Path(f"/proc/{host.proc.pid}/status").read_text()
        peak_kb = int(status.split("VmHWM:")[1].split()[0])
        assert peak_kb < 3 * len(doc) // 1024 + 4096  # the frame, its decoded copy, no more
        host.end()
    finally:
        if host.proc.poll() is None:
            host.proc.kill()
            host.proc.wait()
        shutil.rmtree(root, ignore_errors=True)


# --- choosing the host ----------------------------------------------------------------


def test_volee_host_picks_the_host(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOST_ENV, "python")
    assert host_command()[1:3] == ["-I", "-S"]
    monkeypatch.setenv(HOST_ENV, "native")
    assert host_command() == [str(built)]
    monkeypatch.delenv(HOST_ENV)
    assert host_command() == [str(built)]
    monkeypatch.setattr(native, "binary", lambda: None)
    assert host_command()[1:3] == ["-I", "-S"]  # not built: the Python host
    monkeypatch.setenv(HOST_ENV, "native")
    with pytest.raises(HostError, match="the native host is not built"):
        host_command()


def test_a_binary_older_than_its_source_is_not_used(tmp_path: Path) -> None:
    source = tmp_path / "volee_host.c"
    shutil.copy(native.SOURCE, source)
    out = native.build(tmp_path / "volee-host", source=source)
    assert native.binary(out, source) == out
    source.write_text(source.read_text() + "\n/* changed */\n")
    assert native.binary(out, source) is None
    assert native.binary(tmp_path / "missing", source) is None


def test_a_binary_without_its_source_is_the_wheels_and_is_used(tmp_path: Path) -> None:
    # An installed wheel (the .deb) carries the binary alone: nothing to compare it with.
    source = tmp_path / "volee_host.c"
    shutil.copy(native.SOURCE, source)
    out = native.build(tmp_path / "volee-host", source=source)
    source.unlink()
    (tmp_path / "volee-host.sha256").unlink()
    assert native.binary(out, source) == out
    out.chmod(0o644)
    assert native.binary(out, source) is None


def test_without_a_compiler_or_with_a_broken_source_the_build_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return missing; }\n")
    if native.compiler() is not None:
        with pytest.raises(native.NativeBuildError, match="missing"):
            native.build(tmp_path / "out", source=broken)
        assert not (tmp_path / "out").exists()
    monkeypatch.setattr(native, "compiler", lambda: None)
    with pytest.raises(native.NativeBuildError, match="no C compiler"):
        native.build(tmp_path / "out")

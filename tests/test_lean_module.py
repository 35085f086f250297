"""``lean``: what the stdlib-only processes share, loaded alone, and giving what ``json`` gives
(the same text for records and frames, the same values)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from volee_desktop import lean
from volee_desktop.cli import bridge, hookshim, statusline
from volee_desktop.hosts import recordio, wire
from volee_desktop.mcp import relay

PACKAGE_FOLDER = Path(lean.__file__).parent


def _imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` says a process imported."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


RECORD: dict[str, Any] = {
    "v": 1,
    "agent": "ag_1",
    "host_pid": 4242,
    "host_create_time": 1764590000.37,
    "host_start_ticks": 123456789,
    "program_pid": None,
    "program_create_time": None,
    "program_start_ticks": None,
    "boot_time": 1764500000.0,
    "boot_id": "5e1c0b1e-8f8a-4c55-9d1e-0c3c1f3f1a2b",
    "started_at": 1764590000.123456,
    "argv": ["claude", "--settings", "/tmp/s.json", "dis «ça» 🙂", ""],
    "cwd": "/home/me/proj ект",
    "socket": "/run/user/1000/volee/ag_1.sock",
    "exit": {
        "code": None,
        "signal": 9,
        "signal_name": "SIGKILL",
        "ended_at": 1764590100.5,
        "stop_requested": True,
        "host_signal": None,
    },
    "error": None,
}

VALUES: list[Any] = [
    RECORD,
    {},
    [],
    {"a": {}, "b": [], "c": [[]], "d": [{}]},
    {"nested": [1, [2, [3, {"four": [5.5, -0.0, 1e300, 1e-300, 2**70]}]]]},
    {"text": 'quote " backslash \\ slash / tab \t nl \n cr \r nul \x00 del \x7f esc \x1b'},
    {"unicode": "é ü 中文 \u2028 \u2029 \ufeff 🙂 \U0001f600", "surrogate": "\udc80\ud800"},
    {"ok": True, "no": False, "none": None, "zero": 0, "neg": -17, "big": 10**30},
    {"floats": [0.1, 1.0, -2.5, 3.14159, 1e16, 123456789.123456789]},
    {"tuple": (1, "two", (3,))},
    {"keys": {1: "int", 2.5: "float", False: "false", None: "null", "s": "str"}},
    ["top", "level", "list"],
    "a string",
    42,
    None,
    {"event": "exit", "exit": {"code": 0, "signal": None}},
    {"op": "send", "text": "x" * 100_000, "enter": True},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    assert lean.dumps(value) == json.dumps(value)
    assert lean.dumps(value, indent=1) == json.dumps(value, indent=1)
    assert lean.dumps(value, indent=0) == json.dumps(value, indent=0)
    assert lean.dumps(value, indent=4) == json.dumps(value, indent=4)
    compact = (",", ":")
    assert lean.dumps(value, separators=compact) == json.dumps(value, separators=compact)


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_loads_reads_what_json_dumps_wrote(value: Any) -> None:
    for text in (
        json.dumps(value),
        json.dumps(value, indent=1),
        json.dumps(value, ensure_ascii=False),
    ):
        assert lean.loads(text) == json.loads(text)
        data = text.encode("utf-8", "surrogatepass")
        assert lean.loads(data) == json.loads(data)
    assert json.loads(lean.dumps(value)) == json.loads(json.dumps(value))


def test_the_values_json_has_no_name_for_are_written_and_read_as_json_does() -> None:
    value = [math.inf, -math.inf, math.nan]
    assert lean.dumps(value) == json.dumps(value) == "[Infinity, -Infinity, NaN]"
    back = lean.loads("[Infinity, -Infinity, NaN, 1.5, 7]")
    assert back[:2] == [math.inf, -math.inf]
    assert math.isnan(back[2])
    assert back[3:] == [1.5, 7]
    assert type(back[4]) is int


def test_int_subclasses_are_written_as_numbers() -> None:
    value = {"sig": signal.SIGTERM, "flag": True}
    assert lean.dumps(value) == json.dumps(value) == '{"sig": 15, "flag": true}'


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "{",
        '{"a": 1',
        '{"a" 1}',
        "[1, 2,]",
        '{"a": 1} x',
        "[1] [2]",
        "nul",
        '"open',
        '"bad \\x escape"',
        '"control \x01 char"',
        "\n\n  @",
        "\ufeff{}",
        "{}\n\n  ]",
    ],
)
def test_loads_refuses_what_json_refuses_with_its_words(text: str) -> None:
    with pytest.raises(ValueError) as ours:
        lean.loads(text)
    with pytest.raises(ValueError) as theirs:
        json.loads(text)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32-be"])
def test_loads_reads_bytes_in_every_encoding_json_detects(encoding: str) -> None:
    data = json.dumps({"é": ["ü", 1]}, ensure_ascii=False).encode(encoding)
    assert lean.loads(data) == json.loads(data) == {"é": ["ü", 1]}
    assert lean.loads(bytearray(data)) == {"é": ["ü", 1]}


def test_whitespace_around_a_document_is_allowed() -> None:
    assert lean.loads(' \t\n\r{"a": [1, 2]} \n') == {"a": [1, 2]}


def test_what_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    for bad in ({"x": object()}, {"x": {1, 2}}, {(1, 2): "tuple key"}, b"bytes"):
        with pytest.raises(TypeError) as ours:
            lean.dumps(bad)
        with pytest.raises(TypeError) as theirs:
            json.dumps(bad)
        assert str(ours.value) == str(theirs.value)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        lean.dumps(loop)
    with pytest.raises(TypeError):
        lean.loads(42)  # type: ignore[arg-type]


def test_a_json_frame_is_the_bytes_json_would_frame() -> None:
    obj = {"ok": True, "record": RECORD, "text": "écran 🙂"}
    expected = json.dumps(obj, separators=(",", ":")).encode()
    framed = wire.json_frame(obj)
    assert framed == wire.frame(wire.JSON, expected)
    ((kind, payload),) = wire.FrameReader().feed(framed)
    assert kind == wire.JSON
    assert wire.decode_json(payload) == json.loads(expected)
    with pytest.raises(wire.FrameError, match="bad JSON frame: Expecting value"):
        wire.decode_json(b"")
    with pytest.raises(wire.FrameError, match="must hold an object, not list"):
        wire.decode_json(b"[1]")


def test_a_record_written_by_the_host_is_the_file_json_would_write(tmp_path: Any) -> None:
    path = str(tmp_path / "ag_1.json")
    recordio.write_json_atomic(path, lean.dumps(RECORD, indent=1))
    with open(path, "rb") as f:
        written = f.read()
    assert written == json.dumps(RECORD, indent=1).encode()
    assert json.loads(written) == RECORD


def test_an_environment_with_undecodable_bytes_comes_back_whole() -> None:
    # os.environ holds bytes that are not UTF-8 as lone surrogates: json escapes them.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ODD": b"caf\xe9".decode(sys.getfilesystemencoding(), "surrogateescape"),
    }
    assert lean.loads(json.dumps(env).encode()) == env


def test_the_lean_module_alone_imports_only_c_halves_and_os() -> None:
    """Loaded as the entry points load it (``-I -S``, its folder on the path), used whole."""
    code = (
        "import sys; sys.path.append(sys.argv[1]); import lean; "
        "lean.loads(lean.dumps({'a': [1, 2.5, None, True]})); lean.socket_refusal('/nowhere/s')"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", "-c", code, str(PACKAGE_FOLDER)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    # What every entry point imports itself, before it loads ``lean``.
    own = "from __future__ import annotations; import os, sys"
    before = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", "-c", own],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert "lean" in _imported(done.stderr)  # the probe sees imports at all
    assert _imported(done.stderr) - _imported(before.stderr) == {"lean", "_json"}


@pytest.mark.parametrize(
    ("entry", "args", "env"),
    [
        (hookshim, ["Stop"], {"VOLEE_SPOOL": "{tmp}"}),
        (statusline, ["{tmp}/state"], {"VOLEE_SPOOL": "{tmp}"}),
        (relay, [], {"VOLEE_AGENT": "ag_x"}),
        (bridge, [], {}),
    ],
    ids=["hookshim", "statusline", "relay", "bridge"],
)
def test_every_lean_entry_point_loads_the_one_module_and_not_the_package(
    entry: Any, args: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    assert entry.lean is lean or entry.lean.__file__ == lean.__file__
    environment = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    environment["VOLEE_SOCKET"] = str(tmp_path / "nobody.sock")
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-X",
            "importtime",
            entry.__file__,
            *(a.format(tmp=tmp_path) for a in args),
        ],
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
        env=environment,
    )
    imported = _imported(done.stderr)
    assert "lean" in imported, done.stderr[-2000:]
    assert not {m for m in imported if m.startswith("volee_desktop")}

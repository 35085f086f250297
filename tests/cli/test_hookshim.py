"""The hook shim's JSON line (``lean``: ``_json``/``_socket``, not ``json``/``socket``:
docs/decisions.md D5) says exactly what ``json`` would, and the shim really runs without the
heavy modules."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from volee_desktop import lean
from volee_desktop.cli import hookshim

flat_values = st.one_of(
    st.none(),
    st.text(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
)
flat = st.dictionaries(st.text(), flat_values)
requests = st.dictionaries(st.text(), st.one_of(flat_values, flat))

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(),
    ),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@settings(max_examples=300)
@given(requests)
def test_what_the_shim_writes_is_the_json_of_what_it_sends(request: dict[str, Any]) -> None:
    line = lean.dumps(request)
    assert json.loads(line) == request
    assert line.isascii()  # escaped: safe whatever the payload's bytes were
    assert "\n" not in line  # one line of NDJSON


def test_a_payload_full_of_awkward_characters_survives_the_round_trip() -> None:
    payload = 'quote " backslash \\ newline \n tab \t nul \x00 é 🦀 \u2028 \ud800'
    params = {"event": "Stop", "payload": payload, "agent": None, "received_at": 1.5}
    assert json.loads(lean.dumps(params)) == params


def test_what_cannot_be_sent_is_refused_not_mangled() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        lean.dumps({"payload": b"bytes"})
    with pytest.raises(TypeError, match="not JSON serializable"):
        lean.dumps({"payload": object()})
    # Lists and booleans are JSON's own, not Python's repr.
    assert lean.dumps({"payload": [1, 2], "accepted": True}) == json.dumps(
        {"payload": [1, 2], "accepted": True}
    )


@settings(max_examples=300)
@given(json_values)
def test_the_shim_reads_what_json_writes(value: Any) -> None:
    assert lean.loads(json.dumps(value)) == value
    assert lean.loads(f" {json.dumps(value)}\n") == value


def test_the_shim_reads_the_constants_json_writes() -> None:
    value = lean.loads(json.dumps([float("inf"), -float("inf"), float("nan")]))
    assert value[:2] == [float("inf"), -float("inf")]
    assert math.isnan(value[2])


@pytest.mark.parametrize("text", ["", "   ", "{", '{"a": }', "nope", '{"a": 1} trailing', "[1,]"])
def test_what_is_not_one_json_value_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        lean.loads(text)
    with pytest.raises(ValueError):
        json.loads(text)


def test_the_shim_runs_without_json_socket_re_enum_or_typing(tmp_path: Path) -> None:
    """The modules the shim avoids stay unloaded when it runs as agents run it (-I -S)."""
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", hookshim.__file__, "Stop"],
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
        env={"VOLEE_SOCKET": str(tmp_path / "nobody.sock"), "VOLEE_SPOOL": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert {"_json", "_socket"} <= imported  # the probe sees imports at all
    assert imported.isdisjoint({"json", "socket", "re", "enum", "typing", "collections"})
    assert len(list(tmp_path.glob("*.json"))) == 1  # and it did its job: spooled


def test_a_payload_too_large_for_one_message_is_spooled_whole_when_no_daemon_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hand-over (``.<key>.big`` named on the connection) fell through: the file becomes
    # an ordinary spool file, for the daemon to take at its start.
    spool = tmp_path / "spool"
    monkeypatch.setenv("VOLEE_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("VOLEE_SPOOL", str(spool))
    big = json.dumps({"session_id": "s", "prompt": "é" * (hookshim.MAX_MESSAGE // 2)})
    assert hookshim._too_large_for_one_message(big)
    assert not hookshim._too_large_for_one_message("x" * 1000)
    assert hookshim.hand_over("UserPromptSubmit", big.encode(), 1.0) == 0
    (spooled,) = spool.glob("*.json")
    assert json.loads(spooled.read_text())["payload"] == big
    assert not list(spool.glob(".*"))

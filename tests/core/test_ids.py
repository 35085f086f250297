"""Ids: prefixed ULIDs, well-formed, sorted by creation time, bad input refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from volee_desktop.core.ids import (
    AGENT,
    MESSAGE,
    MISSION,
    PREFIXES,
    THREAD,
    IdError,
    is_id,
    new_id,
    time_of,
    ulid,
)

MAX_TIME = (1 << 48) - 1
times = st.integers(0, MAX_TIME)
randomness = st.binary(min_size=10, max_size=10)


@settings(max_examples=50, deadline=None)
@given(prefix=st.sampled_from(PREFIXES), time_ms=times, rand=randomness)
def test_ids_are_well_formed(prefix: str, time_ms: int, rand: bytes) -> None:
    value = new_id(prefix, time_ms, rand)
    assert value.startswith(prefix)
    assert len(value) == len(prefix) + 26
    assert is_id(value, prefix)
    assert time_of(value) == time_ms


def test_ulid_is_the_known_encoding() -> None:
    # Crockford base32 of (time << 80 | randomness): fixed points catch a changed alphabet.
    assert ulid(0, bytes(10)) == "0" * 26
    assert ulid(MAX_TIME, b"\xff" * 10) == "7" + "Z" * 25
    assert ulid(1, bytes(10)) == "0000000001" + "0" * 16


def test_same_inputs_give_the_same_id() -> None:
    # Time and randomness are arguments: nothing else may leak in.
    assert new_id(AGENT, 42, b"0123456789") == new_id(AGENT, 42, b"0123456789")


@settings(max_examples=50, deadline=None)
@given(t1=times, t2=times, r1=randomness, r2=randomness)
def test_ids_sort_by_creation_time(t1: int, t2: int, r1: bytes, r2: bytes) -> None:
    a, b = new_id(AGENT, t1, r1), new_id(AGENT, t2, r2)
    if t1 < t2:
        assert a < b
    elif t1 > t2:
        assert a > b
    else:
        # Same millisecond: the randomness orders them, as bytes.
        assert (a < b) == (r1 < r2)


@pytest.mark.parametrize(
    ("value", "prefix"),
    [
        (new_id(AGENT, 5, bytes(10)), MISSION),  # another kind
        (new_id(MESSAGE, 5, bytes(10)), MISSION),  # ms_ is not a prefix of msg_
        (new_id(MISSION, 5, bytes(10)), MESSAGE),
        ("ag_" + "0" * 25, AGENT),  # too short
        ("ag_" + "0" * 27, AGENT),  # too long
        ("ag_8" + "0" * 25, AGENT),  # time beyond 48 bits
        ("ag_" + "0" * 25 + "U", AGENT),  # U is not Crockford
        ("ag_" + "0" * 25 + "I", AGENT),
        ("ag_" + "0" * 25 + "a", AGENT),  # lower case is not canonical
        ("AG_" + "0" * 26, AGENT),
        ("", AGENT),
    ],
)
def test_prefix_and_form_are_checked(value: str, prefix: str) -> None:
    assert not is_id(value, prefix)


@pytest.mark.parametrize(
    ("prefix", "time_ms", "rand"),
    [
        ("xx_", 0, bytes(10)),
        ("ag", 0, bytes(10)),
        (THREAD, -1, bytes(10)),
        (THREAD, 1 << 48, bytes(10)),
        (THREAD, 0, bytes(9)),
        (THREAD, 0, bytes(11)),
    ],
)
def test_bad_inputs_raise_id_error(prefix: str, time_ms: int, rand: bytes) -> None:
    with pytest.raises(IdError) as caught:
        new_id(prefix, time_ms, rand)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "value", ["", "garbage", "ag_", "ag_" + "0" * 25, "xx_" + "0" * 26, "ag_" + "!" * 26]
)
def test_time_of_a_malformed_id_raises_id_error(value: str) -> None:
    with pytest.raises(IdError, match="not a prefixed ULID"):
        time_of(value)

"""The wire codec and the line splitter, without sockets."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    OVERSIZED,
    DecodedReply,
    ErrorCode,
    IpcError,
    LineBuffer,
    Push,
    Request,
    RequestError,
    decode_reply_or_push,
    decode_request,
    encode_error,
    encode_push,
    encode_request,
    encode_result,
)


def test_error_codes_are_the_stable_strings() -> None:
    assert [c.value for c in ErrorCode] == [
        "bad_json",
        "too_large",
        "bad_request",
        "unsupported_version",
        "unknown_method",
        "not_found",
        "ambiguous",
        "refused",
        "conflict",
        "unavailable",
        "internal",
        "forbidden",
    ]
    assert MAX_MESSAGE == 1_048_576


def test_request_round_trip() -> None:
    line = encode_request(7, "agents.get", {"agent": "ag_1"})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line) == {
        "v": 1,
        "id": 7,
        "method": "agents.get",
        "params": {"agent": "ag_1"},
    }
    assert decode_request(line[:-1]) == Request(7, "agents.get", {"agent": "ag_1"})
    assert decode_request(b'{"v":1,"id":"a","method":"m"}') == Request("a", "m", {})


def test_replies_and_pushes_decode() -> None:
    assert decode_reply_or_push(encode_result(3, [1, "é"])[:-1]) == DecodedReply(3, [1, "é"], None)
    reply = decode_reply_or_push(encode_error(4, ErrorCode.NOT_FOUND, "no agent x")[:-1])
    assert isinstance(reply, DecodedReply)
    assert reply.id == 4
    assert reply.error is not None
    assert reply.error.code is ErrorCode.NOT_FOUND
    assert reply.error.message == "no agent x"
    push = encode_push("event", {"seq": 5})
    assert json.loads(push) == {"v": 1, "push": "event", "seq": 5}
    assert decode_reply_or_push(push[:-1]) == Push("event", {"seq": 5})


def test_unknown_error_code_from_a_newer_daemon_is_kept() -> None:
    reply = decode_reply_or_push(b'{"v":1,"id":1,"error":{"code":"brand_new","message":"m"}}')
    assert isinstance(reply, DecodedReply)
    assert reply.error is not None
    assert reply.error.code == "brand_new"


def test_push_payload_cannot_override_protocol_fields() -> None:
    with pytest.raises(ValueError, match="reserved"):
        encode_push("event", {"v": 2})


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b"{not json", ErrorCode.BAD_JSON, None),
        (b"\xff\xfe{}", ErrorCode.BAD_JSON, None),
        (b"[1, 2]", ErrorCode.BAD_REQUEST, None),
        (b'"hello"', ErrorCode.BAD_REQUEST, None),
        (b'{"v":1,"method":"m"}', ErrorCode.BAD_REQUEST, None),
        (b'{"v":1,"id":true,"method":"m"}', ErrorCode.BAD_REQUEST, None),
        (b'{"v":1,"id":1.5,"method":"m"}', ErrorCode.BAD_REQUEST, None),
        (b'{"id":1,"method":"m"}', ErrorCode.BAD_REQUEST, 1),
        (b'{"v":"1","id":1,"method":"m"}', ErrorCode.BAD_REQUEST, 1),
        (b'{"v":2,"id":1,"method":"m"}', ErrorCode.UNSUPPORTED_VERSION, 1),
        (b'{"v":0,"id":"x","method":"m"}', ErrorCode.UNSUPPORTED_VERSION, "x"),
        (b'{"v":1,"id":1}', ErrorCode.BAD_REQUEST, 1),
        (b'{"v":1,"id":1,"method":""}', ErrorCode.BAD_REQUEST, 1),
        (b'{"v":1,"id":1,"method":"m","params":[1]}', ErrorCode.BAD_REQUEST, 1),
    ],
)
def test_bad_requests_get_a_code_and_the_id_when_known(
    line: bytes, code: ErrorCode, request_id: int | str | None
) -> None:
    with pytest.raises(RequestError) as info:
        decode_request(line)
    assert info.value.code is code
    assert info.value.request_id == request_id
    assert info.value.message


def test_unsupported_version_lists_the_supported_ones() -> None:
    with pytest.raises(RequestError) as info:
        decode_request(b'{"v":2,"id":1,"method":"m"}')
    assert info.value.extra == {"supported": [1]}
    assert "1" in info.value.message


def test_a_line_that_breaks_the_protocol_from_the_server_is_an_error() -> None:
    for line in (b"nope", b"[]", b'{"v":9,"id":1,"result":1}', b'{"v":1,"id":1}'):
        with pytest.raises(IpcError):
            decode_reply_or_push(line)


def test_line_buffer_splits_and_keeps_partial_lines() -> None:
    buf = LineBuffer(max_line=10)
    assert buf.feed(b"ab\ncd") == [b"ab"]
    assert buf.feed(b"e\n\n  \nf") == [b"cde"]  # blank lines are skipped
    assert buf.pending == 1
    assert buf.feed(b"\n") == [b"f"]


def test_line_buffer_accepts_exactly_the_limit_and_refuses_one_more() -> None:
    buf = LineBuffer(max_line=10)
    assert buf.feed(b"a" * 10 + b"\n") == [b"a" * 10]
    assert buf.feed(b"b" * 11 + b"\nok\n") == [OVERSIZED, b"ok"]


def test_line_buffer_reports_an_oversized_line_once_and_drops_its_rest() -> None:
    buf = LineBuffer(max_line=10)
    assert buf.feed(b"x" * 11) == [OVERSIZED]  # known too long before its end
    assert buf.pending == 0
    for _ in range(100):
        assert buf.feed(b"x" * 1000) == []
        assert buf.pending == 0  # memory does not grow while discarding
    assert buf.feed(b"xx\nnext\n") == [b"next"]


@given(
    lines=st.lists(st.binary(min_size=1, max_size=30).map(lambda b: b.replace(b"\n", b"a"))),
    cuts=st.lists(st.integers(min_value=0, max_value=2000)),
)
def test_line_buffer_is_independent_of_chunking(lines: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    buf = LineBuffer(max_line=20)
    out: list[object] = []
    start = 0
    for cut in sorted(c for c in cuts if c < len(stream)):
        out += buf.feed(stream[start:cut])
        start = cut
    out += buf.feed(stream[start:])
    expected = [OVERSIZED if len(li) > 20 else li for li in lines if len(li) > 20 or li.strip()]
    assert out == expected

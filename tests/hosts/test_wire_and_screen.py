"""The host socket's framing and the plain-text screen."""

from __future__ import annotations

import pytest

from volee_desktop.hosts import wire
from volee_desktop.hosts.ring import Ring
from volee_desktop.hosts.screen import render


def test_frames_survive_any_split() -> None:
    first = wire.json_frame({"op": "send", "text": "é"})
    data = first + wire.frame(wire.OUTPUT, b"x" * 300)
    for cut in range(len(data)):
        reader = wire.FrameReader()
        frames = reader.feed(data[:cut]) + reader.feed(data[cut:])
        assert frames == [(wire.JSON, first[wire.HEADER_SIZE :]), (wire.OUTPUT, b"x" * 300)]
        assert wire.decode_json(frames[0][1]) == {"op": "send", "text": "é"}


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(wire.FrameError, match="unknown frame kind"):
        wire.FrameReader().feed(b"Z\0\0\0\0")


def test_an_oversized_frame_is_refused() -> None:
    with pytest.raises(wire.FrameError, match="over the"):
        wire.FrameReader().feed(b"J\xff\xff\xff\xff")


def test_a_json_frame_must_hold_an_object() -> None:
    with pytest.raises(wire.FrameError, match="must hold an object"):
        wire.decode_json(b"[1]")


def test_screen_strips_escapes_and_keeps_the_last_lines() -> None:
    raw = (
        b"\x1b[?2004h\x1b]0;title\x07one\r\n"
        b"\x1b[1;32mtwo\x1b[0m\r\n"
        b"progress 10%\rprogress 100%\r\n"
        b"typo\x08\x08ld\r\n\r\n"
    )
    assert render(raw, 10) == "one\ntwo\nprogress 100%\ntyld"
    assert render(raw, 2) == "progress 100%\ntyld"
    assert render(raw, 0) == ""


def test_screen_survives_a_cut_utf8_character() -> None:
    assert render("❯ hi".encode()[1:], 5).endswith(" hi")


def test_screen_drops_a_partial_first_line_when_cut() -> None:
    assert render(b"ial line\r\nwhole\r\n", 5, cut=True) == "whole"


def test_screen_handles_escapes_cut_at_the_end() -> None:
    assert render(b"done\x1b[3", 5) == "done"
    assert render(b"done\x1b]0;tit", 5) == "done"
    assert render(b"x\x1b(Bdone\x1b=", 5) == "xdone"


def test_the_ring_keeps_the_last_bytes_across_the_wrap() -> None:
    ring = Ring(10)
    ring.write(b"abcdef")
    assert ring.tail(100) == b"abcdef"
    ring.write(b"ghijklm")
    assert len(ring) == 10
    assert ring.tail(10) == b"defghijklm"
    assert ring.tail(3) == b"klm"
    ring.write(b"0123456789ABC")
    assert ring.tail(10) == b"3456789ABC"

"""The daemon's watch connection to a host (``host_io.WatchProtocol``): each frame handed on
in the callback that received it, the exit told at once (issue 27)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakes.transport import FakeTransport
from volee_desktop.daemon.agents.host_io import WATCH_EVERY_MS, WatchProtocol
from volee_desktop.hosts import wire


def watch(seen: list[Any]) -> tuple[WatchProtocol, FakeTransport]:
    protocol = WatchProtocol(
        lambda data: seen.append(("output", data)),
        lambda rows, cols: seen.append(("started", rows, cols)),
        lambda rows, cols: seen.append(("resized", rows, cols)),
        lambda: seen.append("exited"),
    )
    transport = FakeTransport(seen)
    protocol.connection_made(transport)
    return protocol, transport


async def test_frames_are_handed_on_in_order_however_the_bytes_are_cut() -> None:
    stream = b"".join(
        [
            wire.json_frame({"ok": True, "rows": 40, "cols": 120}),
            wire.frame(wire.OUTPUT, b"hello"),
            wire.json_frame({"event": "resize", "rows": 30, "cols": 100}),
            wire.frame(wire.OUTPUT, b"\x1b[2J"),
            wire.json_frame({"event": "exit", "exit": {"code": 0}}),
            wire.frame(wire.OUTPUT, b"after the exit"),
        ]
    )
    for cut in (1, 3, 7, len(stream)):
        seen: list[Any] = []
        protocol, _transport = watch(seen)
        for at in range(0, len(stream), cut):
            protocol.data_received(stream[at : at + cut])
        protocol.connection_lost(None)
        assert seen == [
            ("wrote", wire.json_frame({"op": "watch", "output": True, "every_ms": 500})),
            ("started", 40, 120),
            ("output", b"hello"),
            ("resized", 30, 100),
            ("output", b"\x1b[2J"),
            "exited",  # told before the connection is closed, and nothing after it
            "close",
        ], cut
        assert protocol.ended
        assert protocol.done.done()


async def test_bytes_that_are_not_a_frame_close_the_connection_and_end_the_watch() -> None:
    seen: list[Any] = []
    protocol, transport = watch(seen)
    protocol.data_received(b"Z\x00\x00\x00\x01x")  # no such frame kind
    assert transport.closed
    protocol.connection_lost(None)
    await asyncio.wait_for(protocol.done, 1)
    assert not protocol.ended
    assert "exited" not in seen


def test_the_watch_asks_for_output_at_most_twice_a_second() -> None:
    assert WATCH_EVERY_MS == 500  # the figure the frames above and docs/performance.md say


async def test_a_flush_returns_once_the_hosts_reply_came_after_the_held_output() -> None:
    seen: list[Any] = []
    protocol, _transport = watch(seen)
    protocol.data_received(wire.json_frame({"ok": True, "rows": 40, "cols": 120}))
    flushed = asyncio.ensure_future(protocol.flush(5.0))
    await asyncio.sleep(0)
    assert seen[-1] == ("wrote", wire.json_frame({"op": "flush"}))
    assert not flushed.done()
    protocol.data_received(wire.frame(wire.OUTPUT, b"held") + wire.json_frame({"ok": True}))
    await asyncio.wait_for(flushed, 1)
    assert seen[-1] == ("output", b"held")  # handed on before the flush returned


async def test_a_flush_ends_on_an_older_hosts_refusal_on_the_connections_end_or_its_wait() -> None:
    seen: list[Any] = []
    protocol, _transport = watch(seen)
    await asyncio.wait_for(protocol.flush(5.0), 1)  # before the watch's reply: nothing asked
    assert all(w != ("wrote", wire.json_frame({"op": "flush"})) for w in seen)
    protocol.data_received(wire.json_frame({"ok": True, "rows": 40, "cols": 120}))

    refused = asyncio.ensure_future(protocol.flush(5.0))
    await asyncio.sleep(0)
    protocol.data_received(wire.json_frame({"ok": False, "error": "unknown request 'flush'"}))
    await asyncio.wait_for(refused, 1)

    unanswered = asyncio.ensure_future(protocol.flush(0.05))
    await asyncio.wait_for(unanswered, 1)  # a host that never answers: its wait, then on

    lost = asyncio.ensure_future(protocol.flush(5.0))
    await asyncio.sleep(0)
    protocol.connection_lost(None)
    await asyncio.wait_for(lost, 1)
    assert not protocol.flushes
    await asyncio.wait_for(protocol.flush(5.0), 1)  # closed: nothing asked, at once


async def test_a_hold_asks_the_watch_again_and_its_reply_starts_no_new_screen() -> None:
    seen: list[Any] = []
    protocol, _transport = watch(seen)
    protocol.hold(2000)  # before the watch's reply: nothing asked
    assert all(w[0] != "wrote" or b"2000" not in w[1] for w in seen if isinstance(w, tuple))
    protocol.data_received(wire.json_frame({"ok": True, "rows": 40, "cols": 120}))

    protocol.hold(2000)
    assert seen[-1] == ("wrote", wire.json_frame({"op": "watch", "every_ms": 2000}))
    flushed = asyncio.ensure_future(protocol.flush(5.0))
    await asyncio.sleep(0)
    protocol.data_received(wire.json_frame({"ok": True, "rows": 40, "cols": 120}))
    await asyncio.sleep(0)
    assert not flushed.done()  # that was the hold's reply
    assert [s for s in seen if s[0] == "started"] == [("started", 40, 120)]
    protocol.data_received(wire.json_frame({"ok": True}))
    await asyncio.wait_for(flushed, 1)

    protocol.hold(None)
    assert seen[-1] == ("wrote", wire.json_frame({"op": "watch", "every_ms": WATCH_EVERY_MS}))

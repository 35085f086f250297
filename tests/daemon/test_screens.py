"""The agents' screens: PTY output rendered by pyte, fed lazily, the last one kept."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from volee_desktop.daemon.agents import screens as sc
from volee_desktop.daemon.agents.screens import Screens, Term


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what is freed is freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _emulator_refs(term: Term) -> list[weakref.ref[object]]:
    return [weakref.ref(term.screen), weakref.ref(term.stream)]


def test_a_terminal_renders_what_a_terminal_would() -> None:
    term = Term(5, 20)
    # Claude Code-style redraws: carriage returns, cursor up, erase line, colours.
    first, redraw = b"\x1b[1mhello\x1b[0m world\r\nline two\r\n", b"\x1b[1A\x1b[2Kline TWO\r\n"
    term.add(first)
    term.add(redraw)

    shot = term.render(True)

    assert shot.lines[:2] == ["hello world", "line TWO"]
    assert (shot.rows, shot.cols, shot.live) == (5, 20, True)
    assert shot.version == len(first) + len(redraw)
    assert shot.tail(2) == ["hello world", "line TWO"]  # blank lines at the end dropped
    # Nothing new: the same screen, not rendered again.
    assert term.render(True) is shot


def test_a_probe_sees_each_output_as_fed_even_one_drawn_over_before_the_next_read() -> None:
    term = Term(3, 20)
    screens: list[list[str]] = []

    def probe(lines: list[str]) -> bool:
        screens.append(lines)
        return "ASK" in lines[0]

    term.probe = probe
    term.add(b"working")
    term.add(b"\rASK: allow?")
    term.add(b"\r\x1b[2Kanswered")
    term.add(b"\r\n more")

    shot = term.render(True)

    assert shot.lines[0] == "answered"  # what a read shows: the question already gone
    assert [s[0] for s in screens] == ["working", "ASK: allow?"]  # then it is let go
    assert term.probe is None


def test_a_probe_that_never_finds_its_dialog_is_given_a_bounded_number_of_outputs(
    tmp_path: Path,
) -> None:
    screens = Screens(tmp_path)
    screens.started("ag", 3, 20)
    given: list[int] = []
    screens.probe("ag", lambda _lines: given.append(1) is not None, "rq_1")  # never True
    for n in range(sc.PROBE_OUTPUTS + 10):
        screens.output("ag", f"{n}\r\n".encode())
        if n == 5:
            screens.probe("ag", lambda _lines: True, "rq_1")  # the same request: not again
    screens.terms["ag"].render(True)

    assert len(given) == sc.PROBE_OUTPUTS  # each read of the whole screen costs (1.4 ms)
    assert screens.terms["ag"].probe is None
    screens.probe("ag", lambda _lines: given.append(2) is None, "rq_2")  # another request
    screens.output("ag", b"x")
    screens.terms["ag"].render(True)
    assert given[-1] == 2


def test_lines_scrolled_off_the_top_are_kept_and_a_resize_is_followed() -> None:
    term = Term(3, 10)
    term.add(b"".join(f"l{i}\r\n".encode() for i in range(6)))
    shot = term.render(True)
    assert shot.history == ["l0", "l1", "l2", "l3"]
    assert shot.tail(4) == ["l2", "l3", "l4", "l5"]

    term.resize(4, 30)
    term.add(b"wide " * 5)
    shot = term.render(True)
    assert (shot.rows, shot.cols) == (4, 30)
    assert "wide wide wide wide wide" in shot.lines


@pytest.mark.usefixtures("no_collector")
def test_too_much_output_waiting_rebuilds_the_screen_from_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sc, "PENDING_LIMIT", 64)
    term = Term(3, 40)
    term.add(b"first\r\n")
    term.render(True)
    replaced = _emulator_refs(term)
    term.add(b"old output that will be dropped\r\n")
    term.add(b"x" * 40)
    term.add(b"\r\nnew\r\n")
    shot = term.render(True)
    assert all("old output" not in line for line in [*shot.history, *shot.lines])
    assert "new" in shot.lines
    # The screen it replaces is freed at once, with the collector off (issue 22).
    assert [ref() for ref in replaced] == [None, None]


def test_the_last_screen_is_kept_on_disk_and_forgotten(tmp_path: Path) -> None:
    async def run() -> None:
        screens = Screens(tmp_path / "screens")
        screens.started("ag_1", 4, 40)
        screens.output("ag_1", b"Not logged in \xc2\xb7 Please run /login\r\n")
        assert screens.live("ag_1")
        await screens.ended("ag_1")
        assert not screens.live("ag_1")

        again = Screens(tmp_path / "screens")  # a daemon restart
        shot = await again.snapshot("ag_1")
        assert shot is not None
        assert shot.live is False
        assert shot.tail(5) == ["Not logged in · Please run /login"]

        again.forget("ag_1")
        assert await again.snapshot("ag_1") is None
        assert not (tmp_path / "screens" / "ag_1.json").exists()

    asyncio.run(run())


def test_a_kept_screen_of_an_older_volee_is_read_with_defaults(tmp_path: Path) -> None:
    folder = tmp_path / "screens"
    folder.mkdir()
    (folder / "ag_1.json").write_text('{"lines": ["$ make", "ok"], "cursor": [1, 2], "at": 7}')
    shot = asyncio.run(Screens(folder).snapshot("ag_1"))
    assert shot == sc.Snapshot(
        lines=["$ make", "ok"],
        rows=sc.DEFAULT_ROWS,
        cols=sc.DEFAULT_COLS,
        cursor=(1, 2),
        at=7.0,
        live=False,
        version=0,
        history=[],
    )


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '["a list"]',
        '{"lines": "one string"}',
        '{"lines": ["a"], "cursor": [1]}',
        '{"rows": "many"}',
    ],
)
def test_a_damaged_kept_screen_is_no_screen(tmp_path: Path, text: str) -> None:
    folder = tmp_path / "screens"
    folder.mkdir()
    (folder / "ag_1.json").write_text(text)
    assert asyncio.run(Screens(folder).snapshot("ag_1")) is None


@pytest.mark.usefixtures("no_collector")
def test_a_screen_let_go_is_freed_at_once_not_left_for_the_collector(tmp_path: Path) -> None:
    # Issue 22: pyte's screen and stream hold themselves in cycles; every screen an agent
    # left waited for the oldest generation's collection (1,400-2,100 objects a sample in
    # the soak).  Ended, forgotten, replaced by a new watch connection, or rebuilt: each
    # is freed when let go.
    async def run() -> list[tuple[str, list[weakref.ref[object]]]]:
        screens = Screens(tmp_path / "screens")
        seen = []
        for how in ("ended", "forgotten", "replaced"):
            screens.started("ag_x", 5, 20)
            screens.output("ag_x", b"\x1b[1mhello\x1b[0m\r\nworld\r\n" * 4)
            term = screens.terms["ag_x"]
            assert "world" in (await screens.snapshot("ag_x")).lines  # type: ignore[union-attr]
            seen.append((how, _emulator_refs(term)))
            del term
            if how == "ended":
                assert await screens.ended("ag_x") is not None
            elif how == "forgotten":
                screens.forget("ag_x")
            else:
                screens.started("ag_x", 5, 20)
        return seen

    for how, refs in asyncio.run(run()):
        assert [ref() for ref in refs] == [None, None], how


def test_a_screen_closed_while_it_is_read_is_released_when_the_read_ends() -> None:
    term = Term(3, 20)
    term.add(b"before\r\n")
    term.render(True)
    reading, go_on = threading.Event(), threading.Event()
    feed = term.stream.feed

    def slow_feed(data: bytes) -> None:
        reading.set()
        assert go_on.wait(10)
        feed(data)

    term.stream.feed = slow_feed  # type: ignore[method-assign]
    term.add(b"during\r\n")
    shots: list[sc.Snapshot] = []
    reader = threading.Thread(target=lambda: shots.append(term.render(True)))
    reader.start()
    assert reading.wait(10)

    term.close()  # from the loop, while the reader's thread holds the screen
    assert not term.released  # never pulled from under a running read

    go_on.set()
    reader.join(10)
    assert shots[0].lines[:2] == ["before", "during"]  # the read finished on a whole screen
    assert term.released  # and let the screen go as it ended
    # A read after: the screen as last read, nothing fed to the released emulator.
    term.add(b"after\r\n")
    assert term.render(True) is shots[0]
    term.feed()
    assert term.render(False).lines[:2] == ["before", "during"]


# --- a read renders only the rows changed since the last read (issue 27) ------------------

_PIECES = [
    b"hello",
    b"\xe2\x97\x8f",  # Claude Code's blinking bullet
    b"\x1b[1;5H \x1b[1;5H\xe2\x97\x8f",
    b"\r\n",
    b"\n",
    b"\r",
    b"\x1b[2K",
    b"\x1b[1A",
    b"\x1b[3B",
    b"\x1b[J",
    b"\x1b[1J",
    b"\x1b[2J",
    b"\x1b[H",
    b"\x1b[4;10H",
    b"\x1b[2L",
    b"\x1b[1M",
    b"\x1b[3@",
    b"\x1b[2P",
    b"\x1b[4X",
    b"\x1b[2;4r",
    b"\x1b[r",
    b"\x1bM",  # reverse index
    b"\x1bD",  # index
    b"\x1b#8",  # fill with E
    b"\x1b[?5h",
    b"\x1b[?5l",
    b"\x1bc",  # reset
    b"\xcc\x81",  # a combining mark (at a row's start, pyte joins it to the row above)
    b"\x1b[6;1H\xcc\x81",
    b"\xe7\x95\x8c",  # a wide character
    b"\x1b[31mred\x1b[0m",
    b"\t|",
    b"0123456789" * 3,
]


@pytest.mark.parametrize("watched", [False, True], ids=["no row watcher", "a row watcher"])
def test_a_read_renders_only_the_changed_rows_and_reads_what_a_whole_render_reads(
    watched: bool,
) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from volee_desktop.daemon.agents.emulator import screen_lines

    steps = st.lists(
        st.tuples(
            st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6),
            st.booleans(),  # read after this output
            st.sampled_from([None, None, None, (6, 20), (8, 24)]),  # a resize before it
        ),
        min_size=1,
        max_size=12,
    )

    @settings(max_examples=300, deadline=None)
    @given(steps)
    def check(plan: list[tuple[list[bytes], bool, tuple[int, int] | None]]) -> None:
        told: list[list[str]] = []
        term = Term(6, 20, told.append if watched else None)
        for pieces, read, resize in plan:
            if resize is not None:
                term.resize(*resize)
            term.add(b"".join(pieces))
            if read:
                shot = term.render(True)
                assert shot.lines == screen_lines(term.screen)
        shot = term.render(True)
        assert shot.lines == screen_lines(term.screen)

    check()


def test_a_blink_renders_one_row_and_its_neighbour_not_the_whole_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from volee_desktop.daemon.agents import emulator

    term = Term(40, 120)
    term.add(b"\r\n".join(b"row %d" % y for y in range(30)))
    term.render(True)
    rendered: list[int] = []
    real = emulator.line_text

    def counting(line: dict[int, object], columns: int) -> str:
        rendered.append(1)
        return real(line, columns)  # type: ignore[arg-type]

    monkeypatch.setattr(emulator, "line_text", counting)
    term.add(b"\x1b[10;3H\xe2\x97\x8f")  # the bullet drawn at row 10
    shot = term.render(True)

    assert shot.lines[9] == "ro\u25cf 9"
    assert shot.lines[8] == "row 8"
    assert len(rendered) == 2  # row 10 and the row above it (a combining mark's), not 40


def test_rows_a_resize_changed_are_read_again_after_a_feed_for_a_row_watcher() -> None:
    told: list[list[str]] = []
    term = Term(6, 20, told.append)
    term.add(b"0123456789ABCDEF\r\nsecond")
    assert term.render(True).lines[0] == "0123456789ABCDEF"
    term.resize(6, 10)  # narrower: pyte cuts every row
    term.feed()  # fed without a read (agents/limits.py's feed of a turn's output)
    told.clear()
    term.add(b"\x1b[3;1Hthird")

    shot = term.render(True)

    assert shot.lines[:3] == ["0123456789", "second", "third"]
    assert told == [["third"]]  # the watcher is told the rows this output changed


def test_a_small_output_is_fed_at_once_and_says_the_rows_it_changed() -> None:
    told: list[list[str]] = []
    term = Term(6, 20, told.append)
    term.add(b"one\r\ntwo\r\nthree")
    assert term.render(True).lines[:3] == ["one", "two", "three"]
    assert term.feed_now(64) == set()  # nothing queued
    term.add(b"\x1b[2;1HTWO")

    assert term.feed_now(64) == {1}
    assert told[-1] == ["TWO"]  # the row watcher is told, as by any feed
    assert term.render(True).lines[:3] == ["one", "TWO", "three"]  # not the cached screen
    term.add(b"\x1b[3;1H" + b"x" * 70)  # more than the limit: left for a read
    assert term.feed_now(64) is None
    assert term.render(True).lines[2] == "x" * 20  # the rest wraps to the next rows
    term.resize(6, 30)
    term.add(b"\x1b[1;1HONE")
    assert term.feed_now(64) is None  # a resize changes every row: it cannot say
    assert term.render(True).lines[0] == "ONE"
    term.add(b"\x1b[1;1Hone")
    with term.feed_lock:  # a read running in a worker thread
        assert term.feed_now(64) is None
    assert term.feed_now(64) == {0}


async def test_a_screen_whose_programs_exit_was_told_reads_as_the_last_one_at_once(
    tmp_path: Path,
) -> None:
    # The exit is told in the watch connection's callback; the last screen is kept a moment
    # later (ended): a read between the two is not of a live screen (a restarted daemon's
    # `volee output` of a stopped agent said live).
    screens = Screens(tmp_path)
    screens.started("a", 5, 20)
    screens.output("a", b"bye")
    assert screens.live("a")
    screens.exited("a")
    assert not screens.live("a")
    shot = await screens.snapshot("a")
    assert shot is not None
    assert (shot.lines[0], shot.live) == ("bye", False)
    kept = await screens.ended("a")
    assert kept is not None
    assert not kept.live
    screens.exited("b")  # no such screen: nothing


def test_a_hold_is_told_once_per_change_and_only_to_a_watched_agent(tmp_path: Path) -> None:
    """``Screens.hold`` tells the agent's watch only what changes (None: the watch's own), an
    agent without a watch nothing, and a new watch starts from its own again."""
    screens = Screens(tmp_path)
    told: list[int | None] = []
    screens.hold("a", 2000)  # no watch yet: nobody to tell, nothing kept
    assert screens.holding == {}

    screens.holders["a"] = told.append
    screens.hold("a", 2000)
    screens.hold("a", 2000)
    screens.hold("a", None)
    screens.hold("a", None)
    screens.hold("a", 2000)
    assert told == [2000, None, 2000]
    assert screens.holding == {"a": 2000}

    screens.started("a", 24, 80)
    assert screens.holding == {}
    screens.hold("a", 2000)
    assert told == [2000, None, 2000, 2000]

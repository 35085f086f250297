"""The agents' screens: PTY output rendered by pyte, fed lazily, the last one kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from volee_desktop.daemon.agents import screens as sc
from volee_desktop.daemon.agents.screens import Screens, Term


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


def test_too_much_output_waiting_rebuilds_the_screen_from_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sc, "PENDING_LIMIT", 64)
    term = Term(3, 40)
    term.add(b"old output that will be dropped\r\n")
    term.add(b"x" * 40)
    term.add(b"\r\nnew\r\n")
    shot = term.render(True)
    assert all("old output" not in line for line in [*shot.history, *shot.lines])
    assert "new" in shot.lines


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

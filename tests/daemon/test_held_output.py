"""The daemon's own reads where a key is typed: its host holds output back a moment
(``host_io.WATCH_EVERY_MS``; 10 s in these tests, longer than any of their waits), so every
read that decides what a key did has the held output sent first (``Screens.snapshot(fresh=
True)``): the dialog an answer looks for, and the screen a key is checked against."""

from __future__ import annotations

import asyncio
import time

import pytest

from volee_desktop.core.states import AgentState
from volee_desktop.daemon.agents import answers, host_io
from volee_desktop.hosts.launcher import HostClient

from .test_agents import Rig, asking, rig, root, spawn_with_a_held_line

__all__ = ["rig", "root"]


async def test_output_held_before_a_key_is_not_taken_for_its_effect(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that ignores Esc and echoes nothing: the line it printed before the key,
    held by its host, comes after the key; the key is still said not taken."""
    view = await spawn_with_a_held_line(rig, monkeypatch, "deaf", before="stty -echo; ")
    assert "second" not in rig.d.agents.screens.last_text(view["id"])

    result = await rig.call("agents.keys", agent=view["id"], key="esc")

    assert result["taken"] is False
    assert "second" in rig.d.agents.screens.last_text(view["id"])


async def test_an_answer_finds_the_dialog_its_host_still_holds(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dialog is drawn within the hold after the agent's first output: the answer's
    own read has it sent, finds it, types the keys and sees them taken."""
    monkeypatch.setattr(host_io, "WATCH_EVERY_MS", 10_000)
    view = await rig.spawn("ASK: echo yes > asked.txt")
    await rig.wait_state(view["id"], AgentState.NEEDS_INPUT, "permission for Bash")
    await asyncio.sleep(0.3)  # drawn, and held
    assert "Do you want to proceed?" not in rig.d.agents.screens.last_text(view["id"])

    result = await rig.call("agents.allow", agent=view["id"])

    assert result["answer"] == "allow"
    await rig.wait_state(view["id"], AgentState.DONE)
    assert (rig.project / "asked.txt").read_text() == "yes\n"


async def test_an_asking_agent_s_output_is_held_longer_once_its_dialog_was_seen(
    rig: Rig,
) -> None:
    """Its host holds the output back DIALOG_EVERY_MS while the dialog is seen on screen,
    and WATCH_EVERY_MS again once the request was answered (issue 27: the bullet's blink)."""
    view = await asking(rig)
    screens = rig.d.agents.screens
    await rig.wait(
        view["id"], lambda _a: screens.holding.get(view["id"]) == answers.DIALOG_EVERY_MS, "held"
    )

    await rig.call("agents.allow", agent=view["id"])

    await rig.wait_state(view["id"], AgentState.DONE)
    assert view["id"] not in screens.holding
    assert (rig.project / "asked.txt").read_text() == "yes\n"


async def test_a_new_watch_connection_is_told_the_longer_hold_again(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new watch connection holds as it asked (WATCH_EVERY_MS): what the old one was told
    is forgotten, so the dialog seen again in its replay has the new one told too."""
    told: list[tuple[int, int | None]] = []
    real_hold = host_io.WatchProtocol.hold

    def hold(self: host_io.WatchProtocol, every_ms: int | None) -> None:
        told.append((id(self), every_ms))
        real_hold(self, every_ms)

    monkeypatch.setattr(host_io.WatchProtocol, "hold", hold)
    view = await asking(rig)
    screens = rig.d.agents.screens
    await rig.wait(view["id"], lambda _a: bool(told), "the longer hold told")
    first = screens.holders[view["id"]]

    rig.d.agents.watch(view["id"], rig.record(view["id"]))

    await rig.wait(
        view["id"],
        lambda _a: (
            screens.holders.get(view["id"], first) != first
            and screens.holding.get(view["id"]) == answers.DIALOG_EVERY_MS
        ),
        "the new watch held longer",
    )
    assert len({watch for watch, _ in told}) == 2
    assert [every for _, every in told] == [answers.DIALOG_EVERY_MS] * 2


async def test_a_dialog_answered_in_its_terminal_is_seen_gone_before_the_hold_ends(
    rig: Rig,
) -> None:
    """Held 10 s once its dialog was seen, an agent whose person presses Esc in its own
    terminal is seen answered at once: the host sends what the program draws after keys
    reach it without a hold (``hosts.requests.STIRRED``), not 10 s after its last frame."""
    view = await asking(rig)
    screens = rig.d.agents.screens
    await rig.wait(
        view["id"], lambda _a: screens.holding.get(view["id"]) == answers.DIALOG_EVERY_MS, "held"
    )
    assert answers.DIALOG_EVERY_MS >= 10_000

    began = time.monotonic()
    with HostClient(rig.d.agents.socket_of(view["id"])).open_stream() as stream:
        stream.write(b"\x1b")
        agent = await rig.wait_state(view["id"], AgentState.IDLE, "answered in its terminal")

    # The look settles 1 s (answers.SETTLE); the hold would have kept the redraw ~10 s.
    assert time.monotonic() - began < 6
    assert agent.request is None
    assert view["id"] not in screens.holding

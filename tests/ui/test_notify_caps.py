"""What volee sends follows the server's GetCapabilities, on a real session bus (issue 28):
a server without actions is told where to answer, one without body-markup gets the plain
characters, a newer card about the same agent replaces the one before. The server is a real
process (``impostor_notifications.py --caps``) that logs every Notify; dunst, mako and
xfce4-notifyd are in test_realx.py, test_wayland.py and test_xfce.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.app.notifybus import NO_BUTTONS, BusSink

from . import procs
from .test_desktop_identity import IMPOSTOR, MARKUP, Vouching, _notice

pytestmark = [pytest.mark.realx]


@pytest.fixture
def bus() -> Iterator[str]:
    if shutil.which("dbus-daemon") is None:
        pytest.skip("needs dbus-daemon")
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert daemon.stdout is not None
    address = daemon.stdout.readline().strip()
    daemon.stdout.close()
    try:
        yield address
    finally:
        daemon.kill()
        daemon.wait()


def _server(bus: str, log: Path, caps: str) -> procs.Proc:
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=bus)
    proc = procs.Proc([sys.executable, str(IMPOSTOR), "--log", str(log), "--caps", caps], env)
    proc.wait_line(r"^holding$")
    return proc


def _sent(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize(
    ("caps", "markup"), [("body", False), ("body,body-markup", True)], ids=["plain", "markup"]
)
async def test_a_server_without_actions_is_told_where_to_answer(
    bus: str, tmp_path: Path, caps: str, markup: bool
) -> None:
    log = tmp_path / "notify.jsonl"
    server = _server(bus, log, caps)
    sink = BusSink(Vouching(), lambda _why: None, address=bus)
    try:
        assert await sink.show(_notice(MARKUP), lambda *_: None)
    finally:
        await sink.close()
        server.kill()
    [sent] = _sent(log)
    assert sent["actions"] == ["default", ""]  # a click is still Open
    assert sent["body"].endswith(NO_BUTTONS)
    if markup:
        assert "<span" not in sent["body"]
        assert "&lt;span" in sent["body"]
    else:
        assert '<span alpha="1" size="1">' in sent["body"]  # as typed: it shows no markup


async def test_a_newer_card_about_the_same_agent_replaces_the_one_before(
    bus: str, tmp_path: Path
) -> None:
    log = tmp_path / "notify.jsonl"
    server = _server(bus, log, "actions,body")
    sink = BusSink(Vouching(), lambda _why: None, address=bus)
    first = _notice("pytest -q")
    newer = replace(first, body=first.body.replace("pytest -q", "pytest -q -x"))
    try:
        assert await sink.show(first, lambda *_: None)
        assert await sink.show(newer, lambda *_: None)
        await sink.withdraw(first)  # the app takes the one before down: nothing to close now
        assert sink._ids == {newer: (102, sink._ids[newer][1])}
    finally:
        await sink.close()
        server.kill()
    one, two = _sent(log)
    assert one["replaces"] == 0
    assert two["replaces"] == 101  # the first card's id: updated in place, not stacked
    assert {"allow", "deny"} <= set(one["actions"])
    assert NO_BUTTONS not in one["body"]

"""Finding 22.2 (a), the app's half: whom a D-Bus peer is comes from the daemon, and a peer
the daemon cannot identify is never the person (fail closed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.app_link import FakeDaemonLink
from volee_desktop.app.controller import AppController, AppOptions


def _controller(tmp_path: Path, link: FakeDaemonLink) -> AppController:
    controller = AppController(AppOptions(config_path=tmp_path / "config.toml", sinks=[]))
    controller.link = link
    return controller


async def test_a_peer_is_the_person_only_when_the_daemon_says_so(qapp: Any, tmp_path: Path) -> None:
    link = FakeDaemonLink()
    link.handlers["desktop.peer"] = lambda p: {
        "kind": "agent" if p["pid"] == 4242 else "person",
        "agent": "ag_x" if p["pid"] == 4242 else None,
        "name": "intruder" if p["pid"] == 4242 else None,
        "pid": p["pid"],
        "how": "descends from the program (pid 4200) of agent intruder",
    }
    controller = _controller(tmp_path, link)
    try:
        agent = await controller.vouch(4242, "press Allow")
        person = await controller.vouch(77, "press Allow")
        assert not agent.person
        assert "agent intruder (pid 4242" in agent.who
        assert person.person
        asked = [c.params for c in link.calls if c.method == "desktop.peer"]
        assert asked == [
            {"pid": 4242, "attempt": "press Allow"},
            {"pid": 77, "attempt": "press Allow"},
        ]
        link.errors["desktop.peer"] = "unavailable"
        unknown = await controller.vouch(77, "press Allow")
        assert not unknown.person  # the daemon cannot say: not the person
        assert "could not identify" in unknown.who
    finally:
        controller.close()


async def test_a_refusal_is_shown_in_the_tray_and_cleared_when_it_no_longer_holds(
    qapp: Any, tmp_path: Path
) -> None:
    controller = _controller(tmp_path, FakeDaemonLink())
    try:
        controller.tray.apply_now()
        controller.desktop_refused("volee stopped sending notifications: held by agent x")
        assert controller.tray.icon.toolTip().startswith("volee stopped sending notifications")
        controller.desktop_refused(None)
        assert "stopped sending" not in controller.tray.icon.toolTip()
    finally:
        controller.close()

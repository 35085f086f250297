"""The list window is built when it is first needed, not before the icon (issue 27, item 3).

With a tray the first frame is the icon; the list window (its rows, delegate and toolbar) is
built once the daemon answers (``AppSession`` asks for it then) or when something asks for
it first, and shows what it would have shown had it existed all along.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.loginitem import FakeLoginItem
from volee_desktop.app.controller import AppController, AppOptions
from volee_desktop.app.list_prefs import ListPrefs


def _controller(tmp_path: Path) -> AppController:
    (tmp_path / "config.toml").write_text("[agents]\ncontext_limit = 0.5\n")
    return AppController(
        AppOptions(
            config_path=tmp_path / "config.toml",
            login_item=lambda: FakeLoginItem(),
            sinks=[],
            use_tray=True,
            list_prefs=tmp_path / "list.json",
        )
    )


def test_a_status_said_before_the_list_exists_is_shown_by_it_once_built(
    qtbot: Any, tmp_path: Path
) -> None:
    ctl = _controller(tmp_path)
    try:
        ctl.show()
        ctl.say("agent api-fixer resumed")
        assert not ctl.panel_built  # the icon alone: nothing asked for the list yet
        panel = ctl.panel
        qtbot.addWidget(panel)
        assert ctl.panel_built
        assert panel.status.text() == "agent api-fixer resumed"
        assert panel.delegate.context_limit == 0.5  # config.toml's, read at start
        assert panel.summary().startswith("volee: connecting to the volee daemon")
    finally:
        ctl.close()


def test_the_list_is_built_at_the_loops_next_turn_when_asked_soon(
    qtbot: Any, tmp_path: Path
) -> None:
    ctl = _controller(tmp_path)
    try:
        ctl.show()
        ctl.build_list_soon()
        assert not ctl.panel_built
        qtbot.waitUntil(lambda: ctl.panel_built, timeout=5000)
        qtbot.addWidget(ctl.panel)
        assert not ctl.panel.isVisible()  # built, not shown: the icon opens it
    finally:
        ctl.close()


def test_a_list_kept_open_is_built_and_shown_at_start(qtbot: Any, tmp_path: Path) -> None:
    prefs = ListPrefs()
    prefs.pinned = True
    prefs.save(tmp_path / "list.json")
    ctl = _controller(tmp_path)
    try:
        ctl.show()
        assert ctl.panel_built
        qtbot.addWidget(ctl.panel)
        assert ctl.panel.isVisible()
    finally:
        ctl.close()

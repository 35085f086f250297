"""The tray's edge cases on a real Wayland desktop (issue 28): a bar restarted while volee
runs, and a second bar taking the StatusNotifierWatcher over from the first (the rig is
``wayland_desktop.py``; screenshots in ``test-artifacts/desktops/``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from . import wayland_desktop as wd
from .desktop import poll
from .test_wayland import ARTIFACTS, LOADED, TRAY, colours

pytestmark = [pytest.mark.realx, pytest.mark.slow]


@pytest.fixture
def sway() -> Iterator[wd.WaylandDesktop]:
    absent = wd.missing()
    if absent:
        pytest.skip(f"Wayland tests need {', '.join(absent)} (apt: sway waybar mako-notifier grim)")
    d = wd.WaylandDesktop(notifications=False)
    try:
        yield d
    finally:
        d.close()


def test_waybar_restarted_while_volee_runs_shows_the_icon_again(
    sway: wd.WaylandDesktop, volee_home: Path
) -> None:
    app = wd.app_proc(sway, volee_home)
    try:
        app.wait_line(r"connected to the volee daemon", LOADED)
        sway.item()
        sway.stop_bar()
        sway.start_bar()
        # Qt hears the name registered after its gap and registers its item again.
        sway.item()

        def drawn() -> bool:
            shot = sway.screenshot(ARTIFACTS / "waybar-restarted.png")
            return colours(shot, *TRAY) > 8

        poll("the icon drawn in the new bar", drawn, LOADED)
    finally:
        app.kill()


def test_a_second_waybar_taking_the_watcher_over_gets_the_icon_too(
    sway: wd.WaylandDesktop, volee_home: Path
) -> None:
    app = wd.app_proc(sway, volee_home)
    try:
        app.wait_line(r"connected to the volee daemon", LOADED)
        sway.item()
        # The second bar takes the name with no gap (replacement): Qt alone hears nothing
        # and the new watcher never had the item (before the fix: none registered).
        sway.start_bar()
        bars = (0, wd.BAR)  # two bars stacked at the top, each with its tray at its right end

        def both() -> bool:
            shot = sway.screenshot(ARTIFACTS / "waybar-two-bars.png")
            image = QImage(str(shot))
            x, _, w, h = TRAY
            return all(
                len({image.pixel(x + i, y + j) for i in range(w) for j in range(h)}) > 8
                for y in bars
            )

        try:
            poll("the icon drawn in both bars", both, LOADED)
        except AssertionError:
            raise AssertionError(
                f"the icon is not drawn in both bars; volee's log: {app.lines[-15:]}; "
                f"the items {sway.items()}; the item answers {sway.item_props()}; "
                f"waybar's log: {sway.bar_log()}"
            ) from None
        assert sway.items(), "the new watcher has no item"
        app.wait_line(r"a tray host registered: the item waits", LOADED)  # heard on the bus
        app.wait_line(r"the tray item registered again \(1\) with the new watcher", LOADED)
        # The menu works through the new watcher's item.
        labels = [str(e.get("label", "")) for e in wd.entries(sway.menu_layout())]
        assert "Open agent list" in labels, labels
        sway.activate(wd.WIDTH - 20, 14)
        app.wait_line(r"agent list shown", LOADED)
    finally:
        app.kill()

"""The tray icon in a real dark panel at 2× (issue 28, item 4): xfce4-panel (GTK, GDK_SCALE=2)
under Xvfb with volee at QT_SCALE_FACTOR=2, once with the symbolic look for a dark panel and
once with the coloured icon, two agents asking (the badge) and one waiting on a usage limit
(the ⏸ mark).  The panel's right end of both runs is stacked into one image.

    .venv/bin/python tests/ui/screenshots_panels.py [out.png]

Needs the xfce rig's tools (``xfce_desktop.missing()``); says which are absent and exits 2.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QRect
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from tests.ui import xfce_desktop as xd
from tests.ui.desktop import poll
from tests.ui.test_realx import Driver
from tests.ui.test_wayland import LOADED
from volee_desktop.core import events as ev
from volee_desktop.core.model import LimitKind
from volee_desktop.core.states import AgentState

SCALE = 2
WIDE = 560  # the panel's right end kept, in physical pixels


def one_run(desktop: xd.XfceDesktop, look: str, shot: Path) -> QImage:
    home = Path(tempfile.mkdtemp(prefix="vh", dir="/tmp"))
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(f'[notifications]\ntray_icon = "{look}"\n')
    app = xd.app_proc(desktop, home, QT_SCALE_FACTOR=str(SCALE))
    try:
        app.wait_line(r"connected to the volee daemon", LOADED)
        drive = Driver(home)
        for name, command in (("api-fixer", "pytest -q"), ("docs-writer", "make html")):
            agent = drive.world.agent(name, AgentState.WORKING)
            drive.world.ask(agent, "Bash", {"command": command})
        limited = drive.world.agent("night-run", AgentState.WORKING)
        drive.world.state(limited, AgentState.IDLE, "limited: 5-hour limit")
        drive.world.link.push(
            ev.LimitHit(
                at=drive.world.tick(),
                agent=limited,
                kind=LimitKind.FIVE_HOUR,
                resets_at=drive.world.t + 3600,
                ended=True,
            )
        )
        drive.send()
        found = poll(
            "the icon in xfce4-panel", lambda: desktop.new_in_bar(desktop.screenshot(shot)), LOADED
        )
        assert isinstance(found, tuple)
        time.sleep(1.0)  # the badge's icon replaces the first one
        image = QImage(str(desktop.screenshot(shot)))
        x = found[0]
        left = max(0, min(x - WIDE // 2, image.width() - WIDE))
        return image.copy(QRect(left, 0, WIDE, xd.PANEL * SCALE + 8))
    finally:
        app.kill()


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "test-artifacts/desktops/dark-panel-2x.png")
    absent = xd.missing()
    if absent:
        print(f"needs {', '.join(absent)}", file=sys.stderr)
        return 2
    app = QApplication.instance() or QApplication([])
    assert app is not None
    desktop = xd.XfceDesktop(panel=False)
    try:
        desktop.env["GDK_SCALE"] = str(SCALE)  # the panel at 2× too
        desktop.start_panel()
        crops = [
            one_run(desktop, look, out.with_name(f"dark-panel-2x-{look}.png"))
            for look in ("dark-panel", "colour")
        ]
    finally:
        desktop.close()
    sheet = QImage(WIDE, sum(c.height() for c in crops), QImage.Format.Format_RGB32)
    painter = QPainter(sheet)
    y = 0
    for crop in crops:
        painter.drawImage(0, y, crop)
        y += crop.height()
    painter.end()
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(str(out))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

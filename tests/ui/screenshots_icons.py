"""A contact sheet of the tray icon (issue 28, "icons that fit the panel"): every mark with and
without a badge, at 16 and 22 px, 22 px at 1.5x and 2x (the physical pixels a HiDPI screen
shows) and 32 px, on a dark panel (#2b2b2b) and a light one (#f0f0f0).

    .venv/bin/python tests/ui/screenshots_icons.py [out.png]

The upper half is the coloured icon, the lower half the symbolic one that fits each panel
(light on the dark panel, dark on the light one: ``Look``).  Seen on 2026-12-02 before the
symbolic variant: the navy square nearly vanished on a dark panel and a two-digit badge at
16 px was hard to read (docs/tray.md, "Icons", says what is seen now).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication

from volee_desktop.app.icons import IconCache, Look, Svgs
from volee_desktop.app.summary import Mark

SIZES = ((16, 1.0), (22, 1.0), (22, 1.5), (22, 2.0), (32, 1.0))
CASES = (
    (0, Mark.PLAIN),
    (0, Mark.QUIET),
    (0, Mark.WORKING),
    (0, Mark.LIMITED),
    (1, Mark.QUIET),
    (12, Mark.WARNING),
    (130, Mark.WORKING),
)
PANELS = ("#2b2b2b", "#f0f0f0")
#: Per panel: the coloured look, then the symbolic one that fits it.
LOOKS = ((Look.COLOUR, Look.DARK_PANEL), (Look.COLOUR, Look.LIGHT_PANEL))
CELL = 56


def sheet() -> QImage:
    svgs = Svgs()
    rows = len(CASES) * 2
    image = QImage(CELL * len(SIZES) * len(PANELS), CELL * rows, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    for half, panel in enumerate(PANELS):
        for part, look in enumerate(LOOKS[half]):
            cache = IconCache(svgs, look)
            for row, (needs, mark) in enumerate(CASES):
                for col, (size, scale) in enumerate(SIZES):
                    x, y = (half * len(SIZES) + col) * CELL, (part * len(CASES) + row) * CELL
                    painter.fillRect(QRect(x, y, CELL, CELL), QColor(panel))
                    icon = cache.icon(needs, mark)
                    drawn = icon.pixmap(QSize(size, size), scale).toImage()
                    drawn.setDevicePixelRatio(1.0)  # its physical pixels, as the screen shows them
                    painter.drawImage(
                        x + (CELL - drawn.width()) // 2, y + (CELL - drawn.height()) // 2, drawn
                    )
    painter.end()
    # Doubled without smoothing, so each pixel can be seen.
    return image.scaled(image.size() * 2, Qt.AspectRatioMode.KeepAspectRatio)


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "test-artifacts/desktops/icons.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    assert app is not None
    sheet().save(str(out))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

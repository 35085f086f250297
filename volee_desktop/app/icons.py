"""The tray icon: SVGs from ``resources/`` rendered at the size asked for, plus a painted badge.

``TrayIconEngine`` is a QIconEngine, so Qt asks it for the exact pixel size
and device pixel ratio it needs and the icon stays sharp at any scale; the
needs-input count is drawn with QPainter on top of the rendered SVG.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QIconEngine, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

from .. import datafiles
from .summary import Mark

BADGE_COLOUR = QColor("#e03131")


def resources_dir() -> Path:
    """The SVGs folder: inside the package (a wheel) or the checkout's ``resources/``."""
    found = datafiles.find("resources", "volee.svg")
    # A broken install still names the checkout's folder, so invalid icons say where they looked.
    return found.parent if found else datafiles.candidates("resources")[1]


class Svgs:
    """The icon's SVG renderers, loaded once."""

    def __init__(self, folder: Path | None = None) -> None:
        base = folder or resources_dir()
        self.folder = base
        self.base = QSvgRenderer(str(base / "volee.svg"))
        self.plain = QSvgRenderer(str(base / "volee-plain.svg"))
        self.working = QSvgRenderer(str(base / "mark-working.svg"))
        self.warning = QSvgRenderer(str(base / "mark-warning.svg"))

    @property
    def app_icon_path(self) -> Path:
        return self.folder / "volee.svg"

    def valid(self) -> bool:
        return all(r.isValid() for r in (self.base, self.plain, self.working, self.warning))


def paint_icon(painter: QPainter, rect: QRect, svgs: Svgs, needs: int, mark: Mark) -> None:
    """Draw the whole icon into ``rect`` (any size)."""
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    side = min(rect.width(), rect.height())
    box = QRectF(
        rect.x() + (rect.width() - side) / 2, rect.y() + (rect.height() - side) / 2, side, side
    )
    (svgs.plain if mark is Mark.PLAIN else svgs.base).render(painter, box)
    if mark in (Mark.WORKING, Mark.WARNING):
        m = side * 0.52
        corner = QRectF(box.right() - m, box.bottom() - m, m, m)
        (svgs.warning if mark is Mark.WARNING else svgs.working).render(painter, corner)
    if needs > 0:
        _paint_badge(painter, box, needs)
    painter.restore()


def _paint_badge(painter: QPainter, box: QRectF, count: int) -> None:
    text = str(count) if count < 100 else "99+"
    d = box.width() * 0.6
    width = d if len(text) == 1 else d * (1.0 + 0.32 * (len(text) - 1))
    badge = QRectF(box.right() - width, box.top(), width, d)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor("#ffffff"))
    painter.drawRoundedRect(badge, d / 2, d / 2)
    inner = badge.adjusted(d * 0.07, d * 0.07, -d * 0.07, -d * 0.07)
    painter.setBrush(BADGE_COLOUR)
    painter.drawRoundedRect(inner, inner.height() / 2, inner.height() / 2)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(max(6, round(inner.height() * (0.72 if len(text) == 1 else 0.62))))
    painter.setFont(font)
    painter.setPen(QColor("#ffffff"))
    painter.drawText(inner, Qt.AlignmentFlag.AlignCenter, text)


class TrayIconEngine(QIconEngine):
    """Renders the tray icon for one (count, mark) at whatever size Qt asks."""

    def __init__(self, svgs: Svgs, needs: int, mark: Mark) -> None:
        super().__init__()
        self.svgs = svgs
        self.needs = needs
        self.mark = mark

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        paint_icon(painter, rect, self.svgs, self.needs, self.mark)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def scaledPixmap(
        self, size: QSize, mode: QIcon.Mode, state: QIcon.State, scale: float
    ) -> QPixmap:
        pixmap = QPixmap(QSize(round(size.width() * scale), round(size.height() * scale)))
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        paint_icon(painter, QRect(QPoint(0, 0), pixmap.size()), self.svgs, self.needs, self.mark)
        painter.end()
        pixmap.setDevicePixelRatio(scale)
        return pixmap

    def clone(self) -> QIconEngine:
        return TrayIconEngine(self.svgs, self.needs, self.mark)

    def key(self) -> str:
        return "volee-tray"


class IconCache:
    """One QIcon per (count, mark): the tray changes icon only when what it shows changes."""

    def __init__(self, svgs: Svgs) -> None:
        self.svgs = svgs
        self._icons: dict[tuple[int, str], QIcon] = {}
        self._engines: list[TrayIconEngine] = []

    def icon(self, needs: int, mark: Mark) -> QIcon:
        key = (min(needs, 100), mark.value)
        icon = self._icons.get(key)
        if icon is None:
            engine = TrayIconEngine(self.svgs, key[0], mark)
            self._engines.append(engine)  # QIcon does not keep the Python wrapper alive
            icon = QIcon(engine)
            self._icons[key] = icon
        return icon

    def app_icon(self) -> QIcon:
        return QIcon(str(self.svgs.app_icon_path))

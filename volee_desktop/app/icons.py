"""The tray icon: SVGs from ``resources/`` rendered at the size asked for, plus a painted badge.

``TrayIconEngine`` is a QIconEngine, so Qt asks it for the exact pixel size
and device pixel ratio it needs and the icon stays sharp at any scale; the
needs-input count is drawn with QPainter on top of the rendered SVG.

Two looks (``Look``): the coloured icon, and a symbolic one (``volee-symbolic.svg``, one
colour: light on a dark panel, dark on a light one), chosen by ``look_for`` from the setting
``notifications.tray_icon`` or, on "auto", the platform's colour scheme (docs/tray.md, "Icons").
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QIcon,
    QIconEngine,
    QImage,
    QPainter,
    QPixmap,
)
from PySide6.QtSvg import QSvgRenderer

from .. import datafiles
from .summary import Mark

BADGE_COLOUR = QColor("#e03131")
#: The symbolic glyph's colour on a dark panel and on a light one.
ON_DARK = QColor("#f1f3f5")
ON_LIGHT = QColor("#212529")
#: Below this many physical pixels the badge is drawn for legibility first (a bigger share of
#: the icon, a font never under ``SMALL_FONT`` px, at most two characters).
SMALL_SIDE = 24
SMALL_FONT = 9


class Look(StrEnum):
    """How the tray icon is drawn: ``notifications.tray_icon``'s values but "auto"."""

    COLOUR = "colour"  # the navy square with its white V and a light rim
    DARK_PANEL = "dark-panel"  # symbolic, light on a dark panel
    LIGHT_PANEL = "light-panel"  # symbolic, dark on a light panel


def look_for(setting: str, scheme: Qt.ColorScheme | None = None) -> Look:
    """The look for ``notifications.tray_icon`` (auto, colour, dark-panel, light-panel): on
    "auto", symbolic when the platform says its colour scheme (``scheme``, or the running
    application's), the coloured icon when it does not know."""
    if setting != "auto":
        return Look(setting)
    if scheme is None:
        app = QGuiApplication.instance()
        scheme = (
            app.styleHints().colorScheme()
            if isinstance(app, QGuiApplication)
            else Qt.ColorScheme.Unknown
        )
    if scheme == Qt.ColorScheme.Dark:
        return Look.DARK_PANEL
    if scheme == Qt.ColorScheme.Light:
        return Look.LIGHT_PANEL
    return Look.COLOUR


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
        self.symbolic = QSvgRenderer(str(base / "volee-symbolic.svg"))
        self.limit = QSvgRenderer(str(base / "mark-limit.svg"))

    @property
    def app_icon_path(self) -> Path:
        return self.folder / "volee.svg"

    def valid(self) -> bool:
        renderers = (self.base, self.plain, self.working, self.warning, self.symbolic, self.limit)
        return all(r.isValid() for r in renderers)


def _paint_symbolic(painter: QPainter, box: QRectF, svgs: Svgs, colour: QColor) -> None:
    """The one-colour glyph: the SVG's shape filled with ``colour``."""
    size = QSize(max(1, round(box.width())), max(1, round(box.height())))
    glyph = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    glyph.fill(Qt.GlobalColor.transparent)
    inner = QPainter(glyph)
    inner.setRenderHint(QPainter.RenderHint.Antialiasing)
    svgs.symbolic.render(inner, QRectF(0, 0, size.width(), size.height()))
    inner.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
    inner.fillRect(glyph.rect(), colour)
    inner.end()
    painter.drawImage(box.topLeft(), glyph)


def paint_icon(
    painter: QPainter, rect: QRect, svgs: Svgs, needs: int, mark: Mark, look: Look = Look.COLOUR
) -> None:
    """Draw the whole icon into ``rect`` (any size, in the pixels it is shown with)."""
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    side = min(rect.width(), rect.height())
    box = QRectF(
        rect.x() + (rect.width() - side) / 2, rect.y() + (rect.height() - side) / 2, side, side
    )
    if look is Look.COLOUR:
        (svgs.plain if mark is Mark.PLAIN else svgs.base).render(painter, box)
    else:
        colour = QColor(ON_DARK if look is Look.DARK_PANEL else ON_LIGHT)
        if mark is Mark.PLAIN:  # nothing live: the glyph faded, as the grey icon is
            colour.setAlphaF(0.55)
        _paint_symbolic(painter, box, svgs, colour)
    corners = {Mark.WORKING: svgs.working, Mark.WARNING: svgs.warning, Mark.LIMITED: svgs.limit}
    if mark in corners:
        m = side * (0.6 if side < SMALL_SIDE else 0.52)
        corner = QRectF(box.right() - m, box.bottom() - m, m, m)
        corners[mark].render(painter, corner)
    if needs > 0:
        _paint_badge(painter, box, needs)
    painter.restore()


def badge_text(count: int, side: float) -> str:
    """The badge's words: the count, "99+" from a hundred, "9+" when a small icon (under
    ``SMALL_SIDE`` px) has no room for three characters."""
    text = str(count) if count < 100 else "99+"
    return "9+" if side < SMALL_SIDE and len(text) > 2 else text


def badge_layout(box: QRectF, text: str) -> tuple[QRectF, QFont]:
    """Where the badge goes in the icon's ``box`` and the font of its ``text``: under
    ``SMALL_SIDE`` px a bigger share of the icon and a font of at least ``SMALL_FONT`` px, as
    wide as its text needs (two digits take a small icon's whole width)."""
    side = box.width()
    small = side < SMALL_SIDE
    d = min(side, max(side * 0.6, 11.0)) if small else side * 0.6
    font = QFont()
    font.setBold(True)
    ratio = 0.72 if len(text) == 1 else 0.62
    font.setPixelSize(max(SMALL_FONT if small else 6, round(d * 0.86 * ratio)))
    needed = QFontMetricsF(font).horizontalAdvance(text) + d * 0.3
    if small:
        width = min(side, max(d, needed))
    else:
        width = max(d, min(side, needed), d * (1.0 + 0.32 * (len(text) - 1)))
    return QRectF(box.right() - width, box.top(), width, d), font


def _paint_badge(painter: QPainter, box: QRectF, count: int) -> None:
    text = badge_text(count, box.width())
    badge, font = badge_layout(box, text)
    d = badge.height()
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor("#ffffff"))
    painter.drawRoundedRect(badge, d / 2, d / 2)
    inner = badge.adjusted(d * 0.07, d * 0.07, -d * 0.07, -d * 0.07)
    painter.setBrush(BADGE_COLOUR)
    painter.drawRoundedRect(inner, inner.height() / 2, inner.height() / 2)
    painter.setFont(font)
    painter.setPen(QColor("#ffffff"))
    painter.drawText(inner, Qt.AlignmentFlag.AlignCenter, text)


class TrayIconEngine(QIconEngine):
    """Renders the tray icon for one (count, mark, look) at whatever size Qt asks."""

    def __init__(self, svgs: Svgs, needs: int, mark: Mark, look: Look = Look.COLOUR) -> None:
        super().__init__()
        self.svgs = svgs
        self.needs = needs
        self.mark = mark
        self.look = look

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        paint_icon(painter, rect, self.svgs, self.needs, self.mark, self.look)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def scaledPixmap(
        self, size: QSize, mode: QIcon.Mode, state: QIcon.State, scale: float
    ) -> QPixmap:
        pixmap = QPixmap(QSize(round(size.width() * scale), round(size.height() * scale)))
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        whole = QRect(QPoint(0, 0), pixmap.size())
        paint_icon(painter, whole, self.svgs, self.needs, self.mark, self.look)
        painter.end()
        pixmap.setDevicePixelRatio(scale)
        return pixmap

    def clone(self) -> QIconEngine:
        return TrayIconEngine(self.svgs, self.needs, self.mark, self.look)

    def key(self) -> str:
        return "volee-tray"


class IconCache:
    """One QIcon per (count, mark, look): the tray changes icon only when what it shows changes.
    ``look`` is the one the setting and the platform chose (``look_for``)."""

    def __init__(self, svgs: Svgs, look: Look = Look.COLOUR) -> None:
        self.svgs = svgs
        self.look = look
        self._icons: dict[tuple[int, str, str], QIcon] = {}
        self._engines: list[TrayIconEngine] = []

    def icon(self, needs: int, mark: Mark) -> QIcon:
        key = (min(needs, 100), mark.value, self.look.value)
        icon = self._icons.get(key)
        if icon is None:
            engine = TrayIconEngine(self.svgs, key[0], mark, self.look)
            self._engines.append(engine)  # QIcon does not keep the Python wrapper alive
            icon = QIcon(engine)
            self._icons[key] = icon
        return icon

    def app_icon(self) -> QIcon:
        return QIcon(str(self.svgs.app_icon_path))

"""Text a window cuts off: a reusable check for the tests (issue 28: 4 K at fractional scaling,
right-to-left layouts).

``clipped(window)`` walks the visible widgets (labels, push, tool, check and radio buttons,
line edits' placeholders, combo boxes' current text, tabs, item views' header sections, a
form's scroll area that scrolls sideways) and
names each one whose text is wider (or taller) than the room its style gives it, measured
with the widget's own ``fontMetrics()`` as Qt draws it.  A text the app cuts on purpose is
allowed: a label that paints itself elided (``request_bar.ElidedLabel``: ``painted_text``)
whose tooltip holds the whole text.

``overlapping(window)`` names visible siblings of one layout whose rectangles cross (a
mirrored layout that put a badge over a label).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetrics, QTextDocumentFragment
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QStyle,
    QStyleOptionButton,
    QStyleOptionComboBox,
    QStyleOptionFrame,
    QTabBar,
    QToolButton,
    QWidget,
)

#: A pixel of slack for rounding (fractional scaling rounds logical sizes both ways).
SLACK = 1


def plain(text: str, rich: bool) -> str:
    """What a person reads of ``text``: markup removed, a mnemonic's ``&`` dropped."""
    if rich:
        return QTextDocumentFragment.fromHtml(text).toPlainText()
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def widest(fm: QFontMetrics, text: str) -> int:
    return max((fm.horizontalAdvance(line) for line in text.split("\n")), default=0)


def lines(text: str) -> int:
    return text.count("\n") + 1


def name_of(widget: QWidget) -> str:
    what = widget.objectName() or widget.accessibleName()
    parent = widget.parentWidget()
    where = ""
    while parent is not None and not where:
        where = parent.objectName()
        parent = parent.parentWidget()
    return f"{type(widget).__name__}({what or '?'}{' in ' + where if where else ''})"


def shown(window: QWidget) -> list[QWidget]:
    """``window`` and its children a person sees (visible, with an area)."""
    out = [window] if window.isVisible() else []
    for widget in window.findChildren(QWidget):
        if widget.isVisible() and widget.width() > 0 and widget.height() > 0:
            out.append(widget)
    return out


def _label(label: QLabel) -> list[str]:
    text = label.text()
    if not text or (label.pixmap() is not None and not label.pixmap().isNull()):
        return []
    fm = label.fontMetrics()
    room = label.contentsRect().adjusted(label.margin(), label.margin(), -label.margin(), 0)
    indent = label.indent() if label.indent() > 0 else 0
    width = room.width() - indent
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text)
    )
    words = plain(text, rich) if rich or label.textFormat() != Qt.TextFormat.PlainText else text
    painted = getattr(label, "painted_text", None)
    if painted is not None:  # cut on purpose: it says so and its tooltip holds what was cut
        shown_text = painted()
        kept = shown_text.removesuffix("…")
        cut = words[len(kept) :].strip()
        if shown_text != words and not (words.startswith(kept) and cut in label.toolTip()):
            return [
                f"{name_of(label)} cuts {words!r} to {shown_text!r}, its tooltip lacks the rest"
            ]
        words = shown_text
    if label.wordWrap():
        need = label.heightForWidth(label.width())
        if need > label.height() + SLACK:
            return [f"{name_of(label)} {words!r}: needs {need} px high, has {label.height()}"]
        longest = max((fm.horizontalAdvance(w) for w in words.split()), default=0)
        if longest > width + SLACK:
            return [f"{name_of(label)} {words!r}: a word of {longest} px in {width}"]
        return []
    out = []
    need_w = widest(fm, words)
    if need_w > width + SLACK:
        out.append(f"{name_of(label)} {words!r}: {need_w} px wide in {width}")
    need_h = lines(words) * fm.lineSpacing() - fm.leading()
    if need_h > room.height() + SLACK and not rich:
        out.append(f"{name_of(label)} {words!r}: {need_h} px high in {room.height()}")
    return out


def _push(button: QPushButton) -> list[str]:
    words = plain(button.text(), False)
    if not words:
        return []
    option = QStyleOptionButton()
    button.initStyleOption(option)
    room = (
        button.style()
        .subElementRect(QStyle.SubElement.SE_PushButtonContents, option, button)
        .width()
    )
    if not button.icon().isNull():
        room -= button.iconSize().width() + 4
    if button.menu() is not None:
        room -= button.style().pixelMetric(QStyle.PixelMetric.PM_MenuButtonIndicator, option)
    need = widest(button.fontMetrics(), words)
    return [f"{name_of(button)} {words!r}: {need} px wide in {room}"] if need > room + SLACK else []


def _tool(button: QToolButton) -> list[str]:
    words = plain(button.text(), False)
    if not words or button.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly:
        return []
    if button.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonFollowStyle and (
        not button.icon().isNull()
    ):
        return []
    need = button.sizeHint().width()
    if button.width() + SLACK < need:
        return [f"{name_of(button)} {words!r}: needs {need} px, has {button.width()}"]
    return []


def _check(button: QAbstractButton) -> list[str]:
    words = plain(button.text(), False)
    if not words:
        return []
    option = QStyleOptionButton()
    button.initStyleOption(option)  # type: ignore[attr-defined]
    element = (
        QStyle.SubElement.SE_RadioButtonContents
        if isinstance(button, QRadioButton)
        else QStyle.SubElement.SE_CheckBoxContents
    )
    rect = button.style().subElementRect(element, option, button)
    room = rect.intersected(button.rect()).width()
    need = widest(button.fontMetrics(), words)
    return [f"{name_of(button)} {words!r}: {need} px wide in {room}"] if need > room + SLACK else []


def _line_edit(edit: QLineEdit) -> list[str]:
    words = edit.placeholderText()
    if edit.text() or not words:
        return []
    option = QStyleOptionFrame()
    edit.initStyleOption(option)
    rect = edit.style().subElementRect(QStyle.SubElement.SE_LineEditContents, option, edit)
    margins = edit.textMargins()
    room = rect.width() - margins.left() - margins.right() - 4  # QLineEdit's 2 px each side
    for side in edit.findChildren(QWidget):  # a clear button, an action's icon
        if side.isVisible() and side.parentWidget() is edit:
            room -= side.width()
    need = edit.fontMetrics().horizontalAdvance(words)
    return [f"{name_of(edit)} placeholder {words!r}: {need} px in {room}"] if need > room else []


def _combo(combo: QComboBox) -> list[str]:
    words = combo.currentText()
    if not words or combo.isEditable():
        return []
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    rect = combo.style().subControlRect(
        QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, combo
    )
    room = rect.width() - 2
    if not combo.itemIcon(combo.currentIndex()).isNull():
        room -= combo.iconSize().width() + 4
    need = combo.fontMetrics().horizontalAdvance(words)
    return [f"{name_of(combo)} {words!r}: {need} px wide in {room}"] if need > room + SLACK else []


def _tabs(bar: QTabBar) -> list[str]:
    out = []
    for i in range(bar.count()):
        if not bar.isTabVisible(i):
            continue
        words = plain(bar.tabText(i), False)
        rect: QRect = bar.tabRect(i)
        need = bar.tabSizeHint(i).width()
        if words and rect.width() + SLACK < need:
            out.append(f"{name_of(bar)} tab {words!r}: needs {need} px, has {rect.width()}")
        elif words and not rect.intersects(bar.rect()):
            out.append(f"{name_of(bar)} tab {words!r}: outside the bar")
    return out


def _header(header: QHeaderView) -> list[str]:
    model = header.model()
    if model is None:
        return []
    out = []
    margin = header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
    for section in range(header.count()):
        if header.isSectionHidden(section) or header.sectionSize(section) == 0:
            continue
        words = str(model.headerData(section, header.orientation()) or "")
        if not words:
            continue
        room = header.sectionSize(section) - 2 * margin
        if header.isSortIndicatorShown() and header.sortIndicatorSection() == section:
            room -= header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMarkSize, None, header)
        need = widest(header.fontMetrics(), words)
        if header.orientation() == Qt.Orientation.Horizontal and need > room + SLACK:
            out.append(f"{name_of(header)} section {words!r}: {need} px wide in {room}")
    return out


def _scroll(area: QScrollArea) -> list[str]:
    """A form in a scroll area scrolls down, never sideways: what is off to the side is cut."""
    bar = area.horizontalScrollBar()
    if bar.isVisible() and bar.maximum() > 0:
        inner = area.widget()
        wide = inner.width() if inner is not None else 0
        return [f"{name_of(area)} scrolls sideways: {wide} px wide in {area.viewport().width()}"]
    return []


def clipped(window: QWidget) -> list[str]:
    """Each visible text of ``window`` wider or taller than its room, named (empty: none)."""
    out: list[str] = []
    for widget in shown(window):
        if isinstance(widget, QLabel):
            out += _label(widget)
        elif isinstance(widget, QPushButton):
            out += _push(widget)
        elif isinstance(widget, QToolButton):
            out += _tool(widget)
        elif isinstance(widget, QCheckBox | QRadioButton):
            out += _check(widget)
        elif isinstance(widget, QLineEdit):
            out += _line_edit(widget)
        elif isinstance(widget, QComboBox):
            out += _combo(widget)
        elif isinstance(widget, QTabBar):
            out += _tabs(widget)
        elif isinstance(widget, QHeaderView):
            out += _header(widget)
        elif isinstance(widget, QScrollArea):
            out += _scroll(widget)
        elif isinstance(widget, QAbstractItemView):
            pass  # its rows are painted by a delegate: see test_clipping's row checks
    return out


def overlapping(window: QWidget) -> list[str]:
    """Visible siblings laid out by the same layout whose rectangles cross."""
    out = []
    for widget in shown(window):
        layout = widget.layout()
        if layout is None:
            continue
        items = [layout.itemAt(i) for i in range(layout.count())]
        kids = [
            item.widget()
            for item in items
            if item is not None and item.widget() is not None and item.widget().isVisible()
        ]
        for i, a in enumerate(kids):
            for b in kids[i + 1 :]:
                if a.geometry().intersects(b.geometry()):
                    out.append(f"{name_of(a)} overlaps {name_of(b)}")
    return out

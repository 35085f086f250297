"""How the list's rows are painted: an agent in three lines or one (compact), a group header.

Full row: name, markers, context share and time in state; the coloured state and its
detail (cut at its end, read the way it is written; the tooltip holds it all);
the last activity of the current turn (else the folder) and the mission.  Compact
row: state mark, name, request or detail, context share, time in state.  Right to left the
row is mirrored: laid out from the left, each rect and alignment flipped (``_text``, ``_fill``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QPen
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from volee_desktop.core.durations import duration
from volee_desktop.core.model import Agent, Mission

from .agent_model import AgentRole, MachineRole, MissionRole, OutcomeRole
from .list_rows import GroupHeader, GroupRole
from .texts import (
    CONTEXT_LIMIT,
    activity_line,
    detail_text,
    markers,
    mission_label,
    near_limit,
    state_and_detail,
    state_colour,
    state_mark,
)

PAD = 6


def elided(fm: QFontMetrics, text: str, width: int, path: bool = False) -> str:
    """``text`` cut to ``width`` at its end ("summarize the REA…", never "summarize th…E for
    a newcomer"); a path in its middle, keeping its last folder."""
    mode = Qt.TextElideMode.ElideMiddle if path else Qt.TextElideMode.ElideRight
    return fm.elidedText(text, mode, max(0, width))


BAR = 4
CONTEXT_W = 34  # the context bar's width
NEAR_COLOUR = "#e8590c"


def paint_focus(painter: QPainter, option: QStyleOptionViewItem) -> None:
    """The keyboard's row: an outline in the highlight colour, dotted in the highlighted text's
    colour on a selected row (several can be selected; the arrows move this one)."""
    selected = bool(option.state & QStyle.StateFlag.State_Selected)
    role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Highlight
    pen = QPen(option.palette.color(QPalette.ColorGroup.Active, role), 2)
    pen.setStyle(Qt.PenStyle.DotLine if selected else Qt.PenStyle.SolidLine)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRect(option.rect.adjusted(1, 1, -2, -2))


@dataclass(frozen=True)
class Fonts:
    base: QFont
    bold: QFont
    fm: QFontMetrics
    bfm: QFontMetrics
    age_w: int  # "59 min"
    since_w: int  # "for 59 min"
    percent_w: int  # "100%"


class AgentDelegate(QStyledItemDelegate):
    """Paints the list's rows; ``clock`` gives "now" for the time in state, ``compact`` picks
    one line per agent, ``context_limit`` the share from which an agent is marked."""

    def __init__(self, parent: QObject | None = None, clock: Callable[[], float] = time.time):
        super().__init__(parent)
        self.clock = clock
        self.compact = False
        self._outcome = ""  # the row being painted's plan and change (OutcomeRole)
        self._machine = ""  # the other machine of the row being painted (MachineRole)
        self.context_limit = CONTEXT_LIMIT
        self._fonts: dict[str, Fonts] = {}
        self._direction = Qt.LayoutDirection.LeftToRight  # the row being painted's
        self._outer = QRect()

    def _text(
        self, painter: QPainter, rect: QRect, flags: Qt.AlignmentFlag | int, text: str
    ) -> None:
        """``text`` in ``rect`` as laid out left to right, mirrored in a right-to-left row;
        its own words read the way they are written (an English command stays one)."""
        align = QStyle.visualAlignment(self._direction, Qt.AlignmentFlag(flags))
        where = QStyle.visualRect(self._direction, self._outer, rect)
        painter.drawText(where, int(align | Qt.AlignmentFlag.AlignAbsolute), text)

    def _fill(self, painter: QPainter, rect: QRect, colour: QColor) -> None:
        painter.fillRect(QStyle.visualRect(self._direction, self._outer, rect), colour)

    def fonts(self, font: QFont) -> Fonts:
        """The row's fonts and their metrics, made once per font (a paint makes none)."""
        key = font.key()
        fonts = self._fonts.get(key)
        if fonts is None:
            base = QFont(font)
            bold = QFont(font)
            bold.setBold(True)
            fm, bfm = QFontMetrics(base), QFontMetrics(bold)
            widths = [fm.horizontalAdvance(t) for t in ("59 min", "for 59 min", "100%")]
            fonts = Fonts(base, bold, fm, bfm, *widths)
            self._fonts[key] = fonts
        return fonts

    def row_height(self, option: QStyleOptionViewItem) -> int:
        line = self.fonts(option.font).fm.height()
        return line + 6 if self.compact else 3 * line + 2 * PAD + 4

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        if isinstance(index.data(GroupRole), GroupHeader):
            return QSize(320, self.fonts(option.font).fm.height() + 8)
        return QSize(320, self.row_height(option))

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        # Laid out left to right, then mirrored in a right-to-left layout (``_text``,
        # ``_fill``): the state bar and the name on the leading side, the time on the other.
        self._direction = option.direction
        self._outer = QRect(option.rect)
        header = index.data(GroupRole)
        if isinstance(header, GroupHeader):
            self._paint_header(painter, option, header)
            return
        agent = index.data(AgentRole)
        if not isinstance(agent, Agent):
            super().paint(painter, option, index)
            return
        painter.save()
        # Each text's direction is its own (a command, a path): the row's is option.direction.
        painter.setLayoutDirection(Qt.LayoutDirection.LayoutDirectionAuto)
        style = option.widget.style() if option.widget else QApplication.style()
        style.drawPrimitive(
            QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter, option.widget
        )
        self._machine = str(index.data(MachineRole) or "")
        if self.compact:
            self._paint_compact(painter, option, agent)
        else:
            self._outcome = str(index.data(OutcomeRole) or "")
            self._paint_full(painter, option, agent, index.data(MissionRole))
        if option.state & QStyle.StateFlag.State_HasFocus:
            paint_focus(painter, option)
        painter.restore()

    # --- pieces ------

    def _pens(self, option: QStyleOptionViewItem) -> tuple[QColor, QColor, bool]:
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        palette: QPalette = option.palette
        text = palette.color(
            QPalette.ColorGroup.Active,
            QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text,
        )
        dim = QColor(text)
        dim.setAlphaF(0.62)
        return text, dim, selected

    def _context(self, painter: QPainter, agent: Agent, x: int, y: int, h: int, dim: QColor) -> int:
        """Draw the context bar and its percentage ending at ``x``; returns its left edge."""
        share = agent.context_share
        if share is None:
            return x
        near = near_limit(agent, self.context_limit)
        label = f"{round(share * 100)}%"
        label_w = self.fonts(painter.font()).percent_w
        colour = QColor(NEAR_COLOUR if near else "#1c7ed6")
        left = x - label_w - 4 - CONTEXT_W
        bar = QRect(left, y + h // 2 - 3, CONTEXT_W, 6)
        track = QColor(dim)
        track.setAlphaF(0.25)
        self._fill(painter, bar, track)
        self._fill(painter, QRect(bar.left(), bar.top(), round(CONTEXT_W * share), 6), colour)
        painter.setPen(colour if near else dim)
        self._text(painter, QRect(x - label_w, y, label_w, h), Qt.AlignmentFlag.AlignRight, label)
        return left - PAD

    def _paint_header(
        self, painter: QPainter, option: QStyleOptionViewItem, header: GroupHeader
    ) -> None:
        painter.save()
        painter.setLayoutDirection(Qt.LayoutDirection.LayoutDirectionAuto)
        rect: QRect = option.rect
        text, dim, _selected = self._pens(option)
        shade = QColor(dim)
        shade.setAlphaF(0.10)
        self._fill(painter, rect, shade)
        fonts = self.fonts(option.font)
        painter.setFont(fonts.bold)
        painter.setPen(QColor("#e8590c") if header.hidden else text)
        rtl = self._direction == Qt.LayoutDirection.RightToLeft
        folded = "◂ " if rtl else "▸ "  # a folded group's arrow points the way it reads
        arrow = "" if header.hidden else (folded if header.folded else "▾ ")
        words = arrow + header.text()
        fm = fonts.bfm
        left = rect.left() + PAD
        inner = QRect(left, rect.top(), rect.width() - 2 * PAD, rect.height())
        self._text(
            painter, inner, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, words
        )
        if header.path:
            x = left + fm.horizontalAdvance(words) + PAD
            painter.setFont(option.font)
            painter.setPen(dim)
            path = fonts.fm.elidedText(
                header.path, Qt.TextElideMode.ElideMiddle, max(0, rect.right() - PAD - x)
            )
            self._text(
                painter,
                QRect(x, rect.top(), rect.right() - PAD - x, rect.height()),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                path,
            )
        painter.restore()

    def _state_colour(self, agent: Agent, dim: QColor) -> QColor:
        """The state's colour, or grey while the agent's machine is unreachable: what it last
        said it was doing is not known to be true now (the words still say it)."""
        return QColor(dim) if " unreachable" in self._machine else QColor(state_colour(agent))

    def _paint_compact(self, painter: QPainter, option: QStyleOptionViewItem, agent: Agent) -> None:
        rect: QRect = option.rect
        text, dim, selected = self._pens(option)
        f = self.fonts(option.font)
        base, bold, fm, bfm = f.base, f.bold, f.fm, f.bfm
        line = fm.height()
        top = rect.top() + (rect.height() - line) // 2
        left = rect.left() + PAD
        right = rect.right() - PAD
        colour = self._state_colour(agent, dim)
        painter.setFont(bold)
        painter.setPen(text if selected else colour)
        mark = state_mark(agent)
        self._text(painter, QRect(left, top, 16, line), Qt.AlignmentFlag.AlignLeft, mark)
        left += 16
        painter.setFont(base)
        since = duration(self.clock() - agent.state_since)
        # A column as wide as "59 min": the context bars line up from row to row.
        since_w = max(fm.horizontalAdvance(since), f.age_w)
        painter.setPen(dim)
        self._text(
            painter, QRect(right - since_w, top, since_w, line), Qt.AlignmentFlag.AlignRight, since
        )
        right = self._context(painter, agent, right - since_w - PAD, top, line, dim)
        painter.setFont(bold)
        painter.setPen(text)
        room = right - left
        # Another machine's agent is NAME:AGENT, as the CLI names it; greyed while unreachable.
        machine, _sep, unreachable = self._machine.partition(" ")
        if unreachable and not selected:
            painter.setPen(dim)
        shown_name = f"{machine}:{agent.name}" if machine else agent.name
        name = bfm.elidedText(shown_name, Qt.TextElideMode.ElideRight, min(room // 2, 220))
        self._text(painter, QRect(left, top, room, line), Qt.AlignmentFlag.AlignLeft, name)
        x = left + bfm.horizontalAdvance(name) + PAD
        painter.setFont(base)
        painter.setPen(text if selected else dim)
        # What it asks, else its detail, else what it does in this turn, else its state.
        shown = detail_text(agent) or agent.activity or state_and_detail(agent)[0]
        if unreachable:
            shown = f"{unreachable} · {shown}"
        detail = elided(fm, shown, max(0, right - x))
        self._text(painter, QRect(x, top, right - x, line), Qt.AlignmentFlag.AlignLeft, detail)

    def _paint_full(
        self, painter: QPainter, option: QStyleOptionViewItem, agent: Agent, mission: object
    ) -> None:
        rect: QRect = option.rect
        text, dim, selected = self._pens(option)
        colour = self._state_colour(agent, dim)
        self._fill(painter, QRect(rect.left(), rect.top() + 2, BAR, rect.height() - 4), colour)
        f = self.fonts(option.font)
        base_font, bold, fm, bfm = f.base, f.bold, f.fm, f.bfm
        line = fm.height()
        left = rect.left() + BAR + PAD + 2
        right = rect.right() - PAD
        top = rect.top() + PAD

        # Line 1: name, markers, context share, time in state (right).
        since = "for " + duration(self.clock() - agent.state_since)
        painter.setFont(base_font)
        since_w = max(fm.horizontalAdvance(since), f.since_w)
        painter.setPen(dim)
        self._text(
            painter, QRect(right - since_w, top, since_w, line), Qt.AlignmentFlag.AlignRight, since
        )
        end = self._context(painter, agent, right - since_w - PAD, top, line, dim)
        painter.setFont(bold)
        room = end - left
        name = bfm.elidedText(agent.name, Qt.TextElideMode.ElideRight, max(room // 2, room - 160))
        painter.setPen(dim if " unreachable" in self._machine and not selected else text)
        self._text(painter, QRect(left, top, room, line), Qt.AlignmentFlag.AlignLeft, name)
        flags = markers(agent)
        if self._machine:
            flags.insert(0, self._machine)  # the machine it is on (and "unreachable since")
        if near_limit(agent, self.context_limit):
            flags.append("near its context limit")
        if flags:
            x = left + bfm.horizontalAdvance(name) + PAD
            painter.setFont(base_font)
            warn = agent.interrupted or near_limit(agent, self.context_limit)
            painter.setPen(QColor("#f08c00") if warn else dim)
            tag = fm.elidedText(" · ".join(flags), Qt.TextElideMode.ElideRight, max(0, end - x))
            self._text(
                painter, QRect(x, top, max(0, end - x), line), Qt.AlignmentFlag.AlignLeft, tag
            )

        # Line 2: coloured state, the rest of the detail (elided in the middle).
        y = top + line + 2
        label, rest = state_and_detail(agent)
        painter.setFont(bold)
        painter.setPen(text if selected else colour)
        self._text(painter, QRect(left, y, right - left, line), Qt.AlignmentFlag.AlignLeft, label)
        x = left + bfm.horizontalAdvance(label)
        if rest:
            painter.setFont(base_font)
            painter.setPen(text)
            sep = " " if detail_text(agent).lower().startswith(label) else " · "
            # The separator goes between the state and the words, on whichever side that is.
            rtl = self._direction == Qt.LayoutDirection.RightToLeft
            if rtl:  # the words cut at their end, the separator kept next to the state
                detail = elided(fm, rest, right - x - fm.horizontalAdvance(sep)) + sep
            else:
                detail = elided(fm, sep + rest, right - x)
            self._text(painter, QRect(x, y, right - x, line), Qt.AlignmentFlag.AlignLeft, detail)

        # Line 3: last activity of this turn (else the folder) (left), mission (right).
        y += line + 2
        painter.setFont(base_font)
        painter.setPen(dim)
        goal = mission_label(mission if isinstance(mission, Mission) else None, agent.mission)
        goal_w = 0
        if goal:
            goal = fm.elidedText("◆ " + goal, Qt.TextElideMode.ElideRight, (right - left) // 2)
            goal_w = fm.horizontalAdvance(goal)
            self._text(
                painter, QRect(right - goal_w, y, goal_w, line), Qt.AlignmentFlag.AlignRight, goal
            )
        activity = activity_line(agent, self.clock())
        if self._outcome:  # what its work came to: "plan 3/7 · 3 files +120 −14"
            activity = f"{self._outcome} · {activity}" if activity else self._outcome
        folder = activity == (agent.worktree or agent.cwd)  # a path keeps its last part
        activity = elided(fm, activity, right - left - goal_w - PAD, path=folder)
        self._text(
            painter, QRect(left, y, right - left, line), Qt.AlignmentFlag.AlignLeft, activity
        )

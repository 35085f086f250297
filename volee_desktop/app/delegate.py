"""How one agent row is painted: name, coloured state, detail, last activity, time, mission."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from volee_desktop.core.durations import duration
from volee_desktop.core.model import Agent, Mission

from .agent_model import AgentRole, MissionRole
from .texts import STATE_COLOUR, STATE_LABEL, detail_text, markers, mission_label

PAD = 6
BAR = 4


class AgentDelegate(QStyledItemDelegate):
    """Paints a three-line agent row; ``clock`` gives "now" for the time in state."""

    def __init__(self, parent: QObject | None = None, clock: Callable[[], float] = time.time):
        super().__init__(parent)
        self.clock = clock

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        line = QFontMetrics(option.font).height()
        return QSize(320, 3 * line + 2 * PAD + 4)

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        agent = index.data(AgentRole)
        if not isinstance(agent, Agent):
            super().paint(painter, option, index)
            return
        mission = index.data(MissionRole)
        painter.save()
        rect: QRect = option.rect
        palette: QPalette = option.palette
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        style = option.widget.style() if option.widget else QApplication.style()
        style.drawPrimitive(
            QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter, option.widget
        )
        colour = QColor(STATE_COLOUR[agent.state])
        painter.fillRect(QRect(rect.left(), rect.top() + 2, BAR, rect.height() - 4), colour)

        text = palette.color(
            QPalette.ColorGroup.Active,
            QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text,
        )
        dim = QColor(text)
        dim.setAlphaF(0.62)
        base_font = QFont(option.font)
        bold = QFont(base_font)
        bold.setBold(True)
        fm = QFontMetrics(base_font)
        line = fm.height()
        left = rect.left() + BAR + PAD + 2
        right = rect.right() - PAD
        top = rect.top() + PAD

        # Line 1: name, markers, time in state (right).
        since = duration(self.clock() - agent.state_since)
        painter.setFont(base_font)
        since_w = fm.horizontalAdvance(since)
        painter.setPen(dim)
        painter.drawText(
            QRect(right - since_w, top, since_w, line), Qt.AlignmentFlag.AlignRight, since
        )
        painter.setFont(bold)
        bfm = QFontMetrics(bold)
        room = right - since_w - PAD - left
        name = bfm.elidedText(agent.name, Qt.TextElideMode.ElideRight, max(room // 2, room - 160))
        painter.setPen(text)
        painter.drawText(QRect(left, top, room, line), Qt.AlignmentFlag.AlignLeft, name)
        flags = markers(agent)
        if flags:
            x = left + bfm.horizontalAdvance(name) + PAD
            painter.setFont(base_font)
            painter.setPen(QColor("#f08c00") if agent.interrupted else dim)
            tag = fm.elidedText(
                " · ".join(flags), Qt.TextElideMode.ElideRight, max(0, right - since_w - PAD - x)
            )
            painter.drawText(QRect(x, top, right - x, line), Qt.AlignmentFlag.AlignLeft, tag)

        # Line 2: coloured state, detail.
        y = top + line + 2
        label = STATE_LABEL[agent.state]
        painter.setFont(bold)
        painter.setPen(text if selected else colour)
        painter.drawText(QRect(left, y, right - left, line), Qt.AlignmentFlag.AlignLeft, label)
        x = left + bfm.horizontalAdvance(label)
        shown = detail_text(agent)
        if shown:
            painter.setFont(base_font)
            painter.setPen(text)
            detail = fm.elidedText(" · " + shown, Qt.TextElideMode.ElideRight, right - x)
            painter.drawText(QRect(x, y, right - x, line), Qt.AlignmentFlag.AlignLeft, detail)

        # Line 3: last activity (left), mission (right).
        y += line + 2
        painter.setFont(base_font)
        painter.setPen(dim)
        goal = mission_label(mission if isinstance(mission, Mission) else None, agent.mission)
        goal_w = 0
        if goal:
            goal = fm.elidedText("◆ " + goal, Qt.TextElideMode.ElideRight, (right - left) // 2)
            goal_w = fm.horizontalAdvance(goal)
            painter.drawText(
                QRect(right - goal_w, y, goal_w, line), Qt.AlignmentFlag.AlignRight, goal
            )
        activity = agent.activity
        if activity and agent.activity_at is not None:
            activity = f"{activity} ({duration(self.clock() - agent.activity_at)} ago)"
        elif not activity:
            activity = agent.cwd
        activity = fm.elidedText(
            activity, Qt.TextElideMode.ElideMiddle, right - left - goal_w - PAD
        )
        painter.drawText(QRect(left, y, right - left, line), Qt.AlignmentFlag.AlignLeft, activity)
        painter.restore()

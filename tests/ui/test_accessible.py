"""Keyboard and screen readers (issue 28, item 5): every interactive element of the list, the
agent window and the dialogs has an accessible name, every input is reached with Tab, the
keyboard's row is drawn, and no state is said by colour alone.  Walks what a screen reader
walks: the QAccessibleInterface tree (``QAccessible.queryAccessibleInterface``) of the real
windows, offscreen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QAccessible, QAccessibleInterface, QColor, QImage, QPainter
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QStyle,
    QStyleOptionViewItem,
    QTextEdit,
    QWidget,
)

from tests.fakes.app_link import FakeDaemonLink, World
from tests.ui.test_new_agent import HARNESSES
from volee_desktop.app.texts import STATE_MARK, state_label
from volee_desktop.core.states import AgentState

Role = QAccessible.Role
#: What a person acts on: each needs a name a screen reader can say.
INTERACTIVE = {
    Role.PushButton,
    Role.CheckBox,
    Role.RadioButton,
    Role.ComboBox,
    Role.EditableText,
    Role.SpinBox,
    Role.Slider,
    Role.Link,
    Role.ButtonMenu,
    Role.ButtonDropDown,
    Role.PageTab,
    Role.ListItem,
    Role.TreeItem,
    Role.Row,
    Role.Cell,
    Role.MenuItem,
}
#: The widgets that take input: each is reached with Tab (item views' headers are not).
INPUTS = (
    QAbstractButton,
    QComboBox,
    QLineEdit,
    QAbstractSpinBox,
    QAbstractItemView,
    QTextEdit,
    QPlainTextEdit,
)


def walk(iface: QAccessibleInterface, path: str = "") -> Iterator[tuple[str, QAccessibleInterface]]:
    if not iface.isValid() or path.count("/") > 30:
        return
    yield path, iface
    for i in range(min(iface.childCount(), 300)):
        child = iface.child(i)
        if child is not None:
            yield from walk(
                child, f"{path}/{child.text(QAccessible.Text.Name) or child.role().name}"
            )


def shown(window: QWidget) -> list[QAccessibleInterface]:
    root = QAccessible.queryAccessibleInterface(window)
    assert root is not None
    out = []
    for _path, iface in walk(root):
        state = iface.state()
        if not state.invisible and not state.disabled and iface.role() in INTERACTIVE:
            out.append(iface)
    return out


def unnamed(window: QWidget) -> list[str]:
    """The interactive elements a screen reader would announce with no name."""
    out = []
    for iface in shown(window):
        if not iface.text(QAccessible.Text.Name).strip():
            obj = iface.object()
            what = (obj.objectName() or type(obj).__name__) if obj is not None else "?"
            out.append(f"{iface.role().name} {what}")
    return out


def untabbable(window: QWidget) -> list[str]:
    """The visible, enabled inputs that Tab never reaches."""
    out = []
    for widget in window.findChildren(QWidget):
        if not isinstance(widget, INPUTS) or isinstance(widget, QHeaderView):
            continue
        if not widget.isVisibleTo(window) or not widget.isEnabled():
            continue
        if type(widget.parent()).__name__ in ("QScrollBar", "QTabBar", "QLineEdit"):
            continue  # parts of another control (its arrows, its clear button)
        if not widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
            out.append(f"{type(widget).__name__} {widget.objectName() or widget.accessibleName()}")
    return out


def windows(controller: Any, world: World, link: FakeDaemonLink, qtbot: Any) -> dict[str, Any]:
    """The list, an agent's window and every dialog, open over a world with a request."""
    link.handlers["agents.harnesses"] = lambda _params: {"harnesses": HARNESSES}
    asking = world.agent("api-fixer", AgentState.WORKING)
    world.ask(asking, "Bash", {"command": "rm -rf build"})
    world.agent("docs", AgentState.IDLE)
    world.agent("tests", AgentState.FAILED)
    controller.show_list(asking)
    qtbot.waitUntil(controller.panel.isVisible)
    controller.actions.show_output(asking)
    window = controller.windows[asking]
    qtbot.waitUntil(window.isVisible)
    dialog = controller.new_agent.open()
    qtbot.waitUntil(lambda: dialog.harness.count() > 0)
    mission, _, _ = world.mission_awaiting("Fix the login bug")
    return {
        "list": controller.panel,
        "agent window": window,
        "new agent": dialog,
        "settings": controller.open_settings(),
        "about": controller.open_about(),
        "approval": controller.review(mission),
    }


def test_every_interactive_element_has_a_name_and_tab_reaches_every_input(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    for title, window in windows(controller, world, link, qtbot).items():
        assert shown(window), f"{title}: the walk found its controls"
        assert unnamed(window) == [], f"{title}: unnamed for a screen reader"
        assert untabbable(window) == [], f"{title}: not reached with Tab"


def test_the_list_rows_say_their_state_in_words_and_marks_not_only_in_colour(
    controller: Any, world: World, qtbot: Any
) -> None:
    asking = world.agent("api-fixer", AgentState.WORKING)
    world.ask(asking, "Bash", {"command": "rm -rf build"})
    world.agent("docs", AgentState.IDLE)
    controller.show_list(asking)
    qtbot.waitUntil(controller.panel.isVisible)
    rows = [
        i.text(QAccessible.Text.Name)
        for i in shown(controller.panel)
        if i.role() == Role.ListItem and "api-fixer" in i.text(QAccessible.Text.Name)
    ]
    assert rows == ["api-fixer, needs you, Bash: rm -rf build"]
    agent = controller.live.registry.agents[asking]
    assert state_label(agent) == "needs you"
    # The compact rows draw a mark before the name: one shape per state.
    assert len(set(STATE_MARK.values())) == len(STATE_MARK) == len(AgentState)


def _drawn_row(controller: Any, focused: bool) -> QImage:
    view = controller.panel.view
    index = view.model().index(0, 0)
    option = QStyleOptionViewItem()
    view.initViewItemOption(option)
    option.rect = QRect(0, 0, 320, view.sizeHintForRow(0))
    option.state |= QStyle.StateFlag.State_Selected
    if focused:
        option.state |= QStyle.StateFlag.State_HasFocus
    image = QImage(option.rect.size(), QImage.Format.Format_ARGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    view.itemDelegate().paint(painter, option, index)
    painter.end()
    return image


def test_the_keyboards_row_is_outlined_even_when_selected(
    controller: Any, world: World, qtbot: Any
) -> None:
    world.agent("docs", AgentState.IDLE)
    controller.show_list()
    qtbot.waitUntil(lambda: controller.panel.view.model().rowCount() > 0)
    assert _drawn_row(controller, focused=True) != _drawn_row(controller, focused=False)

"""A 4 K display at fractional scaling and a right-to-left layout (issue 28, edge cases): the
list (rows asking, working, done, denied, limited, a long command), the agent window (its
request box and a dialog's numbered options), the New agent dialog, Settings and a mission's
approval cut no text (``clipping.py``), and right to left the list's rows are mirrored.

The 4 K case runs the same tests in a child pytest: ``QT_SCALE_FACTOR`` is read once, when the
QApplication starts (the offscreen plugin's 3840×2160 screen at 1.5: 2560×1440 logical).
``VOLEE_SHOTS=<folder>`` saves each window's PNG there (``test-artifacts/`` by hand).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionViewItem, QWidget

from tests.fakes.app_link import FakeDaemonLink, World
from tests.ui.clipping import clipped, overlapping
from tests.ui.test_agent_window import DIALOG
from tests.ui.test_answer import QUESTION
from tests.ui.test_new_agent import HARNESSES
from volee_desktop.app.list_rows import Grouping
from volee_desktop.core import events as ev
from volee_desktop.core.model import LimitKind
from volee_desktop.core.states import AgentState

ROOT = Path(__file__).resolve().parents[2]
#: Set in the child pytest that runs at 4 K, 1.5×.
AT_4K = "VOLEE_TEST_4K"
LONG = (
    "cd /home/me/src/shop-api && DATABASE_URL=postgres://localhost/shop_test "
    "pytest -q -x tests/integration/test_checkout_with_a_very_long_name.py --maxfail=1"
)


def scene(controller: Any, world: World, link: FakeDaemonLink, qtbot: Any) -> dict[str, QWidget]:
    """Every window open over agents in each state, one asking with a long command."""
    link.handlers["agents.harnesses"] = lambda _params: {"harnesses": HARNESSES}
    world.t = time.time() - 3000  # the rows say "for 50 min", a reset "in 2 h 13 min"
    asking = world.agent("api-fixer", AgentState.WORKING, cwd="/home/me/src/shop-api")
    world.ask(asking, "Bash", {"command": LONG})
    question = world.agent("schema-chooser", AgentState.WORKING)
    world.ask(question, "AskUserQuestion", QUESTION)
    working = world.agent("docs-writer", AgentState.WORKING)
    world.activity(working, "Edit: docs/runbook.md")
    world.agent("tests", AgentState.DONE, "Tests pass, pushed.")
    denied = world.agent("cleaner", AgentState.WORKING)
    world.ask(denied, "Bash", {"command": "rm -rf build"})
    world.answered(denied, "deny")
    world.state(denied, AgentState.DONE, "")
    limited = world.agent("worker-07", AgentState.WORKING)
    world.state(limited, AgentState.IDLE, "limited: 5-hour limit")
    link.push(
        ev.LimitHit(
            at=world.tick(),
            agent=limited,
            kind=LimitKind.FIVE_HOUR,
            resets_at=time.time() + 8000,
            ended=True,
        )
    )
    mission, _, _ = world.mission_awaiting("Fix the login bug")
    controller.show_list(asking)
    qtbot.waitUntil(controller.panel.isVisible)
    controller.actions.show_output(asking)  # its request box wraps the long command
    window = controller.windows[asking]
    qtbot.waitUntil(window.isVisible)
    # Another's permission dialog on its screen: a button per numbered option.
    cleaner = world.agent("cleaner-2", AgentState.WORKING)
    world.ask(cleaner, "Bash", {"command": "rm -rf build"})
    controller.actions.show_output(cleaner)
    options = controller.windows[cleaner]
    qtbot.waitUntil(lambda: "recent output" in options.output.toPlainText())
    options.refresh_timer.stop()  # the fake daemon's screen would replace the dialog's
    options.set_screen("\n".join(DIALOG), version=101)
    qtbot.waitUntil(options.key_buttons["option:4"].isVisible)
    dialog = controller.new_agent.open()
    qtbot.waitUntil(lambda: dialog.harness.count() > 0)
    return {
        "list": controller.panel,
        "agent-window": window,
        "agent-options": options,
        "new-agent": dialog,
        "settings": controller.open_settings(),
        "approval": controller.review(mission),
    }


@pytest.fixture
def rtl(qapp: Any) -> Iterator[None]:
    """The layout an Arabic or Hebrew locale gives."""
    qapp.setLayoutDirection(Qt.LayoutDirection.RightToLeft)
    yield
    qapp.setLayoutDirection(Qt.LayoutDirection.LeftToRight)


def check(windows: dict[str, QWidget], qtbot: Any, name: str) -> None:
    for title, window in windows.items():
        qtbot.waitUntil(window.isVisible)
        # Laid out as it settles (a scroll area shows its bars for a moment while it does).
        QApplication.sendPostedEvents(None, 0)
        QApplication.processEvents()
        window.repaint()
        shots = os.environ.get("VOLEE_SHOTS")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            scale = QApplication.primaryScreen().devicePixelRatio()
            window.grab().save(str(Path(shots) / f"{name}-{scale:g}x-{title}.png"))
        assert clipped(window) == [], f"{title}: text cut"
        assert overlapping(window) == [], f"{title}: widgets over each other"


Drawn = tuple[int, int, str, int]  # left, right, words, top


class RecordingPainter(QPainter):
    """A painter that notes where each text lands: its drawn extent, not its box."""

    def __init__(self, image: QImage) -> None:
        super().__init__(image)
        self.texts: list[Drawn] = []

    def drawText(self, *args: Any) -> None:  # type: ignore[override]
        super().drawText(*args)
        if len(args) != 3 or not isinstance(args[0], QRect):
            return
        rect, flags, text = args
        align = Qt.AlignmentFlag(int(flags))
        if not align & Qt.AlignmentFlag.AlignAbsolute:
            direction = self.layoutDirection()
            if direction == Qt.LayoutDirection.LayoutDirectionAuto:
                direction = Qt.LayoutDirection.LeftToRight
            align = QStyle.visualAlignment(direction, align)
        width = self.fontMetrics().horizontalAdvance(text)
        if align & Qt.AlignmentFlag.AlignRight:
            self.texts.append((rect.right() + 1 - width, rect.right() + 1, text, rect.top()))
        else:
            self.texts.append((rect.left(), rect.left() + width, text, rect.top()))


def drawn_texts(controller: Any, direction: Qt.LayoutDirection) -> tuple[QImage, list[list[Drawn]]]:
    """Paint every row of the list 480 px wide in ``direction``: the first row's image, and
    per row each text's drawn extent."""
    view = controller.panel.view
    per_row: list[list[Drawn]] = []
    first = QImage()
    for row in range(view.model().rowCount()):
        option = QStyleOptionViewItem()
        view.initViewItemOption(option)
        option.direction = direction
        option.rect = QRect(0, 0, 480, view.sizeHintForRow(row))
        image = QImage(option.rect.size(), QImage.Format.Format_ARGB32)
        image.fill(QColor("#ffffff"))
        painter = RecordingPainter(image)
        painter.setLayoutDirection(direction)  # as the view's own painter has it
        view.itemDelegate().paint(painter, option, view.model().index(row, 0))
        painter.end()
        per_row.append(painter.texts)
        if row == 0:
            first = image
    return first, per_row


def texts_apart(per_row: list[list[Drawn]]) -> list[str]:
    """The texts of a row drawn over one another, touching, or past its edges (480 px)."""
    out = []
    for texts in per_row:
        drawn = sorted((top, left, right, words) for left, right, words, top in texts if words)
        for _top, left, right, words in drawn:
            if left < 0 or right > 480:
                out.append(f"{words!r} past the row's edge ({left}..{right})")
        for (t1, _l1, r1, w1), (t2, l2, _r2, w2) in itertools.pairwise(drawn):
            if t1 != t2 or not (w1.strip() and w2.strip()):
                continue
            if l2 < r1 - 1:
                out.append(f"{w1!r} and {w2!r} drawn over each other")
            elif l2 - r1 < 3 and not (w1.endswith(" ") or w2.startswith(" ")):
                out.append(f"{w1!r} and {w2!r} drawn with no space between")
    return out


def test_nothing_is_cut_left_to_right(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    # Found at 1× too: the list's header ("… · 3 don"), the filter's and the token's
    # placeholders, cut by Qt at the box's edge.
    check(scene(controller, world, link, qtbot), qtbot, "ltr")


def test_nothing_is_cut_or_over_another_right_to_left(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, rtl: None
) -> None:
    windows = scene(controller, world, link, qtbot)
    assert controller.panel.isRightToLeft()
    check(windows, qtbot, "rtl")


def test_the_rows_are_mirrored_right_to_left(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, rtl: None
) -> None:
    # Found: the rows were laid out left to right with Qt flipping each text's alignment:
    # the state, its detail and the time drawn over one another at the right, the bar left.
    scene(controller, world, link, qtbot)
    image, per_row = drawn_texts(controller, Qt.LayoutDirection.RightToLeft)
    middle = image.height() // 2
    assert image.pixelColor(image.width() - 2, middle) != QColor("#ffffff"), "no bar on the right"
    assert image.pixelColor(1, middle) == QColor("#ffffff"), "the state bar stayed on the left"
    assert texts_apart(per_row) == []
    for texts in per_row:  # the time in state on the trailing (left) side, the name leading
        since = [t for t in texts if t[2].startswith("for ")]
        assert since, texts
        assert since[0][0] < 100, texts
        name = texts[len(since)]
        assert name[1] > 400, texts
    _image, ltr = drawn_texts(controller, Qt.LayoutDirection.LeftToRight)
    assert texts_apart(ltr) == []


def test_the_compact_rows_are_mirrored_right_to_left(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, rtl: None
) -> None:
    scene(controller, world, link, qtbot)
    controller.panel.set_compact(True)
    _image, per_row = drawn_texts(controller, Qt.LayoutDirection.RightToLeft)
    assert texts_apart(per_row) == []
    for texts in per_row:
        mark = texts[0]  # the state's mark, drawn first: on the leading side
        assert mark[1] > 480 - 30, texts
    # Grouped by project: each group's header starts on the leading side too.
    controller.panel.set_grouping(Grouping.PROJECT)
    _image, per_row = drawn_texts(controller, Qt.LayoutDirection.RightToLeft)
    assert texts_apart(per_row) == []
    headers = [texts[0] for texts in per_row if texts and texts[0][2].startswith("▾ ")]
    assert headers, per_row
    assert all(right > 480 - 10 for _left, right, _words, _top in headers), headers


@pytest.mark.skipif(bool(os.environ.get(AT_4K)), reason="the child run itself")
def test_nothing_is_cut_on_a_4k_screen_at_one_and_a_half(tmp_path: Path) -> None:
    config = tmp_path / "screens.json"
    screen = {"name": "4K", "x": 0, "y": 0, "width": 3840, "height": 2160, "logicalDpi": 96}
    config.write_text(json.dumps({"screens": [screen]}))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(
        {
            AT_4K: "1",
            "QT_QPA_PLATFORM": f"offscreen:configfile={config}",
            "QT_SCALE_FACTOR": "1.5",
        }
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            f"{Path(__file__).relative_to(ROOT)}",
            "-k",
            "not a_4k_screen",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "5 passed" in run.stdout, run.stdout[-2000:]
    assert "skipped" not in run.stdout, run.stdout[-2000:]


def test_the_child_run_is_at_4k_and_one_and_a_half(qapp: Any) -> None:
    screen = QApplication.primaryScreen()
    if os.environ.get(AT_4K):
        assert screen.devicePixelRatio() == 1.5
        assert (screen.geometry().width(), screen.geometry().height()) == (2560, 1440)

"""The list for many agents: grouping, folds, compact rows, filters that never hide what
needs you, the header's counts, keyboard jumps, remembered size and modes, row texts."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import QLabel, QPushButton

from tests.fakes.app_link import World
from volee_desktop.app.action_bar import ACTIONS
from volee_desktop.app.agent_model import IdRole
from volee_desktop.app.choices import PERMISSION as ANSWERS
from volee_desktop.app.list_prefs import ListPrefs
from volee_desktop.app.list_rows import Grouping
from volee_desktop.app.panel import JUMPS
from volee_desktop.app.shortcuts import keys
from volee_desktop.app.texts import activity_line, markers, state_and_detail, summary_links
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState


def rows_text(panel: Any) -> list[str]:
    """The list top to bottom: '# header' for group rows, the agent's name for agents."""
    panel.rows.flush()
    out = []
    for r in range(panel.rows.rowCount()):
        header = panel.rows.header(r)
        out.append(f"# {header.text()}" if header else panel.rows.agent_at(r).name)
    return out


def four_projects(world: World) -> dict[str, str]:
    ids = {}
    ids["api-asks"] = world.agent("api-asks", AgentState.WORKING, cwd="/src/api")
    ids["api-1"] = world.agent("api-1", AgentState.WORKING, cwd="/src/api")
    ids["web-1"] = world.agent("web-1", AgentState.IDLE, cwd="/src/web")
    ids["web-broke"] = world.agent("web-broke", AgentState.FAILED, "crash loop", cwd="/src/web")
    ids["docs-1"] = world.agent("docs-1", AgentState.DONE, cwd="/src/docs")
    ids["gone-1"] = world.agent("gone-1", AgentState.WORKING, cwd="/nowhere/gone-folder")
    world.ask(ids["api-asks"])
    return ids


def test_group_by_state_keeps_urgency_order_within_groups(controller: Any, world: World) -> None:
    panel = controller.panel
    four_projects(world)
    panel.set_grouping(Grouping.STATE)
    assert rows_text(panel) == [
        "# needs you (1)",
        "api-asks",
        "# failed (1)",
        "web-broke",
        "# working (2)",
        "gone-1",
        "api-1",
        "# done (1)",
        "docs-1",
        "# idle (1)",
        "web-1",
    ]


def test_group_by_project_with_counts_and_a_gone_folder(controller: Any, world: World) -> None:
    panel = controller.panel
    four_projects(world)
    panel.set_grouping(Grouping.PROJECT)
    assert rows_text(panel) == [
        "# api (2)",
        "api-asks",
        "api-1",
        "# web (2)",
        "web-broke",
        "web-1",
        "# gone-folder (1)",  # a folder that is gone still shows, with its path
        "gone-1",
        "# docs (1)",
        "docs-1",
    ]
    gone = next(g for g in panel.rows.groups() if g.title == "gone-folder")
    assert gone.path == "/nowhere/gone-folder"


def test_groups_fold_but_never_fold_away_what_needs_you(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    four_projects(world)
    panel.set_grouping(Grouping.PROJECT)
    web = panel.rows.group_row("folder:/src/web")
    api = panel.rows.group_row("folder:/src/api")
    panel.toggle_fold("folder:/src/web")
    panel.toggle_fold("folder:/src/api")
    assert rows_text(panel)[:5] == [
        "# api (2, 1 folded)",
        "api-asks",
        "# web (2, 1 folded)",
        "web-broke",
        "# gone-folder (1)",
    ]
    assert web is not None
    assert api is not None
    # A click on a header unfolds it.
    panel.show()
    qtbot.waitExposed(panel)
    row = panel.rows.group_row("folder:/src/api")
    rect = panel.view.visualRect(panel.rows.index(row, 0))
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert rows_text(panel)[:3] == ["# api (2)", "api-asks", "api-1"]


def test_a_new_agent_joins_its_group_live(controller: Any, world: World, qtbot: Any) -> None:
    panel = controller.panel
    ids = four_projects(world)
    panel.set_grouping(Grouping.STATE)
    world.state(ids["web-1"], AgentState.FAILED, "API error")
    qtbot.waitUntil(lambda: "# failed (2)" in rows_text(panel), timeout=3000)
    assert rows_text(panel)[2:5] == ["# failed (2)", "web-1", "web-broke"]


def test_compact_rows_show_25_agents_in_the_default_window(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    for i in range(60):
        world.agent(f"bulk-{i:02d}", AgentState.WORKING)
    panel.show()
    qtbot.waitExposed(panel)
    full = panel.view.sizeHintForRow(0)
    panel.set_compact(True)
    assert panel.compact.isChecked()
    compact = panel.view.sizeHintForRow(0)
    assert compact < full / 2
    qtbot.waitUntil(lambda: panel.view.height() > 100, timeout=3000)  # laid out
    assert panel.view.viewport().height() // compact >= 25


def test_modes_size_and_position_are_remembered(
    qtbot: Any, volee_home: Path, controller: Any
) -> None:
    from volee_desktop.app.agent_model import AgentListModel
    from volee_desktop.app.panel import AgentPanel

    path = volee_home / "list.json"
    panel = AgentPanel(AgentListModel(), popup=False, prefs_path=path)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_compact(True)
    panel.set_grouping(Grouping.PROJECT)
    panel.resize(700, 800)
    panel.hide()
    saved = json.loads(path.read_text())
    assert saved["compact"] is True
    assert saved["grouping"] == "project"
    assert saved["size"] == [700, 800]
    again = AgentPanel(AgentListModel(), popup=False, prefs_path=path)
    qtbot.addWidget(again)
    assert again.delegate.compact
    assert again.rows.grouping is Grouping.PROJECT
    assert (again.width(), again.height()) == (700, 800)


def test_prefs_that_are_not_volees_give_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    for text in ("{", "[]", '{"size": [1, "x"], "grouping": "weird", "compact": 3}'):
        path.write_text(text)
        assert ListPrefs.load(path) == ListPrefs()


def test_a_filter_never_hides_what_needs_you(controller: Any, world: World, qtbot: Any) -> None:
    panel = controller.panel
    four_projects(world)
    panel.show()
    qtbot.waitExposed(panel)
    panel.filter.setText("docs")
    assert rows_text(panel) == [
        "docs-1",
        "# and 1 that needs you and 1 failed, filtered out",
        "api-asks",
        "web-broke",
    ]
    assert panel.filter_note.isVisible()
    assert "matching “docs”" in panel.filter_label.text()
    assert "2 that need you or failed shown beneath" in panel.filter_label.text()
    # Closing the list clears the filter.
    panel.hide()
    assert panel.filter.text() == ""
    panel.show()
    assert not panel.filter_note.isVisible()
    assert len(panel.visible_ids()) == 6


def test_header_counts_filter_to_their_state(controller: Any, world: World, qtbot: Any) -> None:
    panel = controller.panel
    four_projects(world)
    panel.show()
    qtbot.waitExposed(panel)
    header = panel.header.text()
    assert '<a href="state:working">2&nbsp;working</a>' in header
    assert '<a href="state:needs-input">1&nbsp;needs&nbsp;you</a>' in header
    panel.header.linkActivated.emit("state:working")
    assert rows_text(panel) == [
        "gone-1",
        "api-1",
        "# and 1 that needs you and 1 failed, filtered out",
        "api-asks",
        "web-broke",
    ]
    assert "only working agents (2 of 6)" in panel.filter_label.text()
    assert "<b>2&nbsp;working</b>" in panel.header.text()
    # Clicking it again, or Escape, shows everyone.
    panel.header.linkActivated.emit("state:working")
    assert len(panel.visible_ids()) == 6
    panel.header.linkActivated.emit("state:failed")
    assert rows_text(panel) == [
        "web-broke",
        "# and 1 that needs you, filtered out",
        "api-asks",
    ]
    panel.view.setFocus()
    qtbot.keyClick(panel.view, Qt.Key.Key_Escape)
    assert panel.state_filter is None
    assert len(panel.visible_ids()) == 6
    assert panel.isVisible()  # the first Escape clears the filter, the next hides


def test_opening_selects_the_most_urgent_agent_in_every_mode(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    for i in range(40):
        world.agent(f"bulk-{i:02d}", AgentState.WORKING, cwd=f"/src/p{i % 4}")
    asks = world.agent("late-asker", AgentState.WORKING, cwd="/src/p3")
    world.ask(asks)
    for grouping in Grouping:
        for compact in (False, True):
            panel.set_grouping(grouping)
            panel.set_compact(compact)
            panel.show()
            qtbot.waitExposed(panel)
            assert panel.current_id() == asks, (grouping, compact)

            def seen() -> bool:
                rect = panel.view.visualRect(panel.view.currentIndex())
                viewport = panel.view.viewport().rect()
                return viewport.height() > 100 and viewport.contains(rect.center())

            qtbot.waitUntil(seen, timeout=3000)
            panel.view.setCurrentIndex(panel.rows.index(panel.rows.rowCount() - 1, 0))
            panel.hide()


def test_keys_go_to_the_next_agent_that_needs_you_and_the_next_failed(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    a = world.agent("asks-a", AgentState.WORKING)
    world.agent("busy", AgentState.WORKING)
    b = world.agent("asks-b", AgentState.WORKING)
    f = world.agent("broke", AgentState.FAILED, "boom")
    world.ask(a)
    world.ask(b)
    with qtbot.waitActive(panel):
        panel.show()
        panel.activateWindow()
    panel.view.setFocus()
    first = panel.current_id()
    assert first in (a, b)
    qtbot.keyClick(panel.view, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    second = panel.current_id()
    assert {first, second} == {a, b}
    qtbot.keyClick(panel.view, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert panel.current_id() == first  # it wraps
    shift_ctrl = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    qtbot.keyClick(panel.view, Qt.Key.Key_F, shift_ctrl)
    assert panel.current_id() == f
    # Ctrl+K: compact; Ctrl+G: the next grouping; Left folds, Right unfolds.
    qtbot.keyClick(panel.view, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert panel.delegate.compact
    qtbot.keyClick(panel.view, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    assert panel.rows.grouping is Grouping.STATE
    panel.select(f)
    qtbot.keyClick(panel.view, Qt.Key.Key_Left)
    assert "state:failed" in panel.rows.folded
    qtbot.keyClick(panel.view, Qt.Key.Key_Right)
    assert "state:failed" not in panel.rows.folded
    # Down skips the group headers.
    panel.select(a if first == a else b)
    names = []
    for _ in range(4):
        qtbot.keyClick(panel.view, Qt.Key.Key_Down)
        names.append(panel.current_agent().name)
    assert names[-1] == "busy"
    assert all(n for n in names)


def test_every_row_action_says_its_shortcut(controller: Any) -> None:
    panel = controller.panel
    for name, _text, shortcut in (*ACTIONS, *ANSWERS):
        button = panel.findChild(QPushButton, f"action-{name}") or panel.findChild(
            QPushButton, f"answer-{name}"
        )
        assert button is not None, name
        assert f"({keys(shortcut)})" in button.toolTip(), name
    for state, shortcut, _words in JUMPS:
        assert panel.qactions[f"next-{state.value}"].shortcut().toString() == shortcut
    assert f"({keys('Ctrl+K')})" in panel.compact.toolTip()
    assert keys("Ctrl+G") in panel.grouping.toolTip()


def test_row_texts_say_each_thing_once_and_keep_the_end() -> None:
    from volee_desktop.core.model import Agent, Harness

    stopped = Agent(
        id="ag_1",
        name="x",
        harness=Harness.CLAUDE,
        state=AgentState.STOPPED,
        detail="stopped by you",
        held="stopped by you",
    )
    assert markers(stopped) == ["held"]
    assert state_and_detail(stopped) == ("stopped", "by you")
    other = Agent(id="ag_2", name="y", harness=Harness.CLAUDE, held="mission ended")
    assert markers(other) == ["held: mission ended"]
    asks = Agent(
        id="ag_3",
        name="z",
        harness=Harness.CLAUDE,
        state=AgentState.NEEDS_INPUT,
        detail="Bash: touch x.txt",
        activity="Bash: touch x.txt",
        activity_at=100.0,
        cwd="/src/api",
    )
    assert activity_line(asks, 160.0) == "/src/api"  # not the request's words again
    working = replace(asks, state=AgentState.WORKING, detail="")
    assert activity_line(working, 160.0) == "Bash: touch x.txt (1 min ago)"


def test_long_details_elide_in_the_middle(controller: Any, world: World, qtbot: Any) -> None:
    from PySide6.QtGui import QFontMetrics

    panel = controller.panel
    detail = "crashed 3 times in a row (restart budget spent) " + "x" * 200 + " (reply to continue)"
    world.agent("crash", AgentState.FAILED, detail)
    panel.show()
    qtbot.waitExposed(panel)
    fm = QFontMetrics(panel.view.font())
    shown = fm.elidedText(" · " + detail, Qt.TextElideMode.ElideMiddle, 300)
    assert shown.endswith("(reply to continue)")
    image = panel.view.grab()  # painting a long detail does not fail
    assert not image.isNull()


def test_summary_links_leave_other_words_alone() -> None:
    text = "1 mission to approve · 2 need you · 1 interrupted · notifications paused"
    out = summary_links(text)
    assert '<a href="state:needs-input">2&nbsp;need&nbsp;you</a>' in out
    assert "1&nbsp;mission to approve" in out
    assert "href" not in out.split("·")[0]


def test_a_wrapped_header_never_breaks_a_count_from_its_word(qtbot: Any) -> None:
    # Issue 28's 1.5x run: the header wrapped as "… · 3" / "done" once it had room for "3".
    text = "1 mission to approve · 2 need you · 40 working · 3 done · 12 idle"
    label = QLabel(summary_links(text))
    label.setWordWrap(True)
    qtbot.addWidget(label)
    document = QTextDocument()
    document.setDefaultFont(label.font())
    document.setHtml(label.text())
    # Every width from the widest count (narrower, Qt must break inside a word).
    widest = QFontMetrics(label.font()).horizontalAdvance("2 need you · ") + 8
    for width in range(widest, 600, 5):
        document.setTextWidth(width)
        document.size()  # lays it out
        layout = document.firstBlock().layout()
        block = document.firstBlock().text()
        lines = [layout.lineAt(i) for i in range(layout.lineCount())]
        for line in lines:
            shown = block[line.textStart() : line.textStart() + line.textLength()].strip()
            assert not re.match(r"^(need|mission|working|done|idle|you)", shown), (width, shown)
            assert not re.search(r"\d$", shown), (width, shown)


def test_many_events_with_the_list_grouped_are_one_rebuild(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    ids = [world.agent(f"a{i:03d}", AgentState.WORKING, cwd=f"/src/p{i % 4}") for i in range(100)]
    panel.set_grouping(Grouping.PROJECT)
    panel.show()
    qtbot.waitExposed(panel)
    panel.rows.flush()
    rebuilt: list[int] = []
    panel.rows.rebuilt.connect(lambda: rebuilt.append(1))
    for i, agent in enumerate(ids):
        world.link.push(ev.ActivityRecorded(at=world.tick(), agent=agent, activity=f"Bash: {i}"))
        world.state(agent, AgentState.IDLE if i % 2 else AgentState.DONE)
    qtbot.waitUntil(lambda: bool(rebuilt), timeout=3000)
    qtbot.wait(50)
    assert len(rebuilt) == 1
    assert sorted(panel.rows.agent_ids()) == sorted(ids)


def test_context_share_and_cost_show_and_near_the_limit_is_marked(
    controller: Any, world: World, qtbot: Any
) -> None:
    from volee_desktop.app.agent_model import AgentRole
    from volee_desktop.app.texts import near_limit

    panel = controller.panel
    a = world.agent("big", AgentState.WORKING)
    world.link.push(ev.ContextUsed(at=world.tick(), agent=a, share=0.9, cost_usd=1.5))
    panel.show()
    qtbot.waitExposed(panel)
    panel.rows.flush()
    index = panel.rows.index(panel.rows.row_of(a), 0)
    tip = index.data(Qt.ItemDataRole.ToolTipRole)
    assert "context 90 % · $1.50" in tip
    assert "working for " in tip  # since when it is in its state
    assert "(since " in tip
    assert "context 90 %" in index.data(Qt.ItemDataRole.AccessibleTextRole)
    agent = index.data(AgentRole)
    assert near_limit(agent, panel.delegate.context_limit)
    assert panel.delegate.context_limit == 0.85
    assert not near_limit(agent, 0.95)
    for compact in (False, True):
        panel.set_compact(compact)
        assert not panel.view.grab().isNull()


def test_events_do_not_scroll_the_list_back_to_the_selected_agent(
    controller: Any, world: World, qtbot: Any
) -> None:
    panel = controller.panel
    ids = [world.agent(f"a{i:03d}", AgentState.WORKING, cwd=f"/src/p{i % 4}") for i in range(120)]
    for grouping in (Grouping.NONE, Grouping.PROJECT):
        panel.set_grouping(grouping)
        panel.show()
        qtbot.waitExposed(panel)
        bar = panel.view.verticalScrollBar()
        qtbot.waitUntil(lambda b=bar: b.maximum() > 0, timeout=3000)
        selected = panel.current_id()
        bar.setValue(bar.maximum() // 2)  # the person scrolls away from the selection
        top = panel.view.indexAt(QPoint(1, 1))
        looked_at, y = top.data(IdRole), panel.view.visualRect(top).top()
        for i, agent in enumerate(ids[::7]):
            if agent != looked_at:
                world.state(agent, AgentState.IDLE if i % 2 else AgentState.DONE)  # rows move
        assert panel.rows.flush()  # rebuilt now (as its timer would)
        top = panel.view.indexAt(QPoint(1, 1))
        assert (top.data(IdRole), panel.view.visualRect(top).top()) == (looked_at, y), grouping
        assert panel.current_id() == selected
        panel.hide()


def test_typing_a_filter_selects_its_first_match_not_one_shown_beneath(
    controller: Any, world: World, qtbot: Any
) -> None:
    # The trial of issue 26 (docs/trials/issue-26.md): with "deploy-check" (needs you)
    # selected, typing "rm-build" left the selection on deploy-check, shown beneath the
    # match, and Down, Return opened deploy-check's window instead of rm-build's.
    panel = controller.panel
    four_projects(world)
    panel.show()
    qtbot.waitExposed(panel)
    assert controller.live.registry.agents[panel.current_id()].name == "api-asks"
    panel.filter.setText("docs")
    assert controller.live.registry.agents[panel.current_id()].name == "docs-1"


def test_down_from_the_filter_box_goes_to_the_first_row_in_view_not_one_past_it(
    controller: Any, world: World, qtbot: Any
) -> None:
    # The trial of issue 26: Down from the filter box moved one row past the selected one,
    # while Up from the first row goes to the box.
    panel = controller.panel
    four_projects(world)
    panel.show()
    qtbot.waitExposed(panel)
    panel.filter.setFocus()
    qtbot.keyClicks(panel.filter, "1")  # api-1, web-1, docs-1, gone-1
    first = panel.current_id()
    assert first == panel.visible_ids()[0]
    qtbot.keyClick(panel.filter, Qt.Key.Key_Down)
    assert panel.current_id() == first
    assert panel.focusWidget() is panel.view
    qtbot.keyClick(panel.view, Qt.Key.Key_Down)
    second = panel.current_id()
    assert second == panel.visible_ids()[1]
    qtbot.keyClick(panel.view, Qt.Key.Key_Up)
    qtbot.keyClick(panel.view, Qt.Key.Key_Up)  # from the first row: back to the box
    assert panel.focusWidget() is panel.filter
    qtbot.keyClick(panel.filter, Qt.Key.Key_Down)  # and back to that row
    assert panel.current_id() == first


def test_the_request_bar_cuts_a_long_request_at_its_end_with_an_ellipsis(
    controller: Any, world: World, qtbot: Any
) -> None:
    # The trial of issue 26: "deploy-check asks: Bash: python3 -c 'print(1)' && touch
    # deploy-check" ended where the Allow button began, cut with no sign of it.
    a = world.agent("deploy-check", AgentState.WORKING)
    command = "python3 -c 'print(1)' && touch " + "deploy-checked-with-a-long-file-name" * 3
    world.ask(a, "Bash", {"command": command})
    panel = controller.panel
    panel.show()
    qtbot.waitExposed(panel)
    label = panel.request_label
    assert command in label.text()  # the whole text stays the label's (and its tooltip's)
    painted = label.painted_text()
    assert painted.endswith("…")
    assert label.fontMetrics().horizontalAdvance(painted) <= label.contentsRect().width()

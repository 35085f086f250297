"""The agent list: urgency order, live updates row by row, filter, keyboard, 500 agents."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.app_link import World
from volee_desktop.app.agent_model import AgentListModel
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState


def names(ctl: Any) -> list[str]:
    return [ctl.model.agent_at(r).name for r in range(ctl.model.rowCount())]


def visible_names(ctl: Any) -> list[str]:
    return [ctl.model.agent(i).name for i in ctl.panel.visible_ids()]


def test_snapshot_rows_are_most_urgent_first(controller: Any, world: World, link: Any) -> None:
    ctl = controller
    world.agent("idle-one", AgentState.IDLE)
    world.agent("worker", AgentState.WORKING)
    world.agent("asks", AgentState.NEEDS_INPUT, "permission for Bash")
    world.agent("broke", AgentState.FAILED, "API error")
    world.agent("gone", AgentState.LOST)
    world.agent("finished", AgentState.DONE)
    expected = [a.name for a in link.registry.by_urgency()]
    assert expected == ["asks", "broke", "worker", "finished", "idle-one", "gone"]
    assert names(ctl) == expected


def test_events_move_rows_by_id_without_resetting_the_model(
    controller: Any, world: World, qtbot: Any
) -> None:
    ctl = controller
    a = world.agent("alpha", AgentState.WORKING)
    b = world.agent("beta", AgentState.WORKING)
    c = world.agent("gamma", AgentState.IDLE)
    assert names(ctl) == ["beta", "alpha", "gamma"]  # most recent change first within a state
    resets: list[int] = []
    moves: list[tuple[int, int]] = []
    changed: list[int] = []
    ctl.model.modelReset.connect(lambda: resets.append(1))
    ctl.model.rowsMoved.connect(lambda _p, s, _e, _d, dest: moves.append((s, dest)))
    ctl.model.dataChanged.connect(lambda tl, _br, _r=None: changed.append(tl.row()))

    world.state(c, AgentState.NEEDS_INPUT, "permission for Bash")
    assert names(ctl) == ["gamma", "beta", "alpha"]
    world.state(a, AgentState.WORKING, "Bash: pytest")  # same state: repaint in place
    assert names(ctl) == ["gamma", "beta", "alpha"]
    assert ctl.model.agent(a).detail == "Bash: pytest"
    world.state(c, AgentState.WORKING)
    world.state(b, AgentState.DONE)
    assert names(ctl) == ["gamma", "alpha", "beta"]
    world.link.push(ev.AgentForgotten(at=world.tick(), agent=a))
    assert names(ctl) == ["gamma", "beta"]
    d = world.agent("delta", AgentState.FAILED, "boom")
    assert names(ctl) == ["delta", "gamma", "beta"]
    assert ctl.model.row_of(d) == 0
    assert resets == []
    assert moves
    assert changed
    # The model's rows always match the daemon's own order.
    assert names(ctl) == [x.name for x in world.link.registry.by_urgency()]


def test_model_matches_registry_order_after_many_random_events(qapp: Any) -> None:
    import random

    from tests.fakes.app_link import FakeDaemonLink
    from volee_desktop.app.live import LiveRegistry

    link = FakeDaemonLink()
    world = World(link)
    live = LiveRegistry()
    model = AgentListModel()
    live.observe(model)
    link.listener = live
    rng = random.Random(7)
    ids = [world.agent(f"a{i}", rng.choice(list(AgentState))) for i in range(40)]
    for _ in range(600):
        agent = rng.choice(ids)
        if agent not in link.registry.agents:
            continue
        roll = rng.random()
        if roll < 0.02:
            link.push(ev.AgentForgotten(at=world.tick(), agent=agent))
        elif roll < 0.9:
            world.state(agent, rng.choice(list(AgentState)), f"d{rng.randrange(5)}")
        else:
            world.activity(agent, "Bash: ls")
        assert model.ids() == [a.id for a in link.registry.by_urgency()]


def test_filter_matches_name_state_detail_and_folder(
    controller: Any, world: World, qtbot: Any
) -> None:
    ctl = controller
    world.agent("api-fixer", AgentState.NEEDS_INPUT, "permission for Bash", cwd="/src/api")
    world.agent("docs-writer", AgentState.WORKING, "Edit: README.md", cwd="/src/docs")
    world.agent("tests", AgentState.IDLE, cwd="/src/api")
    qtbot.keyClicks(ctl.panel.filter, "bash")
    assert visible_names(ctl) == ["api-fixer"]
    ctl.panel.filter.clear()
    qtbot.keyClicks(ctl.panel.filter, "/src/api")
    assert visible_names(ctl) == ["api-fixer", "tests"]
    ctl.panel.filter.setText("idle api")
    assert visible_names(ctl) == ["tests"]
    ctl.panel.filter.setText("needs")
    assert visible_names(ctl) == ["api-fixer"]
    ctl.panel.filter.setText("nothing-like-this")
    assert visible_names(ctl) == []
    ctl.panel.filter.clear()
    assert len(visible_names(ctl)) == 3


def test_filtered_rows_stay_live(controller: Any, world: World) -> None:
    ctl = controller
    a = world.agent("api-fixer", AgentState.WORKING)
    world.agent("docs", AgentState.WORKING)
    ctl.panel.filter.setText("needs")
    assert visible_names(ctl) == []
    world.state(a, AgentState.NEEDS_INPUT, "permission for Bash")
    assert visible_names(ctl) == ["api-fixer"]


def test_keyboard_navigation_and_enter_opens(
    controller: Any, world: World, qtbot: Any, link: Any
) -> None:
    ctl = controller
    world.agent("third", AgentState.IDLE)
    second = world.agent("second", AgentState.WORKING)
    world.agent("first", AgentState.NEEDS_INPUT, "permission for Bash")
    panel = ctl.panel
    panel.show()
    qtbot.waitExposed(panel)
    panel.filter.setFocus()
    assert panel.current_agent().name == "first"
    qtbot.keyClick(panel.filter, Qt.Key.Key_Down)  # into the rows, on the first one
    assert panel.current_agent().name == "first"
    assert panel.focusWidget() is panel.view
    qtbot.keyClick(panel.view, Qt.Key.Key_Down)
    assert panel.current_agent().name == "second"
    qtbot.keyClick(panel.view, Qt.Key.Key_Down)
    assert panel.current_agent().name == "third"
    qtbot.keyClick(panel.view, Qt.Key.Key_Up)
    assert panel.current_agent().name == "second"
    with qtbot.waitSignal(ctl.opened, timeout=3000) as opened:
        qtbot.keyClick(panel.view, Qt.Key.Key_Return)
    assert opened.args == [second, "output"]
    # Typing in the list goes on in the filter box.
    panel.view.setFocus()
    qtbot.keyClicks(panel.view, "thi")
    assert panel.filter.text() == "thi"
    assert visible_names(ctl) == ["third"]
    qtbot.keyClick(panel.filter, Qt.Key.Key_Escape)
    assert panel.filter.text() == ""


def test_shortcuts_reach_the_daemon(controller: Any, world: World, qtbot: Any, link: Any) -> None:
    ctl = controller
    a = world.agent("worker", AgentState.WORKING)
    panel = ctl.panel
    with qtbot.waitActive(panel):
        panel.show()
        panel.activateWindow()
    panel.view.setFocus()
    assert panel.current_id() == a
    with qtbot.waitSignal(ctl.called, timeout=3000):
        qtbot.keyClick(panel.view, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert link.last("agents.stop").params == {"agent": a}


def test_five_hundred_agents_update_row_by_row(controller: Any, world: World) -> None:
    # Row by row, counted (not timed: the machine is shared): no reset of the model, and each
    # event touches the rows it changes, never the whole list.
    ctl = controller
    ids = [world.agent(f"agent-{i:03d}", AgentState.WORKING) for i in range(500)]
    assert ctl.model.rowCount() == 500
    resets: list[int] = []
    ctl.model.modelReset.connect(lambda: resets.append(1))
    touched: list[int] = []
    ctl.model.dataChanged.connect(
        lambda first, last, *_: touched.append(last.row() - first.row() + 1)
    )
    moved: list[int] = []
    ctl.model.rowsMoved.connect(lambda _p, first, last, *_: moved.append(last - first + 1))
    for i, agent in enumerate(ids[:200]):
        world.state(agent, AgentState.NEEDS_INPUT if i % 2 else AgentState.IDLE, "x")
    assert resets == []
    assert ctl.model.ids() == [a.id for a in world.link.registry.by_urgency()]
    # 200 events: a handful of single rows each, never a range over the list.
    assert touched
    assert max(touched) == 1
    assert len(touched) <= 4 * 200
    assert all(n == 1 for n in moved)

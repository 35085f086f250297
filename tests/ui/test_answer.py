"""Answering an agent from where you are: the request shown, Allow / Deny in the notification,
the list and the tray menu, questions answered by option, notifications that stay true."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.attention import answer_call, choice_label
from volee_desktop.app.notify_policy import Kind
from volee_desktop.core.states import AgentState

BASH = {"command": "rm -rf build/ && pytest -q", "description": "clean and test"}
QUESTION = {
    "questions": [
        {
            "question": "Which database?",
            "header": "DB",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}],
            "multiSelect": False,
        }
    ]
}


def asking(world: World, name: str = "api-fixer", **kw: Any) -> str:
    a = world.agent(name, AgentState.WORKING, cwd="/home/me/src/shop-api")
    world.ask(a, "Bash", BASH, **kw)
    return a


# --- the calls (pure) ---------------------------------------------------------------------------


def test_answer_calls_name_the_request() -> None:
    assert answer_call("ag_1", "rq_1", "allow") == (
        "agents.allow",
        {"agent": "ag_1", "request": "rq_1", "always": False},
    )
    assert answer_call("ag_1", "rq_1", "allow-always")[1]["always"] is True
    assert answer_call("ag_1", "rq_1", "deny", "use make clean") == (
        "agents.deny",
        {"agent": "ag_1", "request": "rq_1", "reason": "use make clean"},
    )
    assert answer_call("ag_1", "rq_1", "option:2") == (
        "agents.answer",
        {"agent": "ag_1", "request": "rq_1", "option": 2},
    )
    assert answer_call("ag_1", "rq_1", "reply", "MySQL")[1]["text"] == "MySQL"
    with pytest.raises(ValueError, match="not an answer"):
        answer_call("ag_1", "rq_1", "reply")
    assert choice_label("option:2", ("Postgres", "SQLite")) == "SQLite"
    assert choice_label("deny") == "denied"


# --- the notification ---------------------------------------------------------------------------


def test_the_notification_names_the_command_and_project_and_allow_answers_that_request(
    controller: Any, world: World, sink: Any, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = asking(world)
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    notice = sink.notices[0]
    assert notice.title == "api-fixer asks to use Bash"
    first, second = notice.body.splitlines()
    assert first == "Bash: rm -rf build/ && pytest -q"
    assert second.startswith("in shop-api · waiting since ")
    assert notice.choices == (("allow", "Allow"), ("deny", "Deny"))
    request = link.registry.agents[a].request
    assert request is not None
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        sink.activators[0]("allow")
    assert link.last("agents.allow").params == {"agent": a, "request": request.id, "always": False}
    assert controller.notifications.on_screen() == []  # chosen: taken off the screen


def test_an_answer_to_a_request_that_moved_on_is_refused_and_nothing_is_sent(
    controller: Any, world: World, sink: Any, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    a = asking(world)
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    activate = sink.activators[0]
    world.answered(a)  # answered in the agent's own terminal: it works again
    assert controller.notifications.on_screen() == []  # withdrawn
    activate("allow")
    assert "agents.allow" not in link.methods()
    assert recorder.errors[-1][0] == "Not answered"
    assert "asks nothing now" in recorder.errors[-1][1]
    # It asks again (another command): the old card's Allow must not reach the new dialog.
    world.ask(a, "Bash", {"command": "git push --force"})
    activate("allow")
    assert "agents.allow" not in link.methods()
    assert "now asks something else: Bash: git push --force" in recorder.errors[-1][1]


def test_a_question_offers_its_options_and_a_reply(
    controller: Any, world: World, sink: Any, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = world.agent("schema", AgentState.WORKING)
    world.ask(a, "AskUserQuestion", QUESTION)
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    notice = sink.notices[0]
    assert notice.title == "schema asks a question"
    assert notice.body.splitlines()[0] == "Which database? (Postgres / SQLite)"
    assert notice.choices == (("option:1", "Postgres"), ("option:2", "SQLite"))
    assert notice.reply
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.answer"):
        sink.activators[0]("reply", "MySQL, please")
    assert link.last("agents.answer").params["text"] == "MySQL, please"


def test_a_burst_of_four_is_one_summary_naming_each_request(
    controller: Any, world: World, sink: Any, qtbot: Any
) -> None:
    ids = [world.agent(f"agent-{i}", AgentState.WORKING) for i in range(4)]
    for n, agent in enumerate(ids):
        world.ask(agent, "Bash", {"command": f"make step-{n}"})
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    summary = sink.notices[0]
    assert summary.title == "4 agents need you"
    assert summary.body.splitlines()[0] == "agent-0: Bash: make step-0"
    # It stays while any of them waits, and goes when the last is answered.
    for agent in ids[:3]:
        world.answered(agent)
    assert len(controller.notifications.on_screen()) == 1
    world.answered(ids[3])
    assert controller.notifications.on_screen() == []


def test_opening_the_agent_from_the_list_withdraws_its_notification(
    controller: Any, world: World, sink: Any, qtbot: Any
) -> None:
    a = asking(world)
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    assert [n.agent for n in controller.notifications.on_screen()] == [a]
    controller.actions.run("open", a)
    assert controller.notifications.on_screen() == []


def test_forgetting_the_agent_withdraws_its_notification(
    controller: Any, world: World, sink: Any, qtbot: Any, link: FakeDaemonLink
) -> None:
    from volee_desktop.core import events as ev

    a = asking(world)
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    link.push(ev.AgentForgotten(at=world.tick(), agent=a))
    assert controller.notifications.on_screen() == []


# --- the list -----------------------------------------------------------------------------------


def test_the_row_and_its_tooltip_show_the_request(controller: Any, world: World) -> None:
    from volee_desktop.app.agent_model import AgentRole
    from volee_desktop.app.texts import detail_text

    asking(world)
    index = controller.model.index(0)
    agent = index.data(AgentRole)
    assert detail_text(agent) == "Bash: rm -rf build/ && pytest -q"
    tip = index.data(Qt.ItemDataRole.ToolTipRole)
    assert "needs you: Bash: rm -rf build/ && pytest -q" in tip
    assert "waiting " in tip
    assert "/home/me/src/shop-api" in tip
    controller.panel.filter.setText("pytest")  # the filter finds it by its request
    assert controller.panel.visible_ids() == [agent.id]


def test_allow_and_deny_on_the_selected_row_with_their_shortcuts(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = asking(world)
    panel = controller.panel
    with qtbot.waitActive(panel):
        panel.show()
        panel.activateWindow()
    panel.select(a)
    assert panel.request_bar.isVisible()
    assert panel.request_label.text() == "api-fixer asks: Bash: rm -rf build/ && pytest -q"
    allow = panel.answer_buttons["allow"]
    assert allow.isVisible()
    assert "Ctrl+Y" in allow.toolTip()
    assert "Ctrl+D" in panel.answer_buttons["deny"].toolTip()
    panel.view.setFocus()
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.deny"):
        qtbot.keyClick(panel.view, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert link.last("agents.deny").params["agent"] == a
    # A working agent asks nothing: no bar, and the shortcut does nothing.
    b = world.agent("busy", AgentState.WORKING)
    panel.select(b)
    assert not panel.request_bar.isVisible()
    count = len(link.calls)
    qtbot.keyClick(panel.view, Qt.Key.Key_Y, Qt.KeyboardModifier.ControlModifier)
    assert len(link.calls) == count


def test_a_question_in_the_list_shows_its_options(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = world.agent("schema", AgentState.WORKING)
    world.ask(a, "AskUserQuestion", QUESTION)
    panel = controller.panel
    panel.show()
    qtbot.waitExposed(panel)
    panel.select(a)
    assert not panel.answer_buttons["allow"].isVisible()
    option = panel.answer_buttons["option:2"]
    assert option.isVisible()
    assert option.text() == "SQLite"
    assert not panel.answer_buttons["option:3"].isVisible()
    menu = panel.build_menu()
    assert menu is not None
    assert [x.text() for x in menu.actions()][:2] == ["Postgres", "SQLite"]
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.answer"):
        option.click()
    assert link.last("agents.answer").params["option"] == 2


# --- the tray menu ------------------------------------------------------------------------------


def menu_texts(controller: Any) -> list[str]:
    # As shown: Qt shows "&&" as "&" (a lone "&" would mark a shortcut and vanish).
    return [x.text().replace("&&", "&") for x in controller.tray.visible_entries()]


def test_the_tray_menu_lists_who_needs_you_with_allow_two_clicks_away(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = asking(world)
    world.agent("busy", AgentState.WORKING)
    texts = menu_texts(controller)
    assert texts[:2] == ["1 agent needs you", "api-fixer — Bash: rm -rf build/ && pytest -q"]
    assert texts[2] == "Open agent list"
    sub = controller.tray.visible_entries()[1].menu()
    entries = [x.text().replace("&&", "&") for x in sub.actions() if not x.isSeparator()]
    assert entries == [
        "Bash: rm -rf build/ && pytest -q",
        "in shop-api",
        "Allow",
        "Deny",
        "Open",
    ]
    assert "build/ &&&& pytest" in sub.title()  # shows "&&": a lone "&" marks a shortcut
    allow = next(x for x in sub.actions() if x.text() == "Allow")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        allow.trigger()
    assert link.last("agents.allow").params["agent"] == a
    world.answered(a)
    assert menu_texts(controller)[0] == "Open agent list"  # nothing waits any more


def test_the_tray_menu_shows_ten_agents_at_most_most_urgent_first(
    controller: Any, world: World
) -> None:
    ids = [world.agent(f"a{i:02}", AgentState.WORKING) for i in range(12)]
    for agent in ids:
        world.ask(agent, "Bash", {"command": "ls"})
    texts = menu_texts(controller)
    assert texts[0] == "10 agents need you"
    names = [t.split(" — ")[0] for t in texts[1:11]]
    assert names == [f"a{i:02}" for i in range(11, 1, -1)]  # the list's order: newest first
    assert texts[11] == "Open agent list"


# --- missions -----------------------------------------------------------------------------------


def test_a_mission_to_approve_counts_in_the_badge_header_list_and_menu(
    controller: Any, world: World, qtbot: Any, sink: Any
) -> None:
    mission, _, _ = world.mission_awaiting("Fix the login redirect loop")
    controller.tray.apply_now()
    assert controller.tray.summary.needs == 1
    assert controller.tray.summary.missions == 1
    assert controller.panel.summary().startswith("1 mission to approve")
    panel = controller.panel
    assert not panel.missions.isHidden()
    label, button = (
        panel.mission_rows[mission][1],
        panel.findChild(type(panel.buttons["open"]), f"review-{mission}"),
    )
    assert "Fix the login redirect loop — 2 workers, waiting" in label.text()
    texts = menu_texts(controller)
    assert texts[0] == "1 mission to approve"
    assert texts[1].startswith("Fix the login redirect loop — 2 workers, waiting")
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    button.click()
    assert mission in controller.approvals
    assert controller.notifications.on_screen() == []  # Review taken: the card goes
    controller.approvals[mission].close()
    # From the tray menu too.
    review = controller.tray.visible_entries()[1]
    review.trigger()
    assert mission in controller.approvals


def test_a_mission_that_moves_on_leaves_the_tray_and_its_notification_goes(
    controller: Any, world: World, qtbot: Any, sink: Any, link: FakeDaemonLink
) -> None:
    from volee_desktop.core import events as ev
    from volee_desktop.core.model import MissionStatus

    mission, _, _ = world.mission_awaiting()
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    link.push(ev.MissionUpdated(at=world.tick(), mission=mission, status=MissionStatus.CLOSED))
    controller.tray.apply_now()
    assert controller.tray.summary.missions == 0
    assert controller.panel.missions.isHidden()
    assert controller.notifications.on_screen() == []
    assert not any(t.startswith("1 mission") for t in menu_texts(controller))


def test_done_notification_is_off_by_default_and_names_the_last_message(
    controller: Any, world: World, sink: Any, qtbot: Any
) -> None:
    from dataclasses import replace

    a = world.agent("docs", AgentState.WORKING)
    world.state(a, AgentState.DONE, "Done: the docs build cleanly")
    b = world.agent("marker", AgentState.WORKING)
    world.state(b, AgentState.FAILED, "boom")
    qtbot.waitUntil(lambda: len(sink.notices) >= 1, timeout=3000)
    assert [n.agent for n in sink.notices] == [b]
    controller.notifications.set_settings(replace(controller.notifications.settings, done=True))
    world.state(a, AgentState.WORKING)
    world.state(a, AgentState.DONE, "Done: the docs build cleanly")
    qtbot.waitUntil(lambda: len(sink.notices) == 2, timeout=3000)
    done = sink.notices[1]
    assert (done.kind, done.title, done.body) == (
        Kind.DONE,
        "docs is done in project",
        "Done: the docs build cleanly",
    )
    # Never for the person's own stop.
    world.state(a, AgentState.WORKING)
    world.stop_by_person(a)
    world.state(b, AgentState.WORKING)
    world.state(b, AgentState.FAILED, "boom again")
    qtbot.waitUntil(lambda: len(sink.notices) == 3, timeout=15000)
    assert sink.notices[2].agent == b


def test_done_notifications_follow_the_config_key(controller: Any, volee_home: Any) -> None:
    assert controller.notifications.settings.done is False
    path = controller.options.config_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[notifications]\ndone = true\n")
    controller.load_notify_settings()
    assert controller.notifications.settings.done is True


# --- the agent window ---------------------------------------------------------------------------


def test_the_agent_window_shows_the_request_and_answers_it(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = asking(world)
    controller.actions.show_output(a)
    window = controller.windows[a]
    assert not window.request_box.isHidden()
    assert window.request_label.text() == "api-fixer asks: Bash: rm -rf build/ && pytest -q"
    assert "reason" in window.reply.placeholderText()
    # Enter in the reply box never types into a permission dialog.
    window.reply.setText("use make clean instead")
    window.reply.returnPressed.emit()
    assert "agents.send" not in link.methods()
    assert "Allow or Deny first" in window.status.text()
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.deny"):
        window.answer_buttons["deny"].click()
    assert link.last("agents.deny").params["reason"] == "use make clean instead"
    world.answered(a, "deny")
    assert window.request_box.isHidden()


def test_the_agent_window_answers_a_question_by_option_or_in_words(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = world.agent("schema", AgentState.WORKING)
    world.ask(a, "AskUserQuestion", QUESTION)
    controller.actions.show_output(a)
    window = controller.windows[a]
    assert window.answer_buttons["allow"].isHidden()
    assert window.answer_buttons["option:1"].text() == "Postgres"
    window.reply.setText("MySQL 8")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.answer"):
        window.reply.returnPressed.emit()
    assert link.last("agents.answer").params["text"] == "MySQL 8"


def test_a_question_in_the_tray_menu_offers_its_options_and_reply(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = world.agent("schema", AgentState.WORKING)
    world.ask(a, "AskUserQuestion", QUESTION)
    sub = controller.tray.visible_entries()[1].menu()
    entries = [x.text() for x in sub.actions() if not x.isSeparator()]
    assert entries == [
        "Which database? (Postgres / SQLite)",
        "in project",
        "Postgres",
        "SQLite",
        "Reply…",
        "Open",
    ]
    sqlite = next(x for x in sub.actions() if x.text() == "SQLite")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.answer"):
        sqlite.trigger()
    assert link.last("agents.answer").params["option"] == 2
    reply = next(x for x in sub.actions() if x.text() == "Reply…")
    with qtbot.waitSignal(controller.opened) as opened:
        reply.trigger()
    assert opened.args == [a, "reply"]


def test_a_menu_entry_answers_only_the_request_it_showed(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    a = asking(world)
    sub = controller.tray.visible_entries()[1].menu()
    allow = next(x for x in sub.actions() if x.text() == "Allow")
    # The menu is open while the agent moves on and asks something else.
    controller.tray.menu.show()
    world.answered(a)
    world.ask(a, "Bash", {"command": "git push --force"})
    assert "rm -rf build" in sub.title()  # not rebuilt under the pointer
    allow.trigger()  # the entry the person had in front of them
    assert "agents.allow" not in link.methods()
    assert "now asks something else: Bash: git push --force" in recorder.errors[-1][1]
    controller.tray.menu.hide()
    qtbot.waitUntil(lambda: "git push" in sub.title(), timeout=3000)  # redone once closed


def test_the_lists_answer_names_the_request_its_bar_showed(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, recorder: Any
) -> None:
    a = asking(world)
    panel = controller.panel
    panel.select(a)
    shown = link.registry.agents[a].request
    assert shown is not None
    with qtbot.waitSignal(panel.answer) as answered:
        panel.trigger("allow")
    assert answered.args == ["allow", a, shown.id]
    qtbot.waitUntil(lambda: "agents.allow" in link.methods(), timeout=3000)
    assert link.last("agents.allow").params["request"] == shown.id

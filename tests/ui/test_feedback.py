"""Every action that changes something says what it did, or that it failed (issue 26);
About says the version, the daemon in words and where the docs are."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop import __version__
from volee_desktop.core.states import AgentState


def act(ctl: Any, qtbot: Any, name: str, agent_id: str, method: str) -> None:
    with qtbot.waitSignal(ctl.called, timeout=3000, check_params_cb=lambda m: m == method):
        ctl.panel.select(agent_id)
        ctl.panel.trigger(name)


def test_stop_resume_forget_say_what_they_did(controller: Any, world: World, qtbot: Any) -> None:
    a = world.agent("worker", AgentState.WORKING)
    act(controller, qtbot, "stop", a, "agents.stop")
    qtbot.waitUntil(lambda: controller.panel.status.text() == "Asked worker to stop.")
    assert not controller.panel.status.isHidden()
    world.stop_by_person(a)
    act(controller, qtbot, "resume", a, "agents.resume")
    qtbot.waitUntil(lambda: controller.panel.status.text() == "Resumed worker.")
    act(controller, qtbot, "forget", a, "agents.forget")
    qtbot.waitUntil(lambda: controller.panel.status.text() == "Forgot worker.")


def test_an_action_that_failed_says_so_and_notifies(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink, sink: Any, recorder: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING)
    link.errors["agents.stop"] = "its host does not answer"
    act(controller, qtbot, "stop", a, "agents.stop")
    qtbot.waitUntil(lambda: any(n.title == "worker was not stopped" for n in sink.notices))
    notice = next(n for n in sink.notices if n.title == "worker was not stopped")
    assert "its host does not answer" in notice.body
    assert "worker was not stopped" in controller.panel.status.text()
    assert recorder.errors  # and the error as before


def test_an_answer_and_an_approval_say_what_went_in(
    controller: Any, world: World, qtbot: Any
) -> None:
    a = world.agent("api-fixer", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "pytest -q"})
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        controller.panel.select(a)
        controller.panel.trigger("allow")
    qtbot.waitUntil(lambda: controller.panel.status.text() == "Allowed api-fixer: Bash: pytest -q.")
    mission, _workers, _coordinator = world.mission_awaiting("Fix the login bug")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        controller.answer({"mission": mission, "option": "Approve"})
    qtbot.waitUntil(
        lambda: (
            controller.panel.status.text() == "Answered the mission “Fix the login bug”: Approve."
        )
    )


def test_about_says_the_version_the_daemon_and_links_the_docs(
    controller: Any, world: World
) -> None:
    world.agent("worker", AgentState.WORKING)
    controller.daemon_where = "a separate process"
    dialog = controller.open_about()
    text = dialog.text.text()
    assert f"volee desktop {__version__}" in text
    assert "Connected to the daemon (a separate process): 1 agent, 1 running, 1 working." in text
    assert "docs/list.md" in text
    assert dialog.text.openExternalLinks()
    dialog.close()

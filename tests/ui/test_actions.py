"""Every action of the list reaches the daemon (the FakeDaemonLink records the call)."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.agent_window import AgentWindow
from volee_desktop.app.timeline import TimelineDialog
from volee_desktop.core import events as ev
from volee_desktop.core.model import Location
from volee_desktop.core.states import AgentState


def act(ctl: Any, qtbot: Any, name: str, agent_id: str, method: str) -> None:
    with qtbot.waitSignal(ctl.called, timeout=3000, check_params_cb=lambda m: m == method):
        ctl.panel.select(agent_id)
        ctl.panel.trigger(name)


def test_stop_resume_forget_reach_the_daemon(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, recorder: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING)
    act(controller, qtbot, "stop", a, "agents.stop")
    assert link.last("agents.stop").params == {"agent": a}
    world.stop_by_person(a)
    assert controller.panel.buttons["stop"].isEnabled() is False
    assert controller.panel.buttons["resume"].isEnabled() is True
    act(controller, qtbot, "resume", a, "agents.resume")
    assert link.last("agents.resume").params == {"agent": a}
    act(controller, qtbot, "forget", a, "agents.forget")
    assert link.last("agents.forget").params == {"agent": a}
    assert recorder.confirms[0][0] == "Forget worker?"


def test_forget_asks_first_and_no_means_no(
    controller: Any, world: World, link: FakeDaemonLink, recorder: Any
) -> None:
    a = world.agent("worker", AgentState.IDLE)
    recorder.confirm_answer = False
    controller.panel.select(a)
    controller.panel.trigger("forget")
    assert recorder.confirms
    assert "agents.forget" not in link.methods()


def test_relaunch_label_when_volee_offers_a_relaunch(controller: Any, world: World) -> None:
    a = world.agent("script", AgentState.WORKING)
    world.link.push(
        ev.InterruptionDetected(at=world.tick(), agent=a, cause="machine-restarted"),
        ev.RecoveryDecided(
            at=world.tick(), agent=a, outcome="stopped", rule=3, reason="generic", action="relaunch"
        ),
        ev.StateChanged(at=world.tick(), agent=a, state=AgentState.STOPPED, detail="interrupted"),
    )
    controller.panel.select(a)
    assert controller.panel.buttons["resume"].text() == "Relaunch"
    assert controller.panel.buttons["resume"].isEnabled()


def test_open_attaches_in_a_terminal_when_one_is_found(
    controller: Any, world: World, recorder: Any, qtbot: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING, location=Location.HOST)
    recorder.terminal_argv = ["xterm", "-e", "volee", "attach"]
    with qtbot.waitSignal(controller.opened, timeout=3000) as opened:
        controller.panel.select(a)
        controller.panel.trigger("open")
    assert opened.args == [a, "terminal"]
    assert recorder.terminals == [a]
    assert controller.windows == {}


def test_open_shows_recent_output_without_a_terminal(
    controller: Any, world: World, link: FakeDaemonLink, recorder: Any, qtbot: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING, location=Location.HOST)
    recorder.terminal_argv = None
    act(controller, qtbot, "open", a, "agents.output")
    assert link.last("agents.output").params == {"agent": a, "lines": 200}
    window = controller.windows[a]
    assert isinstance(window, AgentWindow)
    qtbot.waitUntil(lambda: "3 passed" in window.output.toPlainText(), timeout=3000)
    assert window.output.isReadOnly()


def test_open_on_a_done_agent_marks_it_seen(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    a = world.agent("finisher", AgentState.DONE, location=None)
    act(controller, qtbot, "open", a, "agents.seen")
    assert link.last("agents.seen").params == {"agent": a}


def test_reply_sends_the_text(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    a = world.agent("asker", AgentState.NEEDS_INPUT, "which database?")
    controller.panel.select(a)
    controller.panel.trigger("reply")
    window = controller.windows[a]
    qtbot.keyClicks(window.reply, "use postgres")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.send"):
        window.send_button.click()
    assert link.last("agents.send").params == {"agent": a, "text": "use postgres"}
    assert window.reply.text() == ""


def test_a_failed_call_is_shown_not_lost(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, recorder: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING)
    link.errors["agents.stop"] = "agent worker: not_found"
    act(controller, qtbot, "stop", a, "agents.stop")
    qtbot.waitUntil(lambda: bool(recorder.errors), timeout=3000)
    title, message = recorder.errors[0]
    assert title == "The volee daemon did not do it"
    assert "not_found" in message


def test_timeline_shows_events_in_order_with_decisions(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING)
    world.activity(a, "Bash: pytest")
    link.push(ev.InterruptionDetected(at=world.tick(), agent=a, cause="machine-restarted"))
    link.push(
        ev.RecoveryDecided(at=world.tick(), agent=a, outcome="resume", rule=9, reason="working")
    )
    act(controller, qtbot, "timeline", a, "agents.timeline")
    assert link.last("agents.timeline").params == {"agent": a}
    qtbot.waitUntil(
        lambda: any(isinstance(d, TimelineDialog) for d in controller.dialogs), timeout=3000
    )
    dialog = next(d for d in controller.dialogs if isinstance(d, TimelineDialog))
    kinds = [kind for kind, _ in dialog.rows()]
    assert kinds == [
        "agent-registered",
        "activity-recorded",
        "interruption-detected",
        "recovery-decided",
    ]


def test_an_open_agent_window_follows_the_screen_by_itself(
    controller: Any, world: World, link: FakeDaemonLink, recorder: Any, qtbot: Any
) -> None:
    a = world.agent("worker", AgentState.WORKING, location=Location.HOST)
    act(controller, qtbot, "output", a, "agents.output")
    window = controller.windows[a]
    qtbot.waitUntil(lambda: "3 passed" in window.output.toPlainText(), timeout=3000)
    # New output and no event at all (the agent only prints): the window follows it.
    link.handlers["agents.output"] = lambda p: {
        "lines": ["$ pytest -q", "4 passed"],
        "version": 2,
        "live": True,
    }
    window.refresh_timer.timeout.emit()  # the follow timer's tick (1 s), without waiting
    qtbot.waitUntil(lambda: "4 passed" in window.output.toPlainText(), timeout=3000)
    assert window.refresh_timer.isActive()
    # An unchanged screen is not painted again (the person's selection and scroll stay).
    assert window.set_screen("$ pytest -q\n4 passed", 2, True) is False
    # The agent ends: its last screen stays, and the window stops asking.
    link.handlers["agents.output"] = lambda p: {
        "lines": ["Not logged in · Please run /login"],
        "version": 3,
        "live": False,
    }
    window.refresh_timer.timeout.emit()
    qtbot.waitUntil(lambda: "Please run /login" in window.output.toPlainText(), timeout=3000)
    assert not window.refresh_timer.isActive()
    assert "last screen" in window.status.text()


def test_an_older_daemon_without_agents_output_shows_its_raw_screen(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    link.errors["agents.output"] = "unknown method agents.output [unknown_method]"
    a = world.agent("worker", AgentState.WORKING, location=Location.HOST)
    act(controller, qtbot, "output", a, "agents.output")
    window = controller.windows[a]
    qtbot.waitUntil(lambda: "3 passed" in window.output.toPlainText(), timeout=3000)
    assert "agents.screen" in link.methods()


def test_the_panel_offers_every_action_once() -> None:
    from volee_desktop.app.action_bar import ACTIONS, EXTRA_ACTIONS
    from volee_desktop.app.actions import Action

    names = [a for a, _, _ in ACTIONS] + [a for a, _ in EXTRA_ACTIONS]
    assert sorted(names) == sorted(Action)
    assert [str(a) for a in ACTIONS[0][:1]] == ["open"]  # the names stay the strings they were


def test_a_session_in_the_persons_terminal_is_moved_into_volee_once_it_left_it(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any, recorder: Any
) -> None:
    # Seed 002: the interface asks discovery for a listing every two seconds while it waits
    # for a session to leave its terminal; then volee carries the session on in a host.
    a = world.agent("mine", AgentState.WORKING, location=Location.TERMINAL)
    link.push(ev.SessionLinked(at=world.tick(), agent=a, session="s-1", how=ev.LinkKind.DISCOVERED))
    controller.actions.take_over_every = 0.02
    refreshes: list[int] = []

    def refresh(_params: dict[str, Any]) -> dict[str, Any]:
        refreshes.append(1)
        if len(refreshes) == 3:  # the person quit it in their terminal meanwhile
            world.state(a, AgentState.STOPPED, "you left Claude Code")
        return {"listed": True, "events": 0}

    link.handlers["discovery.refresh"] = refresh
    controller.panel.select(a)
    assert controller.panel.buttons["resume"].isEnabled()
    assert controller.panel.buttons["resume"].text() == "Move into volee"

    controller.panel.trigger("resume")

    assert recorder.confirms[-1][0] == "Move mine into volee?"
    qtbot.waitUntil(lambda: "agents.resume" in link.methods(), timeout=5000)
    assert len(refreshes) == 3
    assert link.last("agents.resume").params == {"agent": a}
    # Asked before it left, nothing was resumed: the refreshes came first.
    methods = link.methods()
    assert methods.index("agents.resume") > max(
        i for i, m in enumerate(methods) if m == "discovery.refresh"
    )


def test_moving_into_volee_asks_first_and_no_means_no(
    controller: Any, world: World, link: FakeDaemonLink, recorder: Any
) -> None:
    a = world.agent("mine", AgentState.WORKING, location=Location.TERMINAL)
    link.push(ev.SessionLinked(at=world.tick(), agent=a, session="s-1", how=ev.LinkKind.DISCOVERED))
    recorder.confirm_answer = False
    controller.panel.select(a)
    controller.panel.trigger("resume")
    assert recorder.confirms
    assert "discovery.refresh" not in link.methods()
    assert "agents.resume" not in link.methods()


def test_a_hidden_list_keeps_no_rebuild_pending(controller: Any, world: World, qtbot: Any) -> None:
    # A rebuild left pending ran after the app closed, on a deleted view: SIGSEGV at random.
    panel = controller.panel
    panel.show()
    qtbot.waitUntil(panel.isVisible)
    world.agent("busy", AgentState.WORKING)
    world.agent("busier", AgentState.WORKING)
    panel.rows.schedule()
    panel.hide()
    assert not panel.rows.pending


def test_an_agent_a_usage_limit_stopped_is_continued_now_from_the_list(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    from volee_desktop.core.model import LimitKind

    a = world.agent("worker", AgentState.WORKING)
    world.state(a, AgentState.IDLE, "limited: 5-hour limit")
    world.link.push(
        ev.LimitHit(
            at=world.tick(), agent=a, kind=LimitKind.FIVE_HOUR, resets_at=world.t + 600, ended=True
        )
    )
    controller.panel.select(a)
    assert controller.panel.buttons["resume"].text() == "Continue"
    assert controller.panel.buttons["resume"].isEnabled()
    act(controller, qtbot, "resume", a, "agents.continue")
    assert link.last("agents.continue").params == {"agent": a}

"""Words that stay true (issue 26): a turn that ended on a denial says so, the header and
the rows say the same, the tray menu lists the failed agents, truncation at the end."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import World
from volee_desktop.app.list_rows import Grouping
from volee_desktop.app.summary import StateCounts, summarize
from volee_desktop.app.texts import (
    OUTCOME_COLOUR,
    STATE_COLOUR,
    state_and_detail,
    state_colour,
    state_mark,
    summary_links,
    tooltip_text,
)
from volee_desktop.core import events as ev
from volee_desktop.core.ids import MESSAGE, THREAD
from volee_desktop.core.model import HUMAN, ThreadKind
from volee_desktop.core.states import AgentState


def test_a_turn_that_ended_on_a_denial_reads_denied_in_amber_until_the_next_turn(
    controller: Any, world: World
) -> None:
    a = world.agent("cleaner", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "rm -rf build"})
    world.answered(a, "deny")  # the daemon recorded the deny; the agent goes on, then stops
    world.state(a, AgentState.DONE, "")
    agent = controller.live.registry.agents[a]
    assert state_and_detail(agent) == ("denied", "Bash: rm -rf build")
    assert state_colour(agent) == OUTCOME_COLOUR != STATE_COLOUR[AgentState.DONE]
    assert state_mark(agent) == "!"
    assert "denied: Bash: rm -rf build" in tooltip_text(agent, world.t)
    window_title = _window_title(controller, a)
    assert "denied" in window_title
    assert "done" not in window_title
    # The header counts it by the row's word (the trial of issue 26 saw "8 done" over it).
    world.agent("other", AgentState.DONE)
    assert controller.panel.summary() == "1 denied · 1 done"
    # The next prompt is a new turn: done is done again.
    world.state(a, AgentState.WORKING)
    world.state(a, AgentState.DONE, "all clean")
    agent = controller.live.registry.agents[a]
    assert state_and_detail(agent) == ("done", "all clean")
    assert state_colour(agent) == STATE_COLOUR[AgentState.DONE]


def test_a_turn_a_reason_typed_with_deny_starts_still_reads_denied_after_its_stop(
    controller: Any, world: World
) -> None:
    # The trial of issue 26: Deny with "use make clean instead" typed; the agent answered the
    # reason and its Stop hook said done, and the row turned a green "done".
    a = world.agent("cleaner", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "rm -rf build"})
    request = controller.live.registry.agents[a].request
    world.link.push(ev.RequestAnswered(at=world.tick(), agent=a, request=request.id, answer="deny"))
    world.state(a, AgentState.IDLE, "you denied Bash: rm -rf build")
    # What the daemon commits for the reason: the person's message, typed into the session.
    thread, message = world.ids.make(THREAD), world.ids.make(MESSAGE)
    world.link.push(
        ev.ThreadOpened(at=world.tick(), thread=thread, kind=ThreadKind.DIRECT, parties=(HUMAN, a)),
        ev.MessagePosted(
            at=world.tick(),
            message=message,
            thread=thread,
            sender=HUMAN,
            recipients=(a,),
            body="use make clean instead",
        ),
    )
    world.state(a, AgentState.WORKING)  # its UserPromptSubmit hook
    world.link.push(ev.MessageDelivered(at=world.tick(), message=message, recipient=a))
    world.state(a, AgentState.DONE, "ran make clean")  # its Stop hook
    agent = controller.live.registry.agents[a]
    assert state_and_detail(agent)[0] == "denied"
    assert state_colour(agent) == OUTCOME_COLOUR
    assert "denied: Bash: rm -rf build" in tooltip_text(agent, world.t)
    assert controller.panel.summary() == "1 denied"
    # By state, it is not among the done ones (the trial saw it in "done (9)").
    world.agent("other", AgentState.DONE)
    controller.panel.set_grouping(Grouping.STATE)
    groups = {g.title: g.count for g in controller.panel.rows.groups()}
    assert groups == {"denied": 1, "done": 1}, groups


def test_an_allowed_request_leaves_a_plain_done(controller: Any, world: World) -> None:
    a = world.agent("builder", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "make"})
    world.answered(a, "allow")
    world.state(a, AgentState.DONE, "built")
    assert state_and_detail(controller.live.registry.agents[a]) == ("done", "built")


def _window_title(controller: Any, agent_id: str) -> str:
    controller.actions.show_output(agent_id)
    window = controller.windows[agent_id]
    text: str = window.title.text()
    window.close()
    return text


def test_the_header_says_the_rows_words(controller: Any, world: World) -> None:
    counts = StateCounts()
    counts.states[AgentState.DONE] = 3
    counts.states[AgentState.IDLE] = 4
    assert summarize(counts).tooltip == "3 done · 4 idle"  # not "7 agents idle"
    # Beside working ones too: the trial of issue 26 saw "1 needs you · 40 working" over 49
    # rows (About said 49 agents); the 8 done ones were counted nowhere.
    counts.states[AgentState.WORKING] = 40
    counts.states[AgentState.NEEDS_INPUT] = 1
    assert summarize(counts).tooltip == "1 needs you · 40 working · 3 done · 4 idle"
    assert 'href="state:done"' in summary_links("3 done · 4 idle")
    for n in range(2):
        world.agent(f"d{n}", AgentState.DONE)
    world.agent("i0", AgentState.IDLE)
    assert controller.panel.summary() == "2 done · 1 idle"


def test_failed_agents_are_listed_in_the_tray_menu_with_resume(
    controller: Any, world: World, qtbot: Any
) -> None:
    asks = world.agent("api-fixer", AgentState.WORKING)
    world.ask(asks, "Bash", {"command": "pytest -q"})
    broke = world.agent("web-broke", AgentState.FAILED, "crash loop")
    texts = [a.text() for a in controller.tray.visible_entries()]
    assert texts[:3] == [
        "1 agent needs you · 1 agent failed",
        "api-fixer — Bash: pytest -q",
        "web-broke — failed: crash loop",
    ]
    sub = controller.tray.menu.findChild(type(controller.tray.menu), f"agent-{broke}")
    resume = next(a for a in sub.actions() if a.objectName() == f"resume-{broke}")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.resume"):
        resume.trigger()
    assert world.link.last("agents.resume").params == {"agent": broke}


def test_a_long_detail_is_cut_at_its_end_and_whole_in_the_tooltip(
    controller: Any, world: World
) -> None:
    from PySide6.QtGui import QFontMetrics

    from volee_desktop.app.delegate import elided

    text = "summarize the README for a newcomer, then list the three commands they need"
    fm = QFontMetrics(controller.panel.font())
    cut = elided(fm, text, fm.horizontalAdvance(text) // 3)
    assert cut.endswith("…")
    assert text.startswith(cut[:-1])  # its beginning, read the way it is written
    assert elided(fm, "/home/me/src/project", 10_000, path=True) == "/home/me/src/project"
    a = world.agent("writer", AgentState.DONE, text)
    assert text in tooltip_text(controller.live.registry.agents[a], world.t)


def test_a_mission_workers_notification_names_its_mission(
    controller: Any, world: World, qtbot: Any, sink: Any
) -> None:
    from volee_desktop.core import events as ev
    from volee_desktop.core.ids import MISSION
    from volee_desktop.core.model import MissionKind, Role

    mission = world.ids.make(MISSION)
    world.link.push(
        ev.MissionCreated(
            at=world.tick(), mission=mission, goal="Fix the login bug", kind=MissionKind.CHANGE
        )
    )
    worker = world.agent("worker-1", AgentState.WORKING, mission=mission, role=Role.WORKER)
    loner = world.agent("loner", AgentState.WORKING)
    world.ask(worker, "Bash", {"command": "pytest -q"})
    qtbot.waitUntil(lambda: any(n.agent == worker for n in sink.notices), timeout=5000)
    notice = next(n for n in sink.notices if n.agent == worker)
    assert notice.title == "worker-1 asks to use Bash · mission “Fix the login bug”"
    world.ask(loner, "Bash", {"command": "make"})
    qtbot.waitUntil(lambda: any(n.agent == loner for n in sink.notices), timeout=5000)
    assert next(n for n in sink.notices if n.agent == loner).title == "loner asks to use Bash"


def test_a_resting_agent_whose_program_was_interrupted_reads_interrupted(
    controller: Any, world: World
) -> None:
    from volee_desktop.core import events as ev

    a = world.agent("nightly", AgentState.IDLE)
    world.link.push(ev.InterruptionDetected(at=world.tick(), agent=a, cause="machine-restarted"))
    agent = controller.live.registry.agents[a]
    assert agent.state is AgentState.IDLE
    assert state_and_detail(agent)[0] == "interrupted"
    assert state_colour(agent) == OUTCOME_COLOUR

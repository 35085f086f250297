"""Other machines' agents in the app (issue 24): listed with their machine, counted in the
tray, notified and answered through the local daemon, greyed while unreachable
(app/live.py ``on_machines``, fed by the daemon's ``machines`` push)."""

from __future__ import annotations

import itertools
from typing import Any

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel

from tests.fakes.app_link import FakeDaemonLink, World, machine_entry
from volee_desktop.app.agent_model import MachineRole
from volee_desktop.app.notify_policy import Kind
from volee_desktop.app.summary import Mark
from volee_desktop.core.states import AgentState
from volee_desktop.ipc.methods import Method


class Devbox:
    """Another machine's daemon, as far as the app sees it: its registry, pushed whole."""

    def __init__(self, link: FakeDaemonLink) -> None:
        self.daemon = FakeDaemonLink()
        self.world = World(self.daemon)
        self.world.ids._n = itertools.count(1000)  # ids unlike this machine's (ULIDs are)
        self.link = link
        self.reachable = True

    def push(self, reachable: bool = True) -> None:
        self.link.push_machines(machine_entry("devbox", self.daemon.registry, reachable))


def rows(ctl: Any) -> dict[str, str]:
    """Each row's agent name and the machine it names."""
    model = ctl.model
    return {
        model.agent_at(r).name: model.data(model.index(r), MachineRole)
        for r in range(model.rowCount())
    }


def test_another_machines_agents_are_listed_with_it_and_counted(
    controller: Any, world: World, link: FakeDaemonLink, sink: Any, qtbot: Any
) -> None:
    world.agent("writer", AgentState.WORKING)
    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.world.ask(asker)
    devbox.push()
    assert rows(controller) == {"asker": "devbox", "writer": ""}
    assert controller.live.counts[AgentState.NEEDS_INPUT] == 1
    assert [a.name for a in controller.needing_agents()] == ["devbox:asker"]  # the tray menu
    assert controller.live.machine(asker).name == "devbox"  # type: ignore[union-attr]
    # A machine seen for the first time is the state of things, not news.
    qtbot.wait(50)
    assert sink.notices == []


def test_a_remote_request_is_notified_naming_its_machine_and_answered_through_this_daemon(
    controller: Any, link: FakeDaemonLink, sink: Any, qtbot: Any
) -> None:
    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.push()
    devbox.world.ask(asker)
    devbox.push()
    qtbot.waitUntil(lambda: len(sink.notices) == 1, timeout=3000)
    notice = sink.notices[0]
    assert (notice.kind, notice.title) == (Kind.NEEDS_INPUT, "devbox: asker asks to use Bash")
    sink.activators[0]("allow")
    qtbot.waitUntil(lambda: Method.AGENTS_ALLOW in link.methods(), timeout=3000)
    call = link.last(Method.AGENTS_ALLOW)
    # The local daemon forwards it: the id is unique across machines.
    assert call.params["agent"] == asker
    request = devbox.daemon.registry.agents[asker].request
    assert request is not None
    assert call.params["request"] == request.id


def test_an_unreachable_machine_greys_its_agents_withdraws_and_tells_again_once_back(
    controller: Any, link: FakeDaemonLink, sink: Any, qtbot: Any
) -> None:
    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.push()
    devbox.world.ask(asker)
    devbox.push()
    qtbot.waitUntil(lambda: len(controller.notifications.on_screen()) == 1, timeout=3000)
    devbox.push(reachable=False)
    label = rows(controller)["asker"]
    assert label.startswith("devbox unreachable since ")
    assert controller.live.counts[AgentState.NEEDS_INPUT] == 1  # never lost
    assert controller.notifications.on_screen() == []
    # The badge says a machine is unreachable, and which.
    controller.tray.apply_now()
    summary = controller.tray.summary
    assert summary.mark is Mark.WARNING
    assert "devbox unreachable since " in summary.tooltip
    assert summary.needs == 1
    throttle = controller.notifications.throttle
    assert throttle.next_due() is None
    devbox.push(reachable=True)
    assert rows(controller)["asker"] == "devbox"
    # Still asking: told again (the same request, so after the throttle's spacing).
    assert throttle.next_due() is not None
    controller.tray.apply_now()
    assert "unreachable" not in controller.tray.summary.tooltip


def test_a_removed_machine_takes_its_agents_and_a_new_snapshot_keeps_them(
    controller: Any, world: World, link: FakeDaemonLink
) -> None:
    world.agent("writer", AgentState.WORKING)
    devbox = Devbox(link)
    devbox.world.agent("builder", AgentState.WORKING)
    devbox.push()
    # This daemon's feed starts afresh (a gap, a reconnection): the other machine stays.
    controller.live.on_snapshot(link.registry.fork(), link.registry.seq)
    assert rows(controller) == {"builder": "devbox", "writer": ""}
    assert sum(controller.live.counts.states.values()) == 2
    link.push_machines(removed=("devbox",))  # `volee machine rm devbox`
    assert rows(controller) == {"writer": ""}
    assert sum(controller.live.counts.states.values()) == 1


def test_the_agent_window_of_a_remote_agent_shows_its_screen_and_answers_it(
    controller: Any, link: FakeDaemonLink, qtbot: Any
) -> None:
    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.world.ask(asker)
    devbox.push()
    controller.actions.show_output(asker)
    window = controller.windows[asker]
    assert window.request_label.text() == "asker asks: Bash (its input was not given)"
    # Its screen is asked of this daemon by the agent's id (the daemon forwards it there).
    qtbot.waitUntil(
        lambda: any(
            c.method in (Method.AGENTS_OUTPUT, Method.AGENTS_SCREEN)
            and c.params.get("agent") == asker
            for c in link.calls
        ),
        timeout=3000,
    )
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        window.answer_buttons["allow"].click()
    assert link.last(Method.AGENTS_ALLOW).params["agent"] == asker


def test_the_list_groups_by_machine(controller: Any, world: World, link: FakeDaemonLink) -> None:
    from tests.ui.test_list_modes import rows_text
    from volee_desktop.app.list_rows import Grouping

    world.agent("writer", AgentState.WORKING)
    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.world.ask(asker)
    devbox.world.agent("builder", AgentState.WORKING)
    devbox.push()
    panel = controller.panel
    panel.set_grouping(Grouping.MACHINE)
    assert rows_text(panel) == ["# devbox (2)", "asker", "builder", "# this machine (1)", "writer"]
    # What the view's rows give its delegate to paint beside the name.
    shown = panel.rows
    assert [shown.data(shown.index(r), MachineRole) for r in range(shown.rowCount())] == [
        None,
        "devbox",
        "devbox",
        None,
        "",
    ]
    devbox.push(reachable=False)
    assert rows_text(panel)[0].startswith("# devbox unreachable since ")


def test_a_mission_of_another_machine_is_reviewed_and_answered_from_here(
    controller: Any, link: FakeDaemonLink, sink: Any, qtbot: Any
) -> None:
    devbox = Devbox(link)
    devbox.push()
    mission, workers, _report = devbox.world.mission_awaiting("Fix the login bug")
    devbox.push()
    # It waits for approval here as a mission of this machine would, naming its machine.
    [line] = controller.panel.missions.lines
    assert line.id == mission
    assert line.text(line.since).startswith("devbox: Fix the login bug — 2 workers")
    qtbot.waitUntil(lambda: any(n.mission == mission for n in sink.notices), timeout=3000)
    [notice] = [n for n in sink.notices if n.mission == mission]
    assert notice.title == "devbox: A mission waits for your approval"
    dialog = controller.review(mission)
    assert dialog is not None
    assert dialog.windowTitle() == "Review mission on devbox — volee"
    assert "the login bug" in dialog.report.toPlainText()
    assert dialog.worker_ids() == workers
    # Its workers' changes and the answer go to this daemon, which does them on devbox.
    qtbot.waitUntil(lambda: set(dialog.changes) == set(workers), timeout=3000)
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        dialog.option_buttons[dialog.approving].click()
    assert link.last(Method.MISSIONS_ANSWER).params["mission"] == mission


def test_the_review_of_another_machines_mission_names_it_in_the_dialog_itself(
    controller: Any, world: World, link: FakeDaemonLink
) -> None:
    # Not only in the title: a desktop without title bars (or a tiled one) shows none.
    devbox = Devbox(link)
    remote, _workers, _report = devbox.world.mission_awaiting("Fix the login bug")
    devbox.push()
    devbox.push(reachable=False)  # named by its name, not "devbox unreachable since …"
    dialog = controller.review(remote)
    assert dialog is not None
    assert dialog.windowTitle() == "Review mission on devbox — volee"
    where = dialog.findChild(QLabel, "machine")
    assert where is not None
    assert not where.isHidden()
    assert where.text().startswith("<b>On devbox:</b>")
    assert "merges them there" in where.text()
    local, _, _ = world.mission_awaiting("Tidy the docs")
    mine = controller.review(local)
    assert mine is not None
    assert mine.windowTitle() == "Review mission — volee"
    assert mine.findChild(QLabel, "machine").isHidden()


def test_an_approved_mission_of_another_machine_says_in_the_list_once_merged_there(
    controller: Any, link: FakeDaemonLink, qtbot: Any
) -> None:
    from volee_desktop.core import events as ev
    from volee_desktop.core.model import MissionStatus

    devbox = Devbox(link)
    mission, _workers, _report = devbox.world.mission_awaiting("Fix the login bug")
    devbox.push()
    dialog = controller.review(mission)
    assert dialog is not None
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        dialog.option_buttons[dialog.approving].click()
    status = controller.panel.status
    assert status.text().startswith("Answered the mission “Fix the login bug”")
    # The merge is done there, after the answer: the list says so once devbox says closed.
    at = devbox.world.tick()
    devbox.daemon.push(ev.MissionUpdated(at=at, mission=mission, status=MissionStatus.APPROVED))
    devbox.push()
    assert status.text().startswith("Answered")
    devbox.daemon.push(
        ev.MissionUpdated(
            at=devbox.world.tick(),
            mission=mission,
            status=MissionStatus.CLOSED,
            reason="approved and merged",
        )
    )
    devbox.push()
    assert status.text() == "Merged on devbox: the mission “Fix the login bug” is closed."


def test_an_approved_mission_sent_back_says_it_was_not_merged(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    from volee_desktop.core import events as ev
    from volee_desktop.core.model import MissionStatus

    mission, _workers, _report = world.mission_awaiting("Fix the login bug")
    dialog = controller.review(mission)
    assert dialog is not None
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        dialog.option_buttons[dialog.approving].click()
    link.push(
        ev.MissionUpdated(
            at=world.tick(),
            mission=mission,
            status=MissionStatus.REPORTING,
            reason="worker-1: the merge failed (conflict in src/auth/session.py)",
        )
    )
    assert controller.panel.status.text() == (
        "Not merged: the mission “Fix the login bug” is reporting again "
        "(worker-1: the merge failed (conflict in src/auth/session.py))."
    )


def test_a_push_of_what_changed_keeps_the_rest(controller: Any, link: FakeDaemonLink) -> None:
    """The daemon sends only what changed of a machine (daemon/machines/feed.py)."""
    from volee_desktop.core.registry import Registry
    from volee_desktop.store.codec import encode_registry

    devbox = Devbox(link)
    builder = devbox.world.agent("builder", AgentState.WORKING)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.push()
    devbox.world.ask(asker)
    only = Registry(agents={asker: devbox.daemon.registry.agents[asker]})
    entry = {**machine_entry("devbox", None), "full": False}
    link.push_machines({**entry, "registry": encode_registry(only).decode()})
    assert controller.live.registry.agents[asker].state is AgentState.NEEDS_INPUT
    assert controller.live.registry.agents[builder].name == "builder"  # kept
    link.push_machines({**entry, "gone": {"agents": [builder]}})  # forgotten there
    assert rows(controller) == {"asker": "devbox"}


def test_a_mission_waiting_on_a_machine_seen_first_is_shown_not_notified(
    controller: Any, link: FakeDaemonLink, sink: Any, qtbot: Any
) -> None:
    devbox = Devbox(link)
    mission, _workers, _report = devbox.world.mission_awaiting("Fix the login bug")
    devbox.push()  # the first push of devbox: the state of things
    assert [m.id for m in controller.panel.missions.lines] == [mission]
    assert controller.notifications.throttle.next_due() is None  # nothing offered
    qtbot.wait(50)
    assert [n for n in sink.notices if n.mission == mission] == []


def test_an_unreachable_machines_rows_lose_their_state_colour(
    controller: Any, link: FakeDaemonLink, qtbot: Any
) -> None:
    # "working" in blue is what it said last; while its machine is away that is not known.
    from volee_desktop.app.texts import state_colour

    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.push()
    from volee_desktop.app.list_rows import Grouping

    panel = controller.panel
    panel.set_grouping(Grouping.MACHINE)
    panel.view.resize(500, 400)
    colour = QColor(state_colour(devbox.daemon.registry.agents[asker]))

    def bar() -> QColor:
        shown = panel.rows
        row = next(
            r
            for r in range(shown.rowCount())
            if str(shown.data(shown.index(r), MachineRole) or "").startswith("devbox")
        )
        rect = panel.view.visualRect(shown.index(row))
        at = panel.view.viewport().pos()  # the view's frame around its viewport
        image = panel.view.grab().toImage()
        return image.pixelColor(at.x() + rect.left() + 2, at.y() + rect.center().y())

    assert bar() == colour
    devbox.push(reachable=False)
    panel.view.clearSelection()  # a selected row is painted in the selection's colours
    panel.view.viewport().update()
    qtbot.waitUntil(lambda: bar() != colour, timeout=3000)
    assert bar().saturation() < 40  # grey, not another state's colour


def test_the_status_line_names_a_remote_agent_by_its_name_not_its_id(
    controller: Any, link: FakeDaemonLink
) -> None:
    # The new-user trial (docs/trials/issue-24.md) saw "Allowed ag_01M8…: Bash: …" after an
    # Allow on devbox's agent: its name lives in devbox's registry, not in this one's names.
    from volee_desktop.app import feedback

    devbox = Devbox(link)
    asker = devbox.world.agent("asker", AgentState.WORKING)
    devbox.world.ask(asker)
    devbox.push()
    params = {"agent": asker}
    done = feedback.done_text(Method.AGENTS_ALLOW, params, controller.live.registry)
    assert done == "Allowed asker: Bash (its input was not given)."
    failed = feedback.failed_text(Method.AGENTS_ALLOW, params, controller.live.registry)
    assert failed == "asker was not answered"

"""The approval dialog: the approving option is sent exactly; anything else as what it says."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.approval import ApprovalDialog, evidence_text
from volee_desktop.core import events as ev
from volee_desktop.core.model import Delivery, MissionStatus, PullRequest, PushState


def open_dialog(controller: Any, world: World) -> tuple[ApprovalDialog, str]:
    mission, _, _ = world.mission_awaiting("Fix the login bug")
    dialog = controller.review(mission)
    assert dialog is not None
    return dialog, mission


def test_shows_goal_report_workers_and_options(controller: Any, world: World) -> None:
    dialog, _ = open_dialog(controller, world)
    assert "Fix the login bug" in dialog.goal.text()
    assert "the login bug" in dialog.report.toPlainText()
    assert "# Report" not in dialog.report.toPlainText()  # rendered, not raw Markdown
    rows = [
        [dialog.workers.topLevelItem(i).text(c) for c in (0, 1, 3)]
        for i in range(dialog.workers.topLevelItemCount())
    ]
    assert [r[0] for r in rows] == ["worker-1", "worker-2"]
    assert rows[0][1] == "delivered"
    assert dialog.workers.topLevelItem(0).toolTip(1) == "commits pushed, PR at tip, clean tree"
    assert "2 commits" in rows[0][2]
    assert "pushed" in rows[0][2]
    assert "PR #40 open" in rows[0][2]
    assert "clean tree" in rows[0][2]
    assert list(dialog.option_buttons) == ["Approve and merge", "Not yet"]
    assert dialog.approving == "Approve and merge"
    assert dialog.option_buttons["Approve and merge"].objectName() == "approve"


def test_approving_option_is_sent_exactly(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    dialog, mission = open_dialog(controller, world)
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        dialog.option_buttons["Approve and merge"].click()
    assert link.last("missions.answer").params == {
        "mission": mission,
        "option": "Approve and merge",
    }


def test_another_option_is_sent_as_that_option(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    dialog, mission = open_dialog(controller, world)
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        dialog.option_buttons["Not yet"].click()
    assert link.last("missions.answer").params == {"mission": mission, "option": "Not yet"}


def test_a_typed_reply_is_sent_as_text(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    dialog, mission = open_dialog(controller, world)
    qtbot.keyClicks(dialog.reply, "Approve and merge, but squash first")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "missions.answer"):
        dialog.send.click()
    params = link.last("missions.answer").params
    assert params == {"mission": mission, "text": "Approve and merge, but squash first"}
    assert "option" not in params  # typed words never approve, even when they look alike


def test_dialog_follows_the_mission_when_the_report_no_longer_stands(
    controller: Any, world: World, link: FakeDaemonLink
) -> None:
    dialog, mission = open_dialog(controller, world)
    link.push(
        ev.MissionUpdated(
            at=world.tick(),
            mission=mission,
            status=MissionStatus.RUNNING,
            reason="worker-1 is no longer delivered",
        )
    )
    assert not dialog.banner.isHidden()
    assert "running" in dialog.banner.text()
    assert not dialog.option_buttons["Approve and merge"].isEnabled()


def test_review_action_of_a_notification_opens_the_dialog(
    controller: Any, world: World, sink: Any, qtbot: Any
) -> None:
    mission, _, _ = world.mission_awaiting()
    qtbot.waitUntil(lambda: any(n.mission == mission for n in sink.notices), timeout=3000)
    i = next(i for i, n in enumerate(sink.notices) if n.mission == mission)
    sink.activators[i]()
    assert mission in controller.approvals


def test_evidence_text_says_when_a_pull_request_is_not_at_the_tip() -> None:
    d = Delivery(
        commits=1,
        tip="bbb",
        pushed=PushState.UNPUSHED,
        clean=False,
        pull_request=PullRequest(number=7, state="open", head="aaa"),
    )
    assert (
        evidence_text(d) == "1 commit, not pushed, PR #7 open (not at the tip), uncommitted changes"
    )
    assert evidence_text(None) == "no evidence read yet"


def test_each_worker_shows_the_change_it_would_merge_and_the_diff_on_demand(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    dialog, _ = open_dialog(controller, world)
    workers = dialog.worker_ids()
    qtbot.waitUntil(lambda: set(dialog.changes) == set(workers), timeout=3000)
    asked = [c.params for c in link.calls if c.method == "agents.changes"]
    assert asked == [{"agent": w, "diff": False} for w in workers]
    row = dialog.workers.topLevelItem(0)
    assert row.text(2) == "2 files, +23 −3"
    assert [row.child(i).text(0) for i in range(row.childCount())] == [
        "src/auth/session.py   +9 −3",
        "tests/test_session.py   +14 −0",
    ]
    assert dialog.diff.isHidden()  # on demand only
    dialog.workers.setCurrentItem(row)
    assert dialog.show_diff.isEnabled()
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.changes"):
        dialog.show_diff.click()
    assert link.last("agents.changes").params == {"agent": workers[0], "diff": True}
    qtbot.waitUntil(lambda: "+    if cookie.expired" in dialog.diff.toPlainText(), timeout=3000)
    assert not dialog.diff.isHidden()


def test_a_change_git_cannot_tell_says_why(
    controller: Any, world: World, link: FakeDaemonLink, qtbot: Any
) -> None:
    link.errors["agents.changes"] = "no branch or commit 'volee/worker-1'"
    dialog, _ = open_dialog(controller, world)
    qtbot.waitUntil(lambda: len(dialog.changes) == 2, timeout=3000)
    assert dialog.workers.topLevelItem(0).text(2) == (
        "unknown: no branch or commit 'volee/worker-1'"
    )
    dialog.workers.setCurrentItem(dialog.workers.topLevelItem(0))
    assert not dialog.show_diff.isEnabled()

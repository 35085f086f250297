"""New agent…: the dialog, what it offers, what it refuses inline, the spawn it sends, the
choices it remembers per project; and once against the real daemon."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app.new_agent import NewAgentDialog, Templates, seen_projects
from volee_desktop.config import PERMISSION_MODES
from volee_desktop.core import events as ev
from volee_desktop.core.ids import AGENT
from volee_desktop.core.model import Harness, LaunchSettings
from volee_desktop.core.states import AgentState
from volee_desktop.harness.choices import permission_modes

HARNESSES = [
    {
        "harness": "claude",
        "path": "/usr/bin/claude",
        "version": "2.1.332",
        "problem": None,
        "modes": list(PERMISSION_MODES),
        "default_mode": "acceptEdits",
    },
    {
        "harness": "codex",
        "path": None,
        "version": None,
        "problem": "codex executable 'codex' is not on PATH; install codex",
        "modes": [],
        "default_mode": None,
    },
    {"harness": "pi", "path": "/usr/bin/pi", "version": "0.73.1", "problem": None, "modes": []},
    {"harness": "generic", "path": None, "version": None, "problem": None, "modes": []},
]


def repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture
def harnesses(link: FakeDaemonLink) -> None:
    link.handlers["agents.harnesses"] = lambda _params: {"harnesses": HARNESSES}


@pytest.fixture
def spawned(link: FakeDaemonLink, world: World) -> Iterator[list[str]]:
    """agents.spawn registers the agent (as the daemon does) and answers its view."""
    ids: list[str] = []

    def spawn(params: dict[str, Any]) -> dict[str, Any]:
        agent_id = world.agent(params.get("name") or "new-one", cwd=params["cwd"])
        ids.append(agent_id)
        return {"id": agent_id, "name": params.get("name")}

    link.handlers["agents.spawn"] = spawn
    return ids


def opened(qtbot: Any, controller: Any) -> NewAgentDialog:
    dialog = controller.new_agent.open()
    qtbot.waitUntil(lambda: dialog.harness.count() > 0)
    return dialog


def visible_refusal(dialog: NewAgentDialog) -> str:
    return dialog.refusal.text() if not dialog.refusal.isHidden() else ""


def test_the_tray_menu_and_the_list_open_it(qtbot: Any, controller: Any, harnesses: None) -> None:
    assert controller.tray.action_new.text() == "New agent…"
    controller.tray.action_new.trigger()
    qtbot.waitUntil(lambda: controller.new_agent.dialog is not None)
    first = controller.new_agent.dialog
    controller.panel.new.click()  # the list's button raises the same dialog, not a second one
    assert controller.new_agent.dialog is first
    first.reject()
    qtbot.waitUntil(lambda: controller.new_agent.dialog is None)
    shortcut = [a for a in controller.panel.actions() if a.text() == "New agent…"]
    assert [a.shortcut().toString() for a in shortcut] == ["Ctrl+Shift+N"]
    shortcut[0].trigger()
    qtbot.waitUntil(lambda: controller.new_agent.dialog is not None)


def test_it_lists_the_seen_projects_most_recent_first(
    qtbot: Any, controller: Any, world: World, link: FakeDaemonLink, harnesses: None
) -> None:
    world.agent("old", cwd="/home/me/old")
    world.agent("api", cwd="/home/me/api")
    world.agent("old-again", cwd="/home/me/old")
    # A worktree's agent counts for its repository, not the worktree.
    link.push(
        ev.AgentRegistered(
            at=world.tick(),
            agent=world.ids.make(AGENT),
            name="wt",
            harness=Harness.CLAUDE,
            launch=LaunchSettings(harness=Harness.CLAUDE, cwd="/home/me/web/.claude/worktrees/x"),
            cwd="/home/me/web/.claude/worktrees/x",
            worktree="/home/me/web/.claude/worktrees/x",
            repo="/home/me/web",
            branch="volee/x",
        )
    )
    expected = ["/home/me/web", "/home/me/old", "/home/me/api"]
    assert seen_projects(controller.live.registry) == expected
    dialog = opened(qtbot, controller)
    items = [dialog.project.itemText(i) for i in range(dialog.project.count())]
    assert items == expected
    assert dialog.folder() == "/home/me/web"


def test_only_installed_harnesses_with_their_versions_and_their_modes(
    qtbot: Any, controller: Any, harnesses: None
) -> None:
    dialog = opened(qtbot, controller)
    names = [dialog.harness.itemText(i) for i in range(dialog.harness.count())]
    assert names == ["Claude Code 2.1.332", "pi 0.73.1", "a command (generic)"]
    assert "Not offered: codex executable 'codex' is not on PATH" in dialog.missing.text()
    assert [dialog.mode.itemText(i) for i in range(dialog.mode.count())] == list(PERMISSION_MODES)
    assert dialog.mode.currentText() == "acceptEdits"
    dialog.harness.setCurrentIndex(1)  # pi: no permission modes, said in words
    assert not dialog.mode.isEnabled()
    assert dialog.mode.count() == 0
    assert dialog.mode.toolTip() == "pi has no permission modes"
    assert dialog.mode.placeholderText() == "pi has no permission modes"


def test_codex_modes_are_what_the_binary_at_hand_takes() -> None:
    # codex 0.171's --help: no "untrusted" nor "on-failure" any more.
    help_text = (
        "  -s, --sandbox <SANDBOX_MODE>\n"
        "          [possible values: read-only, workspace-write, danger-full-access]\n"
        "  -a, --ask-for-approval <APPROVAL_POLICY>\n"
        "          Possible values:\n"
        "          - on-request: the model decides\n"
        "          - never: never ask\n"
        "  --search\n"
    )
    modes = permission_modes("codex", help_text)
    assert "untrusted" not in modes
    assert "on-failure" not in modes
    assert {"default", "plan", "bypassPermissions", "read-only", "never"} <= set(modes)
    assert permission_modes("pi") == ()
    assert permission_modes("claude") == PERMISSION_MODES


def test_a_folder_outside_git_with_a_worktree_is_refused_inline(
    qtbot: Any, controller: Any, link: FakeDaemonLink, harnesses: None, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(plain))
    dialog.task.setPlainText("fix the tests")
    assert visible_refusal(dialog) == ""
    dialog.worktree.setChecked(True)
    assert visible_refusal(dialog) == (
        f"{plain} is not in a git repository: a new worktree needs one"
    )
    dialog.ok.click()
    assert not any(c.method == "agents.spawn" for c in link.calls)
    assert dialog.isVisible()
    dialog.project.setCurrentText(str(repo(tmp_path / "proj")))
    assert visible_refusal(dialog) == ""
    assert dialog.branch.text() == "volee/fix-the-tests"


def test_a_refused_mode_is_said_in_the_dialog_not_in_an_error_window(
    qtbot: Any,
    controller: Any,
    link: FakeDaemonLink,
    recorder: Any,
    harnesses: None,
    tmp_path: Path,
) -> None:
    refusal = (
        "agent x could not start: this codex has no permission mode 'untrusted'; use one of "
        "default, acceptEdits, manual, plan (codex 0.171.0) (no agent was kept)"
    )
    link.errors["agents.spawn"] = refusal
    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(tmp_path))
    dialog.task.setPlainText("anything")
    dialog.ok.click()
    qtbot.waitUntil(lambda: visible_refusal(dialog) == refusal)
    assert dialog.isVisible()
    assert dialog.ok.isEnabled()
    assert dialog.task.toPlainText() == "anything"  # nothing typed is lost
    assert recorder.errors == []


def test_start_sends_agents_spawn_and_selects_the_new_agent(
    qtbot: Any,
    controller: Any,
    link: FakeDaemonLink,
    world: World,
    harnesses: None,
    spawned: list[str],
    tmp_path: Path,
) -> None:
    world.agent("older")
    project = repo(tmp_path / "proj")
    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(project))
    dialog.model.setText("opus")
    dialog.mode.setCurrentText("plan")
    dialog.worktree.setChecked(True)
    dialog.task.setPlainText("Make the API tests pass\nthen tell me")
    assert dialog.branch.text() == "volee/make-the-api-tests-pass"
    dialog.branch.setText("fix/api")
    dialog.branch.textEdited.emit("fix/api")
    dialog.name.setText("api-fixer")
    assert dialog.branch.text() == "fix/api"  # edited: the name no longer changes it
    dialog.ok.click()
    qtbot.waitUntil(lambda: len(spawned) == 1)
    params = next(c.params for c in link.calls if c.method == "agents.spawn")
    env = params.pop("env")
    assert isinstance(env, dict)
    assert "PATH" in env
    assert params == {
        "harness": "claude",
        "prompt": "Make the API tests pass\nthen tell me",
        "argv": [],
        "name": "api-fixer",
        "cwd": str(project),
        "worktree": True,
        "branch": "fix/api",
        "model": "opus",
        "permission_mode": "plan",
        "machine": None,
    }
    qtbot.waitUntil(lambda: controller.panel.current_id() == spawned[0])
    assert controller.panel.isVisible()
    qtbot.waitUntil(lambda: controller.new_agent.dialog is None)


def test_a_generic_command_is_its_argv(
    qtbot: Any,
    controller: Any,
    link: FakeDaemonLink,
    harnesses: None,
    spawned: list[str],
    tmp_path: Path,
) -> None:
    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(tmp_path))
    dialog.harness.setCurrentIndex(dialog.harness.findData("generic"))
    assert not dialog.model.isEnabled()
    dialog.ok.click()
    assert visible_refusal(dialog) == "the generic harness needs a command: write it as the task"
    dialog.task.setPlainText("make test 'one two'")
    dialog.ok.click()
    qtbot.waitUntil(lambda: len(spawned) == 1)
    params = next(c.params for c in link.calls if c.method == "agents.spawn")
    assert params["argv"] == ["make", "test", "one two"]
    assert params["prompt"] is None
    assert params["permission_mode"] is None
    assert params["model"] is None


def test_the_choices_are_remembered_per_project(
    qtbot: Any,
    controller: Any,
    link: FakeDaemonLink,
    harnesses: None,
    spawned: list[str],
    tmp_path: Path,
) -> None:
    a, b = repo(tmp_path / "a"), repo(tmp_path / "b")
    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(a))
    dialog.mode.setCurrentText("plan")
    dialog.worktree.setChecked(True)
    dialog.task.setPlainText("one")
    dialog.ok.click()
    qtbot.waitUntil(lambda: len(spawned) == 1)
    qtbot.waitUntil(lambda: controller.new_agent.dialog is None)

    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(b))
    dialog.harness.setCurrentIndex(dialog.harness.findData("pi"))
    dialog.worktree.setChecked(False)
    dialog.task.setPlainText("two")
    dialog.ok.click()
    qtbot.waitUntil(lambda: len(spawned) == 2)
    qtbot.waitUntil(lambda: controller.new_agent.dialog is None)

    dialog = opened(qtbot, controller)
    assert dialog.folder() == str(b)  # the most recent project first
    assert dialog.chosen_harness() == "pi"
    assert not dialog.worktree.isChecked()
    dialog.project.setCurrentText(str(a))
    assert dialog.chosen_harness() == "claude"
    assert dialog.mode.currentText() == "plan"
    assert dialog.worktree.isChecked()
    # Kept across starts, in the state folder beside the list's settings.
    kept = Templates(controller.new_agent.templates.path).get(str(a))
    assert kept is not None
    assert (kept.harness, kept.mode, kept.worktree) == ("claude", "plan", True)


def test_a_machine_selector_once_machines_exist(
    qtbot: Any, controller: Any, link: FakeDaemonLink, harnesses: None, spawned: list[str]
) -> None:
    config = Path(controller.options.config_path)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[machines.devbox]\nssh = "me@devbox"\n')
    dialog = opened(qtbot, controller)
    assert [dialog.machine.itemText(i) for i in range(dialog.machine.count())] == [
        "this machine",
        "devbox",
    ]
    assert dialog.machine.isVisibleTo(dialog)
    dialog.machine.setCurrentText("devbox")
    qtbot.waitUntil(lambda: dialog.harness.count() > 0)  # devbox's harnesses
    dialog.project.setCurrentText("src/there")
    dialog.task.setPlainText("x")
    assert visible_refusal(dialog) == "name the folder on devbox: /path/there"
    dialog.project.setCurrentText("/srv/there")
    dialog.ok.click()
    qtbot.waitUntil(lambda: len(spawned) == 1)
    params = next(c.params for c in link.calls if c.method == "agents.spawn")
    assert params["machine"] == "devbox"
    assert params["cwd"] == "/srv/there"
    assert params["env"] is None


def test_no_machine_selector_without_machines(qtbot: Any, controller: Any, harnesses: None) -> None:
    dialog = opened(qtbot, controller)
    assert not dialog.machine.isVisibleTo(dialog)


def test_the_real_daemon_starts_a_generic_agent_in_a_new_worktree(
    qtbot: Any,
    qloop: asyncio.AbstractEventLoop,
    volee_home: Path,
    recorder: Any,
    sink: Any,
    tmp_path: Path,
) -> None:
    """The dialog against the daemon (in process, real hosts), a real git repository."""
    from tests.daemon.gitrepos import git, make_repo
    from volee_desktop.app.controller import AppController, AppOptions
    from volee_desktop.app.link import IpcDaemonLink
    from volee_desktop.daemon.main import Daemon
    from volee_desktop.paths import dirs

    project = make_repo(tmp_path, remote=False)

    def run(coro: Any) -> Any:
        task = qloop.create_task(coro)
        qtbot.waitUntil(task.done, timeout=20000)
        return task.result()

    daemon = run(Daemon.start(dirs()))
    ctl: Any = None
    try:
        link = run(IpcDaemonLink.connect(daemon.dirs.socket))
        options = AppOptions(
            config_path=volee_home / "config" / "config.toml",
            login_item=None,
            sinks=[sink],
            confirm=recorder.confirm,
            show_error=recorder.error,
            use_tray=False,
            list_prefs=volee_home / "state" / "list.json",
        )
        ctl = AppController(options)
        qtbot.addWidget(ctl.panel)
        run(ctl.attach(link))
        dialog = ctl.new_agent.open()
        qtbot.waitUntil(lambda: dialog.harness.findData("generic") >= 0, timeout=20000)
        dialog.project.setCurrentText(str(project))
        dialog.harness.setCurrentIndex(dialog.harness.findData("generic"))
        dialog.worktree.setChecked(True)
        dialog.name.setText("echoer")
        dialog.task.setPlainText("sh -c 'git rev-parse --abbrev-ref HEAD > branch.txt'")
        assert dialog.branch.text() == "volee/echoer"
        dialog.branch.setText("feature/echo")
        dialog.branch.textEdited.emit("feature/echo")
        with qtbot.waitSignal(ctl.new_agent.started, timeout=20000) as started:
            dialog.ok.click()
        agent_id = started.args[0]
        qtbot.waitUntil(lambda: ctl.panel.current_id() == agent_id, timeout=10000)
        agent = ctl.live.registry.agents[agent_id]
        assert agent.repo == str(project)
        assert agent.branch == "feature/echo"
        worktree = Path(str(agent.worktree))
        assert worktree == project / ".claude" / "worktrees" / "echoer"
        qtbot.waitUntil(lambda: (worktree / "branch.txt").exists(), timeout=20000)
        qtbot.waitUntil(lambda: (worktree / "branch.txt").read_text() != "", timeout=5000)
        assert (worktree / "branch.txt").read_text().strip() == "feature/echo"
        assert "feature/echo" in git(project, "branch", "--list", "feature/echo")
        qtbot.waitUntil(
            lambda: ctl.live.registry.agents[agent_id].state is not AgentState.LAUNCHING,
            timeout=10000,
        )
        assert recorder.errors == []
    finally:
        if ctl is not None:
            ctl.tasks.cancel_all()
            ctl.close()
        from tests.daemon.helpers import close_stopping_agents

        run(close_stopping_agents(daemon))


def test_the_default_branch_is_cut_between_words() -> None:
    from volee_desktop.app.new_agent import slug

    assert slug("Make the checkout API tests pass.") == "make-the-checkout-api"
    assert slug("x" * 40) == "x" * 24
    assert slug("!!") == "agent"


def test_the_new_agent_is_selected_when_its_row_comes_after_the_reply(
    qtbot: Any,
    controller: Any,
    link: FakeDaemonLink,
    world: World,
    harnesses: None,
    tmp_path: Path,
) -> None:
    world.agent("older")
    later: list[str] = []

    def spawn(params: dict[str, Any]) -> dict[str, Any]:
        agent_id = world.ids.make(AGENT)
        later.append(agent_id)
        return {"id": agent_id}  # the daemon answered; its event is not here yet

    link.handlers["agents.spawn"] = spawn
    dialog = opened(qtbot, controller)
    dialog.project.setCurrentText(str(tmp_path))
    dialog.task.setPlainText("late")
    with qtbot.waitSignal(controller.new_agent.started):
        dialog.ok.click()
    assert controller.panel.current_id() != later[0]
    link.push(
        ev.AgentRegistered(
            at=world.tick(),
            agent=later[0],
            name="late",
            harness=Harness.CLAUDE,
            launch=LaunchSettings(harness=Harness.CLAUDE, cwd=str(tmp_path)),
            cwd=str(tmp_path),
        )
    )
    qtbot.waitUntil(lambda: controller.panel.current_id() == later[0])


def test_each_harness_is_offered_as_soon_as_the_daemon_found_it(
    qtbot: Any, controller: Any, link: FakeDaemonLink
) -> None:
    """pi answers --version in seconds: the daemon says ``probing`` meanwhile; Claude Code
    is offered at once, pi once found."""
    found = {"pi": False}

    def answer(_params: dict[str, Any]) -> dict[str, Any]:
        pi = HARNESSES[2] if found["pi"] else {"harness": "pi", "probing": True}
        return {"harnesses": [HARNESSES[0], HARNESSES[1], pi, HARNESSES[3]]}

    link.handlers["agents.harnesses"] = answer
    dialog = controller.new_agent.open()
    qtbot.waitUntil(lambda: dialog.harness.findData("generic") >= 0)
    assert dialog.harness.findData("pi") < 0
    assert dialog.chosen_harness() == "claude"
    assert dialog.ok.isEnabled()
    assert "Looking for pi…" in dialog.missing.text()
    found["pi"] = True
    qtbot.waitUntil(lambda: dialog.harness.findData("pi") >= 0)
    assert dialog.harness.itemText(dialog.harness.findData("pi")) == "pi 0.73.1"
    assert "Looking for" not in dialog.missing.text()
    assert dialog.chosen_harness() == "claude"  # what was chosen stays


def test_without_the_daemons_answer_every_harness_is_offered_and_it_says_why(
    qtbot: Any, controller: Any, link: FakeDaemonLink
) -> None:
    link.errors["agents.harnesses"] = "the daemon went away"
    dialog = controller.new_agent.open()
    qtbot.waitUntil(lambda: dialog.harness.count() == 4)
    assert dialog.missing.text().startswith(
        "The daemon did not say which harnesses are installed: the daemon went away"
    )


def test_the_harnesses_offered_are_those_of_the_chosen_machine(
    qtbot: Any, controller: Any, link: FakeDaemonLink
) -> None:
    here, there = HARNESSES, [h for h in HARNESSES if h["harness"] in ("pi", "generic")]
    link.handlers["agents.harnesses"] = lambda params: {
        "harnesses": there if params.get("machine") == "devbox" else here
    }
    config = Path(controller.options.config_path)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[machines.devbox]\nssh = "me@devbox"\n')
    dialog = opened(qtbot, controller)

    def offered() -> list[str]:
        return [dialog.harness.itemData(i) for i in range(dialog.harness.count())]

    local = offered()
    dialog.machine.setCurrentText("devbox")
    qtbot.waitUntil(lambda: offered() == ["pi", "generic"])
    asked = [c.params for c in link.calls if c.method == "agents.harnesses"]
    assert asked[-1] == {"machine": "devbox"}  # devbox's daemon, through this one
    dialog.machine.setCurrentText("this machine")
    qtbot.waitUntil(lambda: offered() == local)
    assert [c.params for c in link.calls if c.method == "agents.harnesses"][-1] == {}


def test_the_folders_offered_are_those_of_the_chosen_machine(
    qtbot: Any, controller: Any, world: World, link: FakeDaemonLink, harnesses: None
) -> None:
    from tests.ui.test_machines_app import Devbox

    world.agent("here", cwd="/home/me/api")
    devbox = Devbox(link)
    devbox.world.agent("there", cwd="/srv/service")
    devbox.push()
    config = Path(controller.options.config_path)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[machines.devbox]\nssh = "me@devbox"\n')
    dialog = opened(qtbot, controller)

    def offered() -> list[str]:
        return [dialog.project.itemText(i) for i in range(dialog.project.count())]

    assert offered() == ["/home/me/api"]  # this machine's only
    dialog.machine.setCurrentText("devbox")
    assert offered() == ["/srv/service"]
    assert dialog.folder() == "/srv/service"
    dialog.machine.setCurrentText("this machine")
    assert offered() == ["/home/me/api"]

"""The agent window as a person uses it all day (issue 26): the list's keys wherever the
focus is, the reason cleared, the dialog's rows in view, a font with the harness's glyphs."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontInfo, QRawFont

from tests.fakes.app_link import FakeDaemonLink, World
from volee_desktop.app import termfont
from volee_desktop.core.states import AgentState


def asking(world: World) -> str:
    a = world.agent("api-fixer", AgentState.WORKING)
    world.ask(a, "Bash", {"command": "rm -rf build"})
    return a


def opened(controller: Any, qtbot: Any, agent_id: str) -> Any:
    controller.actions.show_output(agent_id)
    window = controller.windows[agent_id]
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)  # shortcuts go to the active window
    return window


def shown_alone(qtbot: Any, world: World, agent_id: str, height: int | None = None) -> Any:
    """The agent's window on its own (no controller), shown; ``height`` in pixels."""
    from volee_desktop.app.agent_window import AgentWindow

    window = AgentWindow(world.link.registry.agents[agent_id])
    qtbot.addWidget(window)
    if height is not None:
        window.resize(900, height)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_ctrl_d_in_the_reason_box_denies_with_that_reason_and_clears_it(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = asking(world)
    window = opened(controller, qtbot, a)
    window.reply.setFocus()
    qtbot.keyClicks(window.reply, "use make clean instead")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.deny"):
        qtbot.keyClick(window.reply, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert link.last("agents.deny").params["reason"] == "use make clean instead"
    assert window.reply.text() == "", "the reason goes once it was sent"


def test_ctrl_y_and_the_lists_keys_act_from_the_reply_box(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = asking(world)
    window = opened(controller, qtbot, a)
    window.reply.setFocus()
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        qtbot.keyClick(window.reply, Qt.Key.Key_Y, Qt.KeyboardModifier.ControlModifier)
    assert link.last("agents.allow").params["agent"] == a
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.stop"):
        qtbot.keyClick(window.reply, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert link.last("agents.stop").params == {"agent": a}


def test_the_screen_keeps_its_last_rows_in_view_when_a_dialog_opens(
    qtbot: Any, world: World
) -> None:
    a = world.agent("api-fixer", AgentState.WORKING)
    window = shown_alone(qtbot, world, a)
    lines = [f"line {n}" for n in range(150)] + ["❯ 1. Yes", "  2. No", "  3. No, and tell"]
    window.set_screen("\n".join(lines), version=1)
    bar = window.output.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=3000)
    world.ask(a, "Bash", {"command": "rm -rf build"})  # the request box opens above the screen
    window.set_agent(world.link.registry.agents[a])
    qtbot.waitUntil(lambda: not window.request_box.isHidden(), timeout=3000)
    window.set_screen("\n".join(lines), version=2)
    qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=3000)
    # Scrolled up by the person: the screen stays where they are.
    bar.setValue(0)
    window.set_screen("\n".join([*lines, "more"]), version=3)
    assert bar.value() == 0


def test_a_claude_code_screen_shows_its_command_and_its_spinner_in_a_window_of_29_rows(
    qtbot: Any, world: World
) -> None:
    # The trial of issue 28 on X11: 40 rows, the command at the top, 20 blank rows, the
    # spinner and the prompt at the bottom; the window followed the end and showed blank rows
    # and the spinner only.
    window = shown_alone(qtbot, world, world.agent("docs-writer", AgentState.WORKING), 560)
    top = ["╭─ Claude Code ─╮", "", "> write the docs", "", "⏺ Bash(python3 -c 'print(1)')"]
    top += ["  ⎿  1"] + [""] * 4
    bottom = ["✽ Herding… (12s · esc to interrupt)", "", "❯ ", "", "  ⏵⏵ accept edits on"]
    window.set_screen("\n".join(top + [""] * 20 + bottom + [""] * 5), version=1)

    shown = window.output.toPlainText().splitlines()
    assert "⏺ Bash(python3 -c 'print(1)')" in shown
    assert shown[-1] == "  ⏵⏵ accept edits on"
    assert "\n\n\n" not in window.output.toPlainText()  # a run of blank rows is one
    bar = window.output.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() == 0, timeout=3000)  # all of it in view


def test_blank_rows_are_folded_and_the_text_is_kept() -> None:
    from volee_desktop.app.texts import readable_screen

    assert readable_screen("\n\na\n\n\n\nb\nc\n\n  \n") == "a\n\nb\nc"
    assert readable_screen("  x  \n\ty") == "  x  \n\ty"  # the rows' own spaces stay
    assert readable_screen("\n \n") == ""


def test_every_glyph_claude_code_draws_has_a_real_glyph_in_the_screens_font(
    controller: Any, world: World, qtbot: Any
) -> None:
    a = world.agent("api-fixer", AgentState.WORKING)
    window = opened(controller, qtbot, a)
    families = window.output.font().families()
    # The screen stays in its fixed-width face: the fallbacks only fill its gaps.
    assert QFontInfo(window.output.font()).fixedPitch(), QFontInfo(window.output.font()).family()
    assert termfont.missing(families) == "", f"no glyph in {families}"
    for glyph in "⏵⎿✻⏺":  # each drawn by a family of the chain itself
        assert any(QRawFont.fromFont(QFont(f)).supportsCharacter(ord(glyph)) for f in families)


def test_the_fallback_chain_adds_a_family_only_for_what_the_first_lacks() -> None:
    have = {"Mono": set("ab"), "Sym": set("bc"), "Other": set("cd")}
    chain = termfont.fallback_chain(
        "Mono",
        "abcd",
        has=lambda f, g: g in have.get(f, set()),
        lookup=lambda g: [f for f in ("Sym", "Other") if g in have[f]],
    )
    assert chain == ["Mono", "Sym", "Other"]
    assert termfont.parse_fc_list("DejaVu Sans,DejaVu Sans Condensed\nSymbola\nSymbola\n") == [
        "DejaVu Sans",
        "Symbola",
    ]


def test_esc_shift_tab_and_a_dialogs_options_have_buttons_that_type_them(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    a = world.agent("api-fixer", AgentState.DONE)
    window = opened(controller, qtbot, a)
    for key in ("esc", "shift-tab"):
        with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.keys"):
            window.key_buttons[key].click()
        assert link.last("agents.keys").params == {"agent": a, "key": key}
    assert window.status.text() == "Typed Shift+Tab."
    # Checked on the screen like an answer: a key after which it did not move says so.
    link.handlers["agents.keys"] = lambda p: {"agent": a, "key": p["key"], "taken": False}
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.keys"):
        window.key_buttons["esc"].click()
    assert window.status.text() == "Typed Esc, but its screen did not change."
    del link.handlers["agents.keys"]
    # A dialog no request answers (a menu, a trust prompt): a button per option.
    menu = ["Select model", "❯ 1. Default", "  2. Opus", "  3. Haiku", "", "Enter to select"]
    window.set_screen("\n".join(menu), version=7)
    assert window.key_buttons["option:2"].isVisible()
    assert window.key_buttons["option:2"].text() == "2. Opus"
    assert not window.key_buttons["option:4"].isVisible()
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.keys"):
        window.key_buttons["option:2"].click()
    assert link.last("agents.keys").params == {"agent": a, "key": "option:2"}
    # While a request is open its own answers do it (they record the answer).
    world.ask(a, "Bash", {"command": "make"})
    window.set_screen("\n".join(menu), version=8)
    assert not window.key_buttons["option:2"].isVisible()
    link.errors["agents.keys"] = "its screen shows no dialog with an option 2; nothing typed"
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.keys"):
        window.key_buttons["esc"].click()
    assert window.status.text().startswith("Not typed:")


def test_the_window_is_as_wide_as_the_agents_pty_within_the_screen(
    qtbot: Any, world: World
) -> None:
    # The trial of issue 26: Claude Code draws 120 columns; the window showed fewer, with a
    # scroll bar, and cut the dialog's option 2 at the right.
    from PySide6.QtCore import QRect

    from volee_desktop.app.agent_window import SCREEN_COLS, AgentWindow

    a = world.agent("api-fixer", AgentState.WORKING)
    window = AgentWindow(world.link.registry.agents[a])
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    area = window.screen().availableGeometry()
    assert window.width() <= area.width()  # the test screen (800 px) is narrower than 120
    line = "  2. Yes, and don't ask again for rm commands in /home/me/project".ljust(
        SCREEN_COLS, "x"
    )
    window.set_screen("\n".join([line] * 60), version=1)
    bar = window.output.horizontalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=3000)  # cut on this narrow screen
    window.fit_columns(SCREEN_COLS, QRect(0, 0, 1920, 1080))  # a screen wide enough
    qtbot.waitUntil(lambda: bar.maximum() == 0, timeout=3000)  # all 120 columns in view
    wide = window.width()
    assert wide < 1920
    # A PTY of another width (agents.output's cols): the window follows it, unless resized.
    window.set_screen("\n".join([line[:80]] * 60), version=2, cols=80)
    assert window.cols == 80
    assert window.width() < wide
    qtbot.waitUntil(lambda: bar.maximum() == 0, timeout=3000)


#: Claude Code 2.1's permission dialog as the daemon renders it (its options as it words them).
DIALOG = [
    "● Bash(rm -rf build)",
    "",
    "─" * 100,
    " Bash command",
    "",
    "   rm -rf build",
    "   Clean the build",
    "",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   2. Yes, and don't ask again for rm commands in /home/me/project",
    "   3. Yes, and switch to auto mode",
    "   4. No, and tell Claude what to do differently (esc)",
    "",
    " Esc to cancel · Tab to amend",
]


def test_a_permission_dialogs_numbered_options_have_buttons_that_answer_it(
    controller: Any, world: World, qtbot: Any, link: FakeDaemonLink
) -> None:
    # The trial of issue 26: no button for option 2 ("Yes, and don't ask again"): it needed
    # `volee attach`. Each option is its answer, given like Allow (checked on the screen by
    # the daemon and recorded), never typed blind.
    a = asking(world)
    window = opened(controller, qtbot, a)
    window.refresh_timer.stop()  # the fake daemon's screen would replace this one
    window.set_screen("\n".join(DIALOG), version=101)
    buttons = window.key_buttons
    assert [buttons[f"option:{n}"].isVisible() for n in range(1, 6)] == [True] * 4 + [False]
    assert buttons["option:2"].text().startswith("2. Yes, and don")
    assert "Allow, and do not ask again" in buttons["option:2"].toolTip()
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.allow"):
        buttons["option:2"].click()
    request = controller.live.registry.agents[a].request
    assert link.last("agents.allow").params == {"agent": a, "request": request.id, "always": True}
    assert "agents.keys" not in link.methods()
    assert window.status.text() == "Answered: allowed always."
    # "switch to auto mode" is no answer volee gives: greyed, and says where to answer it.
    assert not buttons["option:3"].isEnabled()
    assert "volee attach api-fixer" in buttons["option:3"].toolTip()
    # No: a Deny, with what the reply box holds as its reason.
    b = world.agent("cleaner", AgentState.WORKING)
    world.ask(b, "Bash", {"command": "rm -rf build"})
    other = opened(controller, qtbot, b)
    other.refresh_timer.stop()
    other.set_screen("\n".join(DIALOG), version=101)
    other.reply.setText("use make clean")
    with qtbot.waitSignal(controller.called, check_params_cb=lambda m: m == "agents.deny"):
        other.key_buttons["option:4"].click()
    assert link.last("agents.deny").params["reason"] == "use make clean"
    other.key_buttons["option:1"].click()  # the request was answered: the button is gone
    # Once answered, the screen's dialog is no longer its to answer.
    world.answered(b, "deny")
    qtbot.waitUntil(lambda: not other.key_buttons["option:1"].isVisible(), timeout=3000)

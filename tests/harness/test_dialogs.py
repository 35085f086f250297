"""The dialog on a rendered screen and the keys that answer it: only the dialog of the request.

The screens are real: Claude Code 2.1.332 and codex 0.171.0 rendered through pyte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from volee_desktop.core.answer import Answer
from volee_desktop.core.model import Request
from volee_desktop.core.requests import permission_request, question_request
from volee_desktop.harness.dialogs import ESC, Keys, find_dialog, keys_for

SCREENS = Path(__file__).resolve().parent / "samples" / "screens"
AT = 1_796_000_000.0
ALLOW = Answer.allow()
ALWAYS = Answer.allow(always=True)
DENY = Answer.deny("not now")


def screen(name: str) -> list[str]:
    return (SCREENS / f"{name}.txt").read_text().splitlines()


def bash(command: str, **extra: object) -> Request:
    return permission_request("ag_1", AT, "Bash", {"command": command, **extra}, "/home/dev/proj")


CLAUDE = screen("claude-permission-Bash")
CODEX = screen("codex-permission-command")
QUESTION = screen("claude-AskUserQuestion")
ASK = {
    "questions": [
        {
            "question": "Which database should we use?",
            "header": "Database",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}],
        }
    ]
}


def test_claude_codes_permission_dialog_is_found_with_its_options() -> None:
    dialog = find_dialog(CLAUDE)

    assert dialog is not None
    assert dialog.question == "Do you want to proceed?"
    assert [o.number for o in dialog.options] == [1, 2, 3, 4]
    assert dialog.options[0].label == "Yes"
    assert dialog.options[3].label == "No"
    assert dialog.escapable
    assert "touch asked.txt" in dialog.text
    # The conversation above the dialog is not part of it.
    assert "RUN: touch asked.txt" not in dialog.text


def test_claude_allow_always_and_deny_keys() -> None:
    request = bash("touch asked.txt")
    assert keys_for(CLAUDE, request, ALLOW) == Keys(b"1")
    # "2. Yes, and always allow access to … from this project", never "switch to auto mode".
    assert keys_for(CLAUDE, request, ALWAYS) == Keys(b"2")
    assert keys_for(CLAUDE, request, DENY) == Keys(ESC)


@pytest.mark.parametrize("decision", [ALLOW, ALWAYS, DENY])
def test_a_dialog_for_another_command_is_refused(decision: Answer) -> None:
    other = bash("rm -rf /home/dev/proj")
    refusal = keys_for(CLAUDE, other, decision)
    assert refusal == "the dialog on screen asks 'Do you want to proceed?' about something else"


def test_no_dialog_on_screen_is_refused() -> None:
    done = [*CLAUDE[:20], "✻ Worked for 2s", "", "❯ ", "  ⏸ manual mode on · ? for shortcuts"]
    assert keys_for(done, bash("touch asked.txt"), ALLOW) == ("no dialog is open on its screen")
    assert keys_for([], bash("touch asked.txt"), ALLOW) == ("no dialog is open on its screen")


def test_a_request_volee_knows_nothing_of_is_refused_rather_than_guessed() -> None:
    unknown = permission_request("ag_1", AT, None, None)
    refusal = keys_for(CLAUDE, unknown, ALLOW)
    assert isinstance(refusal, str)
    assert "cannot check the dialog" in refusal
    # Known tool, input not given: the tool's name must be on the dialog ("Bash command").
    assert keys_for(CLAUDE, permission_request("ag_1", AT, "Bash", None), ALLOW) == Keys(b"1")
    assert isinstance(keys_for(CLAUDE, permission_request("ag_1", AT, "Edit", None), ALLOW), str)


def test_codex_keys_are_its_own_shortcuts() -> None:
    request = bash("touch second.txt", description="I need to create second.txt")
    dialog = find_dialog(CODEX)

    assert dialog is not None
    assert dialog.question == "Would you like to run the following command?"
    assert [o.key for o in dialog.options] == [b"y", b"p", ESC]
    # The dialog starts at its question: the prompt above (which names the command) is not it.
    assert "MCP: exec_command" not in dialog.text
    assert keys_for(CODEX, request, ALLOW) == Keys(b"y")
    assert keys_for(CODEX, request, ALWAYS) == Keys(b"p")
    assert keys_for(CODEX, request, DENY) == Keys(ESC)
    assert isinstance(keys_for(CODEX, bash("touch first.txt"), ALLOW), str)


def test_a_question_is_answered_by_option_or_reply_on_its_own_screen() -> None:
    request = question_request("ag_1", AT, ASK)
    dialog = find_dialog(QUESTION)

    assert dialog is not None
    assert [o.label for o in dialog.options][:3] == ["Postgres", "SQLite", "Type something."]
    assert keys_for(QUESTION, request, Answer.pick(2)) == Keys(b"2")
    assert keys_for(QUESTION, request, Answer.reply("MySQL")) == Keys(
        b"3", text="MySQL", enter=True
    )
    assert keys_for(QUESTION, request, Answer.pick(5)) == (
        "there is no option 5: the options are 1 to 2"
    )
    assert keys_for(QUESTION, request, ALLOW) == (
        "answer the question with an option number or a reply"
    )
    other = question_request("ag_1", AT, {"questions": [{"question": "Which cache?"}]})
    assert isinstance(keys_for(QUESTION, other, Answer.pick(1)), str)
    # Options in another order than the request's: refused, never the wrong pick.
    swapped = question_request(
        "ag_1",
        AT,
        {"questions": [{**ASK["questions"][0], "options": [{"label": "SQLite"}]}]},
    )
    assert keys_for(QUESTION, swapped, Answer.pick(1)) == ("option 1 on screen is not 'SQLite'")


def test_a_permission_is_not_answered_with_an_option() -> None:
    refusal = keys_for(CLAUDE, bash("touch asked.txt"), Answer.pick(1))
    assert refusal == "it asks a permission (Bash: touch asked.txt): allow or deny it"


def test_a_dialog_with_text_or_a_prompt_under_it_is_closed() -> None:
    answered = [*CLAUDE, "", "Interrupted · What should Claude do instead?", "❯ "]
    assert find_dialog(answered) is None
    assert find_dialog([*CLAUDE[:-1], "❯"]) is None
    assert keys_for(answered, bash("touch asked.txt"), ALLOW) == "no dialog is open on its screen"

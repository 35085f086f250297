"""The words of a request, at their edges: what is written out, cut, read in full, refused."""

from __future__ import annotations

import re

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import MessageKind, Request, RequestKind
from volee_desktop.core.requests import (
    UNSAID_PERMISSION,
    dialog_request,
    from_detail,
    full_text,
    one_line,
    permission_request,
    question_request,
    request_after,
    request_id,
    send_refusal,
    summarize,
    unseen,
    visible,
)
from volee_desktop.core.states import AgentState

from .support import (
    A1,
    T0,
    accepted,
    agent_id,
    given,
    message_id,
    posted,
    registered,
    state,
    thread,
)

OPTIONS = [{"label": "Postgres"}, {"label": "SQLite"}]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\u202eb", "a<U+202E>b"),  # bidi override (Cf)
        ("a\x1b[2Jb", "a<U+001B>[2Jb"),  # a control (Cc)
        ("a\u2028b", "a<U+2028>b"),  # line separator (Zl)
        ("a\u2029b", "a<U+2029>b"),  # paragraph separator (Zp)
        ("a\tb\nc", "a\tb\nc"),  # tab and line breaks show what they are
        ("café", "café"),
    ],
)
def test_an_invisible_character_is_written_out_and_a_tab_or_line_break_is_not(
    text: str, shown: str
) -> None:
    assert visible(text) == shown


def test_a_line_is_cut_only_past_its_limit_and_says_when_more_follows() -> None:
    assert one_line("x" * 160) == "x" * 160
    assert one_line("x" * 161) == "x" * 159 + "…"
    # " …" takes two of the limit when more lines follow.
    assert one_line("x" * 158 + "\nmore") == "x" * 158 + " …"
    assert one_line("x" * 159 + "\nmore") == "x" * 159 + "…"
    # A cut never leaves a blank before the ellipsis.
    assert one_line("x" * 158 + " yyyy") == "x" * 158 + "…"


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Bash", {"cmd": "ls -la"}, "Bash: ls -la"),
        ("Bash", {"command": "   ", "description": "clean up"}, "Bash: clean up"),
        ("mcp__run", {"command": ["git", "status"]}, "mcp__run: git status"),
        ("mcp__run", {"cmd": "ls"}, 'mcp__run: {"cmd": "ls"}'),
        ("shell", {"command": ["git", "-c", "user.name=x"]}, "shell: git -c user.name=x"),
        ("shell", {"command": ["bash", "-lc", "make"]}, "shell: make"),
        ("shell", {"command": ["sh", "-c", "make"]}, "shell: make"),
        ("shell", {"command": ["/bin/zsh", "-lc", "make"]}, "shell: make"),
        ("shell", {"command": ["ls"]}, "shell: ls"),
        ("LS", {"path": "/home/dev/proj/src"}, "LS: src"),
        ("mcp__gh__comment", {"body": "café"}, 'mcp__gh__comment: {"body": "café"}'),
        ("mcp__bin", {"data": b"\x00"}, "mcp__bin: {'data': b'\\x00'}"),
        ("AskUserQuestion", {}, "AskUserQuestion"),
    ],
)  # fmt: skip
def test_the_summary_shows_the_input_a_person_decides_on(
    tool: str, tool_input: dict[str, object], expected: str
) -> None:
    assert summarize(tool, tool_input, cwd="/home/dev/proj") == expected


def test_a_relative_path_is_shown_as_the_agent_gave_it() -> None:
    # Only an absolute path inside the agent's folder is shortened: a relative one is read
    # from where the agent works already, and cutting its first folder would name another.
    assert summarize("Edit", {"file_path": "src/app.py"}, cwd="src") == "Edit: src/app.py"
    assert summarize("LS", {"path": "proj/src"}, cwd="proj") == "LS: proj/src"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ({"header": "Database", "options": OPTIONS}, "Database (Postgres / SQLite)"),
        ({"options": OPTIONS}, "a question (Postgres / SQLite)"),
        ({"question": "Go on?", "options": ["Yes", "No"]}, "Go on? (Yes / No)"),
    ],
)
def test_a_question_without_its_text_says_its_header_or_that_it_is_one(
    question: dict[str, object], expected: str
) -> None:
    request = question_request(A1, T0, {"questions": [question]})
    assert request.summary == expected
    assert request.question == str(question.get("question", ""))


def test_a_request_keeps_who_asked_when_and_with_which_tool() -> None:
    ask = {"questions": [{"question": "Which?", "options": OPTIONS}]}
    question = question_request(A1, T0, ask)
    assert (question.tool, question.input, question.at) == ("AskUserQuestion", ask, T0)
    assert question.id == request_id(A1, T0, RequestKind.QUESTION, question.summary)
    assert permission_request(A1, T0, "AskUserQuestion", ask) == question
    empty = question_request(A1, T0, {})
    assert (empty.question, empty.summary) == ("", "a question")

    dialog = dialog_request(A1, T0, "Trust this folder?", tool="Bash")
    assert (dialog.tool, dialog.at) == ("Bash", T0)
    assert dialog.id == request_id(A1, T0, RequestKind.DIALOG, dialog.summary)

    edit = permission_request(A1, T0, "Edit", {"file_path": "/p/src/a.py"}, "/p")
    assert edit.summary == "Edit: src/a.py"
    assert edit.id == request_id(A1, T0, RequestKind.PERMISSION, edit.summary)
    assert re.fullmatch(r"rq_[0-9a-f]{16}", edit.id)


def test_a_detail_alone_is_a_request_of_that_agent_at_that_moment() -> None:
    unsaid = from_detail(A1, T0, "permission for  ")
    assert (unsaid.kind, unsaid.summary, unsaid.at) == (
        RequestKind.PERMISSION,
        UNSAID_PERMISSION,
        T0,
    )
    assert unsaid.id == request_id(A1, T0, RequestKind.PERMISSION, UNSAID_PERMISSION)
    dialog = from_detail(A1, T0, "Choose the file to open now")
    assert (dialog.kind, dialog.summary, dialog.at) == (
        RequestKind.DIALOG,
        "Choose the file to open now",
        T0,
    )
    assert dialog.id == request_id(A1, T0, RequestKind.DIALOG, dialog.summary)


def test_the_full_text_is_all_of_what_is_asked() -> None:
    bash = permission_request(A1, T0, "Bash", {"command": "  make\nmake test  "})
    assert bash.summary.endswith(" …")
    assert full_text(bash) == "Bash: make\nmake test"
    assert full_text(permission_request(A1, T0, "Bash", {"cmd": "a\nb"})) == "Bash: a\nb"
    assert full_text(permission_request(A1, T0, None, {"command": "ls"})) == "a tool: ls"
    assert full_text(permission_request(A1, T0, "Bash", None)) == "Bash (its input was not given)"

    long = "Which database should the app use,\nknowing it runs on a laptop?"
    two = {"questions": [{"question": long, "options": OPTIONS}, {"question": "And?"}]}
    assert full_text(question_request(A1, T0, two)) == long
    assert full_text(question_request(A1, T0, two, tool=None)) == long
    untold = question_request(A1, T0, {"questions": [{"header": "Db", "options": OPTIONS}]})
    assert full_text(untold) == untold.summary == "Db (Postgres / SQLite)"
    assert full_text(dialog_request(A1, T0, "Trust\nthis folder?")) == "Trust …"


@pytest.mark.parametrize(
    ("command", "left_out"),
    [
        ("make test", None),
        ("make\nmake test", "2 lines — open to read it all"),
        ("a\nb\nc", "3 lines — open to read it all"),
        (
            "echo \u202etxt.exe",
            "invisible characters (control, zero-width or bidi) — open to read it all",
        ),
        ("x" * 154, None),  # "Bash: " and 154: exactly the limit
        ("x" * 155, "161 characters — open to read it all"),
        ("echo a" + " " * 7 + "b", None),
        ("echo a" + " " * 8 + "b", "long runs of blanks — open to read it all"),
    ],
)
def test_a_request_whose_line_hides_some_of_it_says_what(
    command: str, left_out: str | None
) -> None:
    assert unseen(permission_request(A1, T0, "Bash", {"command": command})) == left_out


def test_no_request_leaves_nothing_out() -> None:
    assert unseen(None) is None


def asking(request: Request) -> ev.StateChanged:
    return ev.StateChanged(
        at=T0 + 1, agent=A1, state=AgentState.NEEDS_INPUT, detail="x", request=request
    )


def test_a_message_is_refused_while_an_approval_or_question_waits() -> None:
    free = given(registered(A1), state(A1, AgentState.WORKING))
    assert send_refusal(free.agents[A1]) is None

    bash = permission_request(A1, T0 + 1, "Bash", {"command": "rm -rf build"})
    registry = given(registered(A1), asking(bash))
    refusal = send_refusal(registry.agents[A1])
    assert refusal is not None
    assert "waits for an approval (Bash: rm -rf build)" in refusal
    assert "volee allow" in refusal

    ask = question_request(A1, T0 + 1, {"question": "Go on?", "options": ["Yes", "No"]})
    refusal = send_refusal(given(registered(A1), asking(ask)).agents[A1])
    assert refusal is not None
    assert "asks a question (Go on? (Yes / No))" in refusal

    dialog = dialog_request(A1, T0 + 1, "Trust this folder?")
    assert send_refusal(given(registered(A1), asking(dialog)).agents[A1]) is None

    answer = ev.RequestAnswered(at=T0 + 2, agent=A1, request=bash.id, answer="allow")
    assert send_refusal(given(registered(A1), asking(bash), answer).agents[A1]) is None


def test_an_allowed_request_leaves_no_denial_behind() -> None:
    bash = permission_request(A1, T0 + 1, "Bash", {"command": "make"})
    allow = ev.RequestAnswered(at=T0 + 2, agent=A1, request=bash.id, answer="allow")
    working = state(A1, AgentState.WORKING, at=T0 + 3)
    registry = given(
        registered(A1), asking(bash), allow, working, state(A1, AgentState.DONE, at=T0 + 4)
    )
    assert registry.agents[A1].denied is None
    assert registry.agents[A1].outcome is None


@pytest.mark.parametrize(("tool", "denied"), [("Bash", "Bash"), (None, "a request")])
def test_a_denied_request_without_words_is_named_by_its_tool(tool: str | None, denied: str) -> None:
    silent = Request(id="rq_0000000000000001", kind=RequestKind.PERMISSION, tool=tool, at=T0)
    deny = ev.RequestAnswered(at=T0 + 2, agent=A1, request=silent.id, answer="deny")
    assert given(registered(A1), asking(silent), deny).agents[A1].denied == denied


def test_a_turn_started_in_the_agents_own_terminal_after_a_denial_is_a_new_one() -> None:
    bash = permission_request(A1, T0 + 1, "Bash", {"command": "rm -rf build"})
    deny = ev.RequestAnswered(at=T0 + 2, agent=A1, request=bash.id, answer="deny")
    registry = given(
        registered(A1),
        asking(bash),
        deny,
        state(A1, AgentState.IDLE, at=T0 + 3),
        state(A1, AgentState.WORKING, at=T0 + 4),  # no word through volee: the person typed
        state(A1, AgentState.DONE, at=T0 + 5),
    )
    assert registry.agents[A1].denied is None
    assert registry.agents[A1].outcome is None


def test_an_agent_resumed_after_it_stopped_on_a_denial_starts_a_new_turn() -> None:
    bash = permission_request(A1, T0 + 1, "Bash", {"command": "rm -rf build"})
    deny = ev.RequestAnswered(at=T0 + 2, agent=A1, request=bash.id, answer="deny")
    stopped = given(registered(A1), asking(bash), deny, state(A1, AgentState.STOPPED, at=T0 + 3))
    assert stopped.agents[A1].denied == bash.summary
    accepted(stopped, state(A1, AgentState.WORKING, at=T0 + 4))
    assert stopped.agents[A1].denied is None


def test_needing_input_with_no_request_yet_gets_what_its_detail_says() -> None:
    request = request_after(
        A1, AgentState.NEEDS_INPUT, None, AgentState.NEEDS_INPUT, None, "permission for Bash", T0
    )
    assert request is not None
    assert (request.kind, request.tool) == (RequestKind.PERMISSION, "Bash")


def test_another_agents_word_after_a_denial_is_not_the_denials_own() -> None:
    # Only volee's notice or the person's word starts the turn that ends on the denial.
    other = agent_id(2)
    bash = permission_request(A1, T0 + 1, "Bash", {"command": "rm -rf build"})
    deny = ev.RequestAnswered(at=T0 + 2, agent=A1, request=bash.id, answer="deny")
    word = posted(message_id(1), other, A1, at=T0 + 4, kind=MessageKind.NOTICE)
    registry = given(
        registered(other, name="other"),
        registered(A1, parent=other),
        thread(),
        asking(bash),
        deny,
        state(A1, AgentState.IDLE, at=T0 + 3),
        word,
        ev.MessageDelivered(at=T0 + 4, message=message_id(1), recipient=A1),
        state(A1, AgentState.WORKING, at=T0 + 5),
        state(A1, AgentState.DONE, at=T0 + 6),
    )
    assert registry.agents[A1].outcome is None

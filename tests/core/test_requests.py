"""The request in words: one-line summaries, the request kinds, and the fold's rule."""

from __future__ import annotations

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, VOLEE, MessageKind, RequestKind
from volee_desktop.core.requests import (
    NOT_GIVEN,
    UNSAID_PERMISSION,
    dialog_request,
    one_line,
    permission_request,
    question_request,
    request_view,
    summarize,
)
from volee_desktop.core.states import AgentState

from .support import A1, T0, accepted, given, message_id, posted, registered, state, thread, when

ASK = {
    "questions": [
        {
            "question": "Which database should the app use?",
            "header": "Database",
            "options": [
                {"label": "Postgres", "description": "a server"},
                {"label": "SQLite", "description": "a file"},
            ],
            "multiSelect": False,
        }
    ]
}


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Bash", {"command": "rm -rf build/ && pytest -q", "description": "x"},
         "Bash: rm -rf build/ && pytest -q"),
        ("Edit", {"file_path": "/home/dev/proj/src/app.py", "old_string": "a"}, "Edit: src/app.py"),
        ("Write", {"file_path": "/etc/hosts", "content": "x"}, "Write: /etc/hosts"),
        ("Read", {"file_path": "notes.md"}, "Read: notes.md"),
        ("NotebookEdit", {"notebook_path": "/home/dev/proj/a.ipynb"}, "NotebookEdit: a.ipynb"),
        ("WebFetch", {"url": "https://example.org", "prompt": "read"}, "WebFetch: https://example.org"),
        ("WebSearch", {"query": "pyte screen"}, "WebSearch: pyte screen"),
        ("Grep", {"pattern": "TODO", "path": "/home/dev/proj"}, "Grep: TODO"),
        ("Task", {"description": "review the diff", "prompt": "..."}, "Task: review the diff"),
        ("mcp__gh__create_issue", {"title": "t", "n": 2},
         'mcp__gh__create_issue: {"n": 2, "title": "t"}'),
        ("Bash", {"command": "make\nmake test"}, "Bash: make …"),
        ("exec_command", {"command": ["/bin/bash", "-lc", "touch second.txt"]},
         "exec_command: touch second.txt"),
        ("shell", {"command": ["git", "status"]}, "shell: git status"),
        ("Bash", {}, "Bash"),
        ("Bash", None, f"Bash ({NOT_GIVEN})"),
        (None, None, f"a tool ({NOT_GIVEN})"),
        ("AskUserQuestion", ASK, "Which database should the app use? (Postgres / SQLite)"),
    ],
)  # fmt: skip
def test_summaries_are_one_line_a_person_can_act_on(
    tool: str | None, tool_input: dict[str, object] | None, expected: str
) -> None:
    assert summarize(tool, tool_input, cwd="/home/dev/proj") == expected


def test_a_long_command_is_cut_on_one_line() -> None:
    text = summarize("Bash", {"command": "echo " + "x" * 400})
    assert len(text) == 160
    assert text.endswith("…")
    assert "\n" not in text
    assert one_line("  \n  ") == ""


def test_a_permission_request_keeps_the_tool_and_its_input() -> None:
    tool_input = {"command": "touch p2.txt", "description": "run command"}
    request = permission_request(A1, T0, "Bash", tool_input, "/p", reason="to create p2")

    assert request.kind is RequestKind.PERMISSION
    assert request.tool == "Bash"
    assert request.summary == "Bash: touch p2.txt"
    assert request.input == tool_input
    assert request.reason == "to create p2"
    assert request.at == T0
    assert request.id.startswith("rq_")
    # Another request (another moment) is another id; the same facts, the same id.
    assert permission_request(A1, T0 + 1, "Bash", tool_input).id != request.id
    assert permission_request(A1, T0, "Bash", tool_input).id == request.id


def test_a_permission_without_its_input_says_what_is_known() -> None:
    request = permission_request(A1, T0, "Bash", None)
    assert request.input is None
    assert request.summary == "Bash (its input was not given)"
    assert request_view(request) == {
        "id": request.id,
        "kind": "permission",
        "tool": "Bash",
        "summary": "Bash (its input was not given)",
        "input": None,
        "question": "",
        "options": [],
        "reason": "",
        "since": T0,
        "answered": None,
        "answered_by": None,
    }


def test_a_question_has_its_text_and_options() -> None:
    request = question_request(A1, T0, ASK)
    assert request.kind is RequestKind.QUESTION
    assert request.question == "Which database should the app use?"
    assert request.options == ("Postgres", "SQLite")
    assert request.summary == "Which database should the app use? (Postgres / SQLite)"
    # AskUserQuestion through a permission dialog is a question too.
    assert permission_request(A1, T0, "AskUserQuestion", ASK).kind is RequestKind.QUESTION
    two = {"questions": [*ASK["questions"], {"question": "And the cache?", "options": []}]}
    assert question_request(A1, T0, two).summary.endswith("(+1 more)")


def test_a_dialog_is_its_text() -> None:
    request = dialog_request(A1, T0, "Claude needs your permission\nmore")
    assert request.kind is RequestKind.DIALOG
    assert request.summary == "Claude needs your permission …"
    assert dialog_request(A1, T0, "").summary == "waiting for you"


# --- the fold's rule ----------------------------------------------------------------------


def asks(request_tool: str = "Bash", at: float = T0 + 1) -> ev.StateChanged:
    request = permission_request(A1, at, request_tool, {"command": "pytest -q"})
    return ev.StateChanged(
        at=at,
        agent=A1,
        state=AgentState.NEEDS_INPUT,
        detail=f"permission for {request_tool}",
        request=request,
    )


def test_the_registry_keeps_the_request_while_the_agent_needs_input() -> None:
    registry = given(registered(A1), state(A1, AgentState.WORKING))
    assert registry.agents[A1].request is None

    accepted(registry, asks())
    request = registry.agents[A1].request
    assert request is not None
    assert request.summary == "Bash: pytest -q"

    # A new detail of the same dialog keeps it; moving on (answered anywhere) ends it.
    accepted(registry, state(A1, AgentState.NEEDS_INPUT, at=T0 + 2, detail="permission"))
    assert registry.agents[A1].request == request
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 3))
    assert registry.agents[A1].request is None


def test_needs_input_without_a_request_gets_what_its_detail_says() -> None:
    registry = given(registered(A1))
    accepted(registry, state(A1, AgentState.NEEDS_INPUT, detail="permission for Bash"))
    request = registry.agents[A1].request
    assert request is not None
    assert (request.kind, request.tool, request.input) == (RequestKind.PERMISSION, "Bash", None)

    other = given(registered(A1), state(A1, AgentState.NEEDS_INPUT, detail="permission"))
    assert other.agents[A1].request is not None
    assert other.agents[A1].request.summary == UNSAID_PERMISSION
    dialog = given(registered(A1), state(A1, AgentState.NEEDS_INPUT, detail="Pick a file"))
    assert dialog.agents[A1].request is not None
    assert dialog.agents[A1].request.kind is RequestKind.DIALOG


def test_an_answer_goes_in_once_and_only_to_the_open_request() -> None:
    registry = given(registered(A1), asks())
    request = registry.agents[A1].request
    assert request is not None

    wrong = ev.RequestAnswered(at=T0 + 2, agent=A1, request="rq_0000000000000000", answer="allow")
    assert "no longer asks that" in (when(registry, wrong) or "")

    accepted(registry, ev.RequestAnswered(at=T0 + 2, agent=A1, request=request.id, answer="allow"))
    answered = registry.agents[A1].request
    assert answered is not None
    assert answered.answered == "allow"
    assert answered.answered_by == "human"
    assert answered.answered_at == T0 + 2

    again = ev.RequestAnswered(at=T0 + 3, agent=A1, request=request.id, answer="deny")
    assert "already answered (allow)" in (when(registry, again) or "")

    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 4))
    late = ev.RequestAnswered(at=T0 + 5, agent=A1, request=request.id, answer="allow")
    assert "no longer asks that (it is working)" in (when(registry, late) or "")


def test_a_turn_that_ended_on_a_denial_keeps_what_was_denied_until_the_next_turn() -> None:
    registry = given(registered(A1), asks())
    request = registry.agents[A1].request
    assert request is not None
    accepted(registry, ev.RequestAnswered(at=T0 + 2, agent=A1, request=request.id, answer="deny"))
    denied = request.summary
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 3))  # the denial's aftermath
    accepted(registry, state(A1, AgentState.DONE, at=T0 + 4))
    assert registry.agents[A1].denied == denied
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 5))  # a new prompt: a new turn
    assert registry.agents[A1].denied is None
    # A new request in the same turn is what the turn is about now.
    again = given(registered(A1), asks())
    first = again.agents[A1].request
    assert first is not None
    accepted(again, ev.RequestAnswered(at=T0 + 2, agent=A1, request=first.id, answer="deny"))
    accepted(again, state(A1, AgentState.NEEDS_INPUT, detail="permission for Edit", at=T0 + 3))
    assert again.agents[A1].denied is None


def test_the_turn_volees_notice_starts_after_a_denial_still_ends_on_that_denial() -> None:
    # What a real session does: the agent waits after the refusal (idle), volee tells it to
    # carry on without it, it works and is done. That turn ended on the denial (issue 26).
    registry = given(registered(A1), thread(), asks())
    request = registry.agents[A1].request
    assert request is not None
    accepted(registry, ev.RequestAnswered(at=T0 + 2, agent=A1, request=request.id, answer="deny"))
    accepted(registry, state(A1, AgentState.IDLE, at=T0 + 3, detail="you denied Bash"))
    notice = message_id(1)
    accepted(registry, posted(notice, VOLEE, A1, at=T0 + 4, kind=MessageKind.NOTICE))
    accepted(registry, ev.MessageDelivered(at=T0 + 4, message=notice, recipient=A1))
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 5))
    accepted(registry, state(A1, AgentState.DONE, at=T0 + 6))
    assert registry.agents[A1].denied == request.summary
    assert registry.agents[A1].outcome == "denied"
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 7))  # the person's next prompt
    assert registry.agents[A1].denied is None
    assert registry.agents[A1].outcome is None


def test_the_turn_a_reason_typed_with_deny_starts_still_ends_on_that_denial() -> None:
    # The trial of issue 26: deny `rm -rf build` with a reason, the agent answers it and
    # its Stop hook says done: the row turned a green "done". The reason is the denial's.
    registry = given(registered(A1), thread(), asks())
    request = registry.agents[A1].request
    assert request is not None
    accepted(registry, ev.RequestAnswered(at=T0 + 2, agent=A1, request=request.id, answer="deny"))
    accepted(registry, state(A1, AgentState.IDLE, at=T0 + 3))
    reason = message_id(1)
    accepted(registry, posted(reason, HUMAN, A1, at=T0 + 4, body="use make clean instead"))
    # The hook of the turn it starts can be recorded before the delivery is.
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 5))
    accepted(registry, ev.MessageDelivered(at=T0 + 5, message=reason, recipient=A1))
    accepted(registry, state(A1, AgentState.DONE, at=T0 + 6, detail="ran make clean"))
    assert registry.agents[A1].denied == request.summary
    assert registry.agents[A1].outcome == "denied"
    # The person's next message, after that turn, is a new turn of theirs.
    later = message_id(2)
    accepted(registry, posted(later, HUMAN, A1, at=T0 + 7, body="now run the tests"))
    accepted(registry, ev.MessageDelivered(at=T0 + 7, message=later, recipient=A1))
    accepted(registry, state(A1, AgentState.WORKING, at=T0 + 8))
    assert registry.agents[A1].denied is None
    assert registry.agents[A1].outcome is None


def test_a_notice_of_volees_after_the_denials_turn_starts_a_new_turn() -> None:
    registry = given(registered(A1), thread(), asks())
    request = registry.agents[A1].request
    assert request is not None
    accepted(registry, ev.RequestAnswered(at=T0 + 2, agent=A1, request=request.id, answer="deny"))
    accepted(registry, state(A1, AgentState.IDLE, at=T0 + 3))
    for n, at in ((1, T0 + 4), (2, T0 + 7)):
        notice = message_id(n)
        accepted(registry, posted(notice, VOLEE, A1, at=at, kind=MessageKind.NOTICE))
        accepted(registry, ev.MessageDelivered(at=at, message=notice, recipient=A1))
        accepted(registry, state(A1, AgentState.WORKING, at=at + 1))
        accepted(registry, state(A1, AgentState.DONE, at=at + 2))
        if n == 1:
            assert registry.agents[A1].outcome == "denied"
    assert registry.agents[A1].outcome is None
